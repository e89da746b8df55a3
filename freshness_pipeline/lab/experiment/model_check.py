"""The model against the real runs: which effects the simulator predicted, which it missed,
and whether measuring what it assumed closes the gap.

    freshness lab model-check RUNS_DIR [--out FILE]
        [--campaign wide|recovery|recovery-wide|long] [--capacities 1,2,3] [--seeds 1,2,3]
        [--at-once N [--step-overhead-s S] [--parallel-start-s S]]

The predictions (`simulate_wide`, written before the real campaign) assumed two things
about the machine: each step's work (`simulate_wide.work_factor`, 6 s for a market step and
multiples for the windows) and that the runs in flight share one run's worth of speed
(`capacity` 1, fitted on the six-table long mode). This reads a real campaign's runs
(RUNS_DIR: `seed*/<variant>/summary.json` and `runs.json`, as `freshness experiment`
keeps them), takes from them each job's measured step (the median over its successful
runs of the phases after its launch: plan, session, read, transform and the Hudi write)
and the sensor runs' queue and launch, then runs the model again with those steps at each
`capacity`, and sets three rows side by side: the prediction as written, the model with
measured steps, and the real runs, each as P / P0 per variant and PMB's paired ratios
(and after a hold, the seconds until every table was back within its target). `--campaign`
names the conditions the runs were made under (`simulate_wide.campaign_conditions`; `long`:
six tables in the long mode's 300 s window). The variants are the real runs' (those the
simulator models), and each model row says for how many of them its P / P0 is within 20 %
of the real runs' (the target of the model's trust: P / P0 rather than P, because the
model's raw tables are not the real ones).
`--at-once N` adds the model at the largest capacity with the sensor's wide chains N steps
at a time (FRESHNESS_STEPS_AT_ONCE), each step paying `--step-overhead-s` for its process
and session and each such run `--parallel-start-s` for its fork server: assumptions until
a campaign measures them, so that row is a prediction.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

from freshness_pipeline.config.paths import shown_path
from freshness_pipeline.execution.run_phases import PHASES, from_metadata
from freshness_pipeline.lab.experiment.run_files import (
    RUNS_FILE,
    SUMMARY_FILE,
    DagsterRunRecord,
    RunSummary,
    read_runs,
    read_summary,
)
from freshness_pipeline.lab.experiment.sim_conditions import Conditions
from freshness_pipeline.lab.experiment.simulate import simulate
from freshness_pipeline.lab.experiment.simulate_wide import (
    CAMPAIGNS,
    PAIRS,
    WIDE_VARIANTS,
    campaign_conditions,
)
from freshness_pipeline.lab.experiment.variants import MODELLED, SIMULATED_PEERS
from freshness_pipeline.runtime.code_version import code_version

# The phases of a step's own work: what runs after the run is launched and its session up.
STEP_PHASES = tuple(p for p in PHASES if p not in ("queue_wait", "launch"))
SENSOR = "freshness_sensor"
# PMB against each peer, and the machine's budget against PMB.
MODEL_PAIRS = (*PAIRS, ("pmb_budget", "pmb"))
# How far the model's P / P0 may be from the real one's for a variant to count as
# predicted (issue 56's trust in the model to rank the next idea).
WITHIN = 0.20


@dataclass(frozen=True)
class Row:
    """One way of arriving at the figures: P / P0 per variant and PMB's paired ratios."""

    label: str
    p_over_p0: Mapping[str, float]
    ratios: Mapping[tuple[str, str], float]
    # After a hold: seconds until every table was within its target (mean over seeds;
    # None: some seed never got there in the window). Empty: no hold.
    recovered_s: Mapping[str, float | None] = field(default_factory=dict)
    # How the runs went, per variant (means over seeds): runs launched, tables committed,
    # a step's median wall seconds, from its first read to its commit (None: none).
    runs: Mapping[str, tuple[float, float, float | None]] = field(default_factory=dict)


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return statistics.mean(v for v in values if v is not None)


def _summaries(runs_dir: Path) -> list[RunSummary]:
    found = [read_summary(p.parent) for p in sorted(runs_dir.glob(f"seed*/*/{SUMMARY_FILE}"))]
    if not found:
        raise FileNotFoundError(f"no finished runs (seed*/<variant>/{SUMMARY_FILE}) in {runs_dir}")
    return found


def _run_records(run_dir: Path) -> tuple[DagsterRunRecord, ...]:
    return read_runs(run_dir) if (run_dir / RUNS_FILE).exists() else ()


