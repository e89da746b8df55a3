"""The simulator's predictions where the scheduler has a choice: a wide lakehouse, and a
recovery after an outage (written before the real runs, which are compared with them).

    freshness lab simulate-wide [--seeds 1,2,3] [--out FILE]

- wide: the 49 jobs of `experiment/wide.py` (seed 1) on the calibrated machine (K = 3, one
  run's worth of speed), steps of different cost (`work_factor`);
- recovery: the same lakehouse, and the six-table one, with every launch held for four
  minutes while ingestion goes on, then let go on the backlog; bursty commits over skewed
  symbol letters, so a job's pending bytes per arrival are uneven and it has many
  candidate cutoffs.

Per condition and variant: P / P0 (mean over seeds), PMB's paired ratios against each peer
(mean and sd over seeds), the share of PMB's launches that took a file subset, and after
a hold the seconds until every table was back within the staleness target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.scheduler_settings import DEFAULT_MAX_WAIT_S
from freshness_pipeline.lab.experiment.sim_conditions import (
    Conditions,
    SkewedFilesPerCommit,
    calibrated,
)
from freshness_pipeline.lab.experiment.simulate import SimResult, simulate
from freshness_pipeline.lab.experiment.wide import describe, wide_jobs, write_wide
from freshness_pipeline.runtime.code_version import code_version

WIDE_VARIANTS = ("pmb", "max_benefit", "random", "dagster_eager", "interval")
PAIRS = (("pmb", "dagster_eager"), ("pmb", "random"), ("pmb", "max_benefit"), ("pmb", "interval"))
# As the real campaigns run them (Makefile: experiment-wide, experiment-recovery): 10-minute
# windows; the outage from 60 s to 300 s into the window; every table back within 120 s
# of staleness (below the hold, or a table never refreshed would count as recovered).
WINDOW_S = 600
# The long mode's window on six tables (`freshness experiment --mode long`).
LONG_WINDOW_S = 300
HOLD_S = (60.0, 300.0)
RECOVERY_TARGET_S = {"six": 120.0, "wide": 120.0}
# The sensor's defaults, which the real runs keep: the aging bound and first runs first.
SENSOR_DEFAULTS: dict[str, Any] = {
    "max_wait_s": float(DEFAULT_MAX_WAIT_S),
    "first_runs_first": True,
}


def work_factor(spec: JobSpec) -> float:
    """A step's work against the calibrated step (the six market jobs': 1). A model's
    assumption until the real runs measure each step: a trailing window reads its window
    again for each touched second (1 + window / 60), per symbol three times what per
    industry does (300 symbols against about 70 industries); a per-letter slice half a
    step (a filter and a replace of one letter's rows)."""
    if spec.name in JOBS:
        return 1.0
    if spec.kind == "window":
        per_group = 3.0 if "symbol" in spec.group_columns else 1.0
        return per_group * (1 + spec.window_s / 60)
    if spec.group_name == "wide_letters":
        return 0.5
    return 1.0


def wide_conditions(seed: int = 1, folder: Path | None = None) -> Conditions:
    """The calibrated machine running the wide lakehouse of `seed` for WINDOW_S, with the
    sensor's defaults."""
    with tempfile.TemporaryDirectory() as tmp:
        target = folder or Path(tmp)
        write_wide(target, seed)
        jobs = wide_jobs(target)
    factors = tuple((name, work_factor(spec)) for name, spec in jobs.items())
    return replace(
        calibrated(), jobs=jobs, work_factors=factors, duration_s=WINDOW_S, **SENSOR_DEFAULTS
    )


def six_conditions() -> Conditions:
    """The calibrated machine running the six market jobs for WINDOW_S, with the sensor's
    defaults."""
    return replace(calibrated(), duration_s=WINDOW_S, **SENSOR_DEFAULTS)


def recovery(cond: Conditions, target_s: float) -> Conditions:
    """`cond` with every launch held for HOLD_S and bursty commits (each minute's first
    commit 5x) over skewed letters; recovered once every table is within `target_s`."""
    return replace(
        cond,
        hold=HOLD_S,
        duration_s=WINDOW_S,
        burst_every=6,
        burst_factor=5.0,
        raw_layout=SkewedFilesPerCommit(1.2),
        recovery_target_s=target_s,
    )


# The campaigns as `make` runs them (experiment-wide, experiment-recovery(-wide),
# experiment-long), by name.
CAMPAIGNS = ("wide", "recovery", "recovery-wide", "long")


def campaign_conditions(name: str, lakehouse_seed: int = 1) -> Conditions:
    """The model's conditions for the real campaign `name` (one of CAMPAIGNS)."""
    if name not in CAMPAIGNS:
        raise ValueError(f"unknown campaign {name!r}: one of {', '.join(CAMPAIGNS)}")
    if name == "long":
        return replace(six_conditions(), duration_s=LONG_WINDOW_S)
    if name == "recovery":
        return recovery(six_conditions(), RECOVERY_TARGET_S["six"])
    wide = wide_conditions(lakehouse_seed)
    return wide if name == "wide" else recovery(wide, RECOVERY_TARGET_S["wide"])


# A run near the floor: launch and session 1 s each, a step 2 s.
FAST: dict[str, Any] = {"launch_s": 1.0, "session_s": 1.0, "fixed_s": 2.0}


def conditions(seed: int = 1) -> list[tuple[str, Conditions]]:
    """Six tables and the wide lakehouse, steady and through an outage, on the machine as
    calibrated (a step 6 s, launch 3 s, session 2 s) and with runs near the floor; then the
    wide lakehouse near the floor with one table a run instead of chains."""
    wide = wide_conditions(seed)
    six = six_conditions()
    n = len(wide.job_specs)
    six_target, wide_target = RECOVERY_TARGET_S["six"], RECOVERY_TARGET_S["wide"]
    found = []
    machines: tuple[tuple[str, dict[str, Any]], ...] = (
        ("calibrated", {}),
        ("runs near the floor", FAST),
    )
    for machine, changes in machines:
        six_m, wide_m = replace(six, **changes), replace(wide, **changes)
        found += [
            (f"six tables, 10 min; {machine}", six_m),
            (f"wide: {n} tables (seed {seed}), 10 min; {machine}", wide_m),
            (f"six tables, recovery after a 4 min hold; {machine}", recovery(six_m, six_target)),
            (
                f"wide: {n} tables, recovery after a 4 min hold; {machine}",
                recovery(wide_m, wide_target),
            ),
        ]
    # Chains (METHOD 8) against one table a run for every planner variant (the peers'
    # runs are their own): on a wide lakehouse a chain takes most tables at once.
    single = replace(wide, chains=False, **FAST)
    found += [
        (f"wide: {n} tables, 10 min; runs near the floor; one table a run", single),
        (
            f"wide: {n} tables, recovery after a 4 min hold; runs near the floor; one table a run",
            recovery(single, wide_target),
        ),
    ]
    return found


@dataclass(frozen=True)
class Outcome:
    label: str
    results: Mapping[str, Sequence[SimResult]]  # variant -> one per seed

    def p_over_p0(self, variant: str) -> float:
        return statistics.mean(r.p / r.p0 for r in self.results[variant])

    def ratio(self, variant: str, to: str) -> tuple[float, float]:
        ratios = [a.p / b.p for a, b in zip(self.results[variant], self.results[to], strict=True)]
        return statistics.mean(ratios), statistics.stdev(ratios) if len(ratios) > 1 else 0.0

    def subset_share(self, variant: str) -> float:
        runs = sum(r.runs for r in self.results[variant])
        return sum(r.subset_runs for r in self.results[variant]) / runs if runs else 0.0

    def recovered_s(self, variant: str) -> float | None:
        values = [r.recovered_s for r in self.results[variant]]
        if any(v is None for v in values):
            return None
        return statistics.mean(v for v in values if v is not None)


def run(
    labelled: Sequence[tuple[str, Conditions]],
    seeds: Sequence[int],
    variants: Sequence[str] = WIDE_VARIANTS,
) -> list[Outcome]:
    return [
        Outcome(label, {v: [simulate(cond, v, s) for s in seeds] for v in variants})
        for label, cond in labelled
    ]


def _recovery_cell(outcome: Outcome, variant: str) -> str:
    value = outcome.recovered_s(variant)
    return "-" if value is None else f"{value:.0f}"


def markdown(outcomes: Sequence[Outcome], variants: Sequence[str] = WIDE_VARIANTS) -> str:
    head = ["condition", *(f"P/P0 {v}" for v in variants)]
    head += [f"{a} / {b}" for a, b in PAIRS if a in variants and b in variants]
    head += ["pmb launches with a subset", *(f"recovered {v} (s)" for v in variants)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in outcomes:
        cells = [o.label, *(f"{o.p_over_p0(v):.2f}" for v in variants)]
        for a, b in PAIRS:
            if a in variants and b in variants:
                mean, sd = o.ratio(a, b)
                cells.append(f"{mean:.3f} ({sd:.3f})")
        cells.append(f"{o.subset_share('pmb'):.0%}" if "pmb" in variants else "-")
        cells += [_recovery_cell(o, v) for v in variants]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _verdicts(o: Outcome) -> list[str]:
    """The issue's targets for this condition, as the model predicts them."""

    def met(value: float | None, limit: float) -> str:
        if value is None:
            return "no value"
        return f"{value:.2f}: {'met' if value <= limit else 'missed'}"

    if "recovery" not in o.label:
        return [
            f"P(pmb)/P(dagster_eager) <= 0.60: {met(o.ratio('pmb', 'dagster_eager')[0], 0.60)}",
            f"P(pmb)/P(random) <= 0.80: {met(o.ratio('pmb', 'random')[0], 0.80)}",
        ]
    pmb, eager = o.recovered_s("pmb"), o.recovered_s("dagster_eager")
    time_ratio = pmb / eager if pmb is not None and eager else None
    return [
        f"P(pmb)/P(max_benefit) <= 0.90: {met(o.ratio('pmb', 'max_benefit')[0], 0.90)}",
        f"PMB launches with a subset: {o.subset_share('pmb'):.0%}",
        "time until every table is within its target, pmb / eager <= 0.70: "
        + (met(time_ratio, 0.70) if time_ratio is not None else "not reached in the window"),
    ]


def report(outcomes: Sequence[Outcome], seeds: Sequence[int], command: str, lake: str) -> str:
    lines = [
        "# Predictions: the wide lakehouse and the recovery (simulator)",
        "",
        f"Produced by `{command}` on {date.today().isoformat()}, commit "
        f"`{code_version()}`, seeds {', '.join(map(str, seeds))} (each fresh). A model's "
        "figures, written before the real runs (`experiment/simulate.py`: the real "
        "planner and chains over a modelled machine; `experiment/simulate_wide.py`: the "
        "conditions and each step's cost factor, an assumption until measured). The "
        "tables' layouts are the six jobs' `published` one and the wide jobs' declared "
        "one (by event hour).",
        "",
        markdown(outcomes),
        "",
        "## The issue's targets, as predicted",
        "",
    ]
    for o in outcomes:
        lines.append(f"- {o.label}: " + "; ".join(_verdicts(o)))
    lines += ["", "## The wide lakehouse (seed of the lakehouse: 1)", "", lake, ""]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab simulate-wide", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--lakehouse-seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    labelled = conditions(args.lakehouse_seed)
    outcomes = run(labelled, seeds)
    command = "freshness lab simulate-wide " + " ".join(argv if argv is not None else sys.argv[1:])
    wide = labelled[1][1].job_specs
    lake = describe(wide, frozenset(RAW_TABLES))
    lake += "\n\nEach step's work factor (against a market job's step):\n\n"
    lake += ", ".join(f"{name} {work_factor(spec):g}" for name, spec in wide.items())
    text = report(outcomes, seeds, command.strip(), lake)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0