def measured_steps(runs_dir: Path) -> dict[str, float]:
    """Per job, the median over its successful runs in every variant of its step's own
    work (STEP_PHASES summed), in seconds."""
    steps: dict[str, list[float]] = {}
    for summary in _summaries(runs_dir):
        for record in _run_records(summary.dir):
            if not record.succeeded:
                continue
            for job, metadata in record.metadata_by_asset.items():
                phases = from_metadata(metadata)
                if any(p in phases for p in STEP_PHASES):
                    steps.setdefault(job, []).append(sum(phases.get(p, 0.0) for p in STEP_PHASES))
    return {job: statistics.median(values) for job, values in steps.items()}


def measured_launch_s(runs_dir: Path) -> float | None:
    """The median seconds from a successful sensor run's creation to its start (queue and
    launch)."""
    waits = [
        r.start - r.created
        for summary in _summaries(runs_dir)
        if summary.automation == SENSOR
        for r in _run_records(summary.dir)
        if r.succeeded and r.start is not None and r.created is not None
    ]
    return statistics.median(waits) if waits else None


def real_variants(runs_dir: Path) -> tuple[str, ...]:
    """The variants the campaign ran that the simulator models (the wide campaigns' five
    first, in their order)."""
    ran = {summary.variant for summary in _summaries(runs_dir)}
    order = dict.fromkeys((*WIDE_VARIANTS, *MODELLED, *SIMULATED_PEERS))
    return tuple(v for v in order if v in ran)


def real_row(runs_dir: Path, variants: Sequence[str] = WIDE_VARIANTS) -> Row:
    """The real runs: P / P0 per variant (mean over seeds) and the paired ratios (mean of
    the per-seed ratios, over the seeds both variants ran)."""
    by_seed: dict[int, dict[str, RunSummary]] = {}
    for summary in _summaries(runs_dir):
        by_seed.setdefault(summary.seed, {})[summary.variant] = summary
    levels = {
        v: statistics.mean(s[v].P / s[v].P0 for s in by_seed.values() if v in s)
        for v in variants
        if any(v in s for s in by_seed.values())
    }
    ratios = {}
    for a, b in MODEL_PAIRS:
        paired = [s[a].P / s[b].P for s in by_seed.values() if a in s and b in s]
        if paired:
            ratios[(a, b)] = statistics.mean(paired)
    recovered = {
        v: _mean_or_none([s[v].recovered_s for s in by_seed.values() if v in s])
        for v in levels
        if any(s[v].held for s in by_seed.values() if v in s)
    }
    runs = {}
    for v in levels:
        ran = [s[v] for s in by_seed.values() if v in s]
        seconds = [
            float(metadata["duration_s"])
            for summary in ran
            for r in _run_records(summary.dir)
            for metadata in r.metadata_by_asset.values()
            if "duration_s" in metadata
        ]
        runs[v] = (
            statistics.mean(s.runs for s in ran),
            statistics.mean(s.job_refreshes for s in ran),
            statistics.median(seconds) if seconds else None,
        )
    return Row(f"real runs ({len(by_seed)} seeds)", levels, ratios, recovered, runs)


def model_row(
    label: str, cond: Conditions, seeds: Sequence[int], variants: Sequence[str] = WIDE_VARIANTS
) -> Row:
    results = {v: [simulate(cond, v, s) for s in seeds] for v in variants}
    levels = {v: statistics.mean(r.p / r.p0 for r in rs) for v, rs in results.items()}
    ratios = {
        (a, b): statistics.mean(x.p / y.p for x, y in zip(results[a], results[b], strict=True))
        for a, b in MODEL_PAIRS
        if a in results and b in results
    }
    recovered = (
        {v: _mean_or_none([r.recovered_s for r in rs]) for v, rs in results.items()}
        if cond.hold is not None
        else {}
    )
    runs = {
        v: (
            statistics.mean(r.runs for r in rs),
            statistics.mean(r.refreshes for r in rs),
            _median_or_none([r.run_seconds_median for r in rs]),
        )
        for v, rs in results.items()
    }
    return Row(label, levels, ratios, recovered, runs)


def _median_or_none(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def runs_markdown(rows: Sequence[Row], variants: Sequence[str] = WIDE_VARIANTS) -> str:
    """Per row and variant: runs launched, tables committed and a step's median seconds,
    where the model's P and the real one part (a model whose steps are shorter or whose
    runs are more numerous than the real ones says so here first)."""
    head = [f"{v}: runs, refreshes, step (s)" for v in variants]
    lines = ["| figures from | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for row in rows:
        cells = []
        for v in variants:
            if v not in row.runs:
                cells.append("-")
                continue
            runs, refreshes, seconds = row.runs[v]
            cells.append(f"{runs:.0f}, {refreshes:.0f}, {_seconds_1(seconds)}")
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _seconds_1(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def with_measured_steps(
    cond: Conditions, steps: Mapping[str, float], launch_s: float | None, capacity: float
) -> Conditions:
    """`cond` with each job's step as measured (a job never measured keeps the model's
    step), the measured queue and launch, no separate session (the shared service keeps
    it warm: it is inside the measured steps) and the machine's speed `capacity` runs'
    worth. The steps' byte and file terms go: the measured medians hold them."""
    base = dict(cond.work_factors)
    factors = tuple(
        (job, steps[job] if job in steps else cond.fixed_s * base.get(job, 1.0))
        for job in cond.job_specs
    )
    return replace(
        cond,
        fixed_s=1.0,
        work_factors=factors,
        per_mib_s=0.0,
        per_file_s=0.0,
        session_s=0.0,
        launch_s=launch_s if launch_s is not None else cond.launch_s,
        capacity=capacity,
    )


def markdown(rows: Sequence[Row], variants: Sequence[str] = WIDE_VARIANTS) -> str:
    pairs = [p for p in MODEL_PAIRS if any(p in row.ratios for row in rows)]
    head = [f"P/P0 {v}" for v in variants] + [f"{a} / {b}" for a, b in pairs]
    held = any(row.recovered_s for row in rows)
    if held:
        head += [f"recovered {v} (s)" for v in variants]
    lines = [
        "| figures from | " + " | ".join(head) + " |",
        "|---|" + "---|" * len(head),
    ]
    for row in rows:
        cells = [f"{row.p_over_p0[v]:.2f}" if v in row.p_over_p0 else "-" for v in variants]
        cells += [f"{row.ratios[p]:.3f}" if p in row.ratios else "-" for p in pairs]
        if held:
            cells += [_seconds(row.recovered_s.get(v, None)) for v in variants]
        lines.append(f"| {row.label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _recovery_ratio(row: Row) -> float | None:
    """PMB's time back within the target over eager's; None: either never got there."""
    pmb, eager = row.recovered_s.get("pmb"), row.recovered_s.get("dagster_eager")
    return pmb / eager if pmb is not None and eager else None


def effects(predicted: Row, real: Row, campaign: str = "wide") -> list[str]:
    """Each effect the predictions state, and whether the real runs show it: the campaign's
    own targets (six tables in the long mode: 0.80 of eager and of the interval; the wide
    lakehouse: 0.60 of eager and 0.80 of Random; after a hold: the recovery's)."""

    def said(row: Row, pair: tuple[str, str], at_most: float) -> bool | None:
        value = row.ratios.get(pair)
        return None if value is None else value <= at_most

    def tied(row: Row, pair: tuple[str, str]) -> bool | None:
        value = row.ratios.get(pair)
        return None if value is None else abs(value - 1) <= 0.05

    def both(what: str, judge, *args) -> tuple[str, bool | None, bool | None]:
        return what, judge(predicted, *args), judge(real, *args)

    checks = [
        both("PMB and Max-Benefit leave the same staleness (within 5 %)", tied,
             ("pmb", "max_benefit")),
        both("PMB and Random within 5 % of each other", tied, ("pmb", "random")),
        both("PMB within 5 % of Dagster's eager automation", tied, ("pmb", "dagster_eager")),
        both("PMB at most 0.60 of eager (the target)", said, ("pmb", "dagster_eager"), 0.60),
        both("PMB at most 0.80 of Random (the target)", said, ("pmb", "random"), 0.80),
    ]  # fmt: skip
    if campaign == "long":
        checks = [
            checks[2],
            both("PMB at most 0.80 of eager (the target)", said, ("pmb", "dagster_eager"), 0.80),
            both("PMB at most 0.80 of the interval (the target)", said, ("pmb", "interval"),
                 0.80),
            both("The machine's budget within 5 % of PMB", tied, ("pmb_budget", "pmb")),
        ]  # fmt: skip
    elif predicted.recovered_s and real.recovered_s:
        model_time, real_time = _recovery_ratio(predicted), _recovery_ratio(real)
        checks = [
            *checks[:3],
            both("PMB at most 0.90 of Max-Benefit (the target)", said, ("pmb", "max_benefit"),
                 0.90),
            ("PMB back within the target in at most 0.70 of eager's time (the target)",
             None if model_time is None else model_time <= 0.70,
             None if real_time is None else real_time <= 0.70),
        ]  # fmt: skip
    lines = []
    for what, model, measured in checks:
        if model is None or measured is None:
            continue
        verdict = "predicted" if model == measured else "missed"
        lines.append(
            f"- {what}: model {'yes' if model else 'no'}, real {'yes' if measured else 'no'}"
            f" ({verdict})"
        )
    level = [v for v in real.p_over_p0 if v in predicted.p_over_p0]
    if level:
        off = statistics.mean(predicted.p_over_p0[v] / real.p_over_p0[v] for v in level)
        lines.append(
            f"- The level of staleness: the model's P / P0 is {off:.2f} times the real one "
            f"(mean over the variants) ({'predicted' if abs(off - 1) <= 0.25 else 'missed'})"
        )
    return lines


def within(rows: Sequence[Row], real: Row) -> list[str]:
    """Per model row, for how many variants its P / P0 is within WITHIN of the real runs',
    and whether it ranks them (least staleness first) as the real runs do."""
    lines = []
    for row in rows:
        shared = [v for v in real.p_over_p0 if v in row.p_over_p0]
        if not shared:
            continue
        off = {v: row.p_over_p0[v] / real.p_over_p0[v] for v in shared}
        near = sum(1 for value in off.values() if abs(value - 1) <= WITHIN)
        each = ", ".join(f"{v} {value:.2f}" for v, value in off.items())
        verdict = "met" if near == len(shared) else "missed"
        ranked = sorted(shared, key=row.p_over_p0.__getitem__)
        order = (
            "the same"
            if ranked == sorted(shared, key=real.p_over_p0.__getitem__)
            else ("not the real one's")
        )
        lines.append(
            f"- {row.label}: P / P0 within {WITHIN:.0%} of the real runs' for {near} of "
            f"{len(shared)} variants (model over real: {each}) ({verdict}); its order, least "
            f"staleness first ({', '.join(ranked)}), {order}"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab model-check", description=__doc__.split("\n")[0]
    )
    parser.add_argument("runs_dir", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--capacities", default="1,2,3")
    parser.add_argument("--lakehouse-seed", type=int, default=1)
    parser.add_argument(
        "--campaign", choices=CAMPAIGNS, default="wide", help="the conditions the runs had"
    )
    parser.add_argument("--at-once", type=int, default=1, help="FRESHNESS_STEPS_AT_ONCE to model")
    parser.add_argument("--step-overhead-s", type=float, default=2.0)
    parser.add_argument("--parallel-start-s", type=float, default=4.0)
    parser.add_argument(
        "--interval-s",
        type=float,
        help="the interval peer's period, as run (default: 60 s on the wide lakehouse, "
        "the tuned default on six tables)",
    )
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    capacities = [float(c) for c in args.capacities.split(",")]
    variants = real_variants(args.runs_dir)
    real = real_row(args.runs_dir, variants)
    steps = measured_steps(args.runs_dir)
    launch_s = measured_launch_s(args.runs_dir)
    cond = campaign_conditions(args.campaign, args.lakehouse_seed)
    interval_s = args.interval_s or (60.0 if "wide" in args.campaign else None)
    if interval_s is not None:
        cond = replace(cond, interval_s=interval_s)
    predicted = model_row("the prediction (model's steps, capacity 1)", cond, seeds, variants)
    rows = [predicted]
    for capacity in capacities:
        measured = with_measured_steps(cond, steps, launch_s, capacity)
        rows.append(model_row(f"measured steps, capacity {capacity:g}", measured, seeds, variants))
    if "dagster_eager" in variants and cond.eager_release:
        # Where eager's steps ran no slower than the others' (2 cores, the six tables), its
        # runs did not pile up as the model's do when an asset leaves "in progress" at its
        # own materialization: the other bound of Dagster's rule, until its run ends.
        low = min(capacities)
        held = replace(with_measured_steps(cond, steps, launch_s, low), eager_release=False)
        label = f"measured steps, capacity {low:g}, eager's assets in progress until its run ends"
        rows.append(model_row(label, held, seeds, variants))
    if args.at_once > 1:
        top = max(capacities)
        lever = replace(
            with_measured_steps(cond, steps, launch_s, top),
            steps_at_once=args.at_once,
            step_overhead_s=args.step_overhead_s,
            parallel_start_s=args.parallel_start_s,
        )
        label = (
            f"measured steps, capacity {top:g}, wide chains {args.at_once} steps at a time "
            f"({args.step_overhead_s:g} s a step, {args.parallel_start_s:g} s a run: assumed)"
        )
        rows.append(model_row(label, lever, seeds, variants))
    rows.append(real)
    launch = f"{launch_s:.1f} s" if launch_s is not None else "the model's"
    command = "freshness lab model-check " + " ".join(sys.argv[1:] if argv is None else argv)
    text = "\n".join(
        [
            "# The model against the real runs",
            "",
            f"Produced by `{command}` on {date.today().isoformat()}, commit "
            f"`{code_version()}`: the simulator (seeds {', '.join(map(str, seeds))}) beside "
            f"the real runs in `{shown_path(args.runs_dir)}`, with the steps of "
            f"{len(steps)} jobs and the sensor runs' queue and launch ({launch}) as "
            "measured there. P / P0 is the mean over seeds; a ratio is the mean of the "
            "per-seed ratios.",
            "",
            markdown(rows, variants),
            "",
            "How the runs went (means over seeds; a step's median wall seconds, beside the "
            "steps working with it):",
            "",
            runs_markdown(rows, variants),
            "",
            *effects(predicted, real, args.campaign),
            *within(rows[:-1], real),
            "",
        ]
    )
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0
