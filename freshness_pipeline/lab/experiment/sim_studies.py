"""What the simulator is asked (`freshness lab simulate`): each variant under a sweep of
conditions, chains against one table per run, the peers, the machine's capacity; as Markdown
tables."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from freshness_pipeline.lab.experiment.sim_conditions import (
    Conditions,
    calibrated,
)
from freshness_pipeline.lab.experiment.simulate import SimResult, simulate
from freshness_pipeline.lab.experiment.simulate_wide import six_conditions, wide_conditions
from freshness_pipeline.lab.experiment.variants import MODELLED


@dataclass(frozen=True)
class Row:
    """One condition's outcome, averaged over seeds."""

    label: str
    p: dict[str, float]  # variant -> mean P
    p0: float
    subset_share: dict[str, float]  # variant -> share of runs that took a subset

    def ratio(self, variant: str, to: str) -> float:
        return self.p[variant] / self.p[to]


def compare(
    label: str, cond: Conditions, variants: Sequence[str], seeds: Sequence[int] = (1, 2, 3)
) -> Row:
    results = [simulate(cond, v, s) for v in variants for s in seeds]
    p = {v: statistics.mean(r.p for r in results if r.variant == v) for v in variants}
    p0 = statistics.mean(r.p0 for r in results)
    share = {}
    for v in variants:
        launched = sum(r.runs for r in results if r.variant == v)
        share[v] = sum(r.subset_runs for r in results if r.variant == v) / max(1, launched)
    return Row(label, p, p0, share)


def sweep(
    base: Conditions | None = None, base_label: str = "calibrated: the long run on 2 cores"
) -> list[tuple[str, Conditions]]:
    """The conditions the results page names, each varied alone from the calibrated base,
    then two combinations: where subsets start to pay, and what a 2x-of-P0 system needs."""
    base = base or calibrated()
    warm: dict[str, Any] = {"fixed_s": 3.0, "launch_s": 2.0}
    return [
        (base_label, base),
        ("fixed cost per run 3 s, launch 2 s (a warm cluster)", replace(base, **warm)),
        ("fixed cost per run 1 s, launch 1 s", replace(base, fixed_s=1.0, launch_s=1.0)),
        ("4x the machine (capacity 4)", replace(base, capacity=4.0)),
        ("tick 1 s (Dagster's sensor daemon allows 5 s)", replace(base, tick_s=1.0)),
        ("bursts: every 3rd commit 10x", replace(base, burst_every=3, burst_factor=10.0)),
        ("rate 10x (3,000 events/s)", replace(base, rate_eps=3000.0)),
        ("K = 1", replace(base, k=1)),
        ("K = 6", replace(base, k=6)),
        (
            "bursts where a run's bytes matter: every 5th commit 30x, 10 s/MiB, aggregates "
            "5 % of input, fixed 1 s, launch 1 s, capacity 3, 600 s",
            replace(
                base,
                duration_s=600,
                burst_every=5,
                burst_factor=30.0,
                per_mib_s=10.0,
                output_ratio=0.05,
                fixed_s=1.0,
                launch_s=1.0,
                capacity=3.0,
            ),
        ),
        (
            "all fast: fixed 1 s, launch 0.5 s, capacity 4 (tick 5 s)",
            replace(base, fixed_s=1.0, launch_s=0.5, capacity=4.0),
        ),
        (
            "all fast, and a 1 s tick",
            replace(base, fixed_s=1.0, launch_s=0.5, capacity=4.0, tick_s=1.0),
        ),
    ]


def sweep_markdown(rows: Sequence[Row], variants: Sequence[str]) -> str:
    head = "| condition | " + " | ".join(f"P({v})" for v in variants)
    head += " | pmb / random | pmb / max_benefit | best / P0 | pmb runs with a subset |"
    lines = [head, "|" + "---|" * (len(variants) + 5)]
    for row in rows:
        best = min(row.p.values())
        cells = [row.label, *(f"{row.p[v]:,.0f}" for v in variants)]
        cells += [
            f"{row.ratio('pmb', 'random'):.3f}",
            f"{row.ratio('pmb', 'max_benefit'):.3f}",
            f"{best / row.p0:.1f}",
            f"{row.subset_share['pmb']:.0%}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


PEER_VARIANTS = (
    "pmb",
    "pmb_serial",
    "max_benefit",
    "random",
    "pmb_single",
    "dagster_eager",
    "interval",
)


def chain_conditions(base: Conditions | None = None) -> list[tuple[str, Conditions]]:
    """What the chains issue predicts before the real runs: the calibrated machine, then
    a run's fixed cost at its 2 s target (launch and session, for every variant alike),
    then also a step's job at half its cost (the run-cost issue's direction)."""
    base = base or calibrated()
    held = replace(base, eager_release=False)
    target: dict[str, Any] = {"launch_s": 1.0, "session_s": 1.0}
    staggered = replace(base, raw_stagger_s=2.0)
    return [
        ("calibrated: the long mode on 2 cores", base),
        ("the same, eager's tables held until its run ends", held),
        ("the raw tables committing 2 s apart (seen in the first real run)", staggered),
        ("the same, eager's tables held until its run ends", replace(held, raw_stagger_s=2.0)),
        ("launch + session 2 s a run (the target), all variants", replace(base, **target)),
        ("the same, eager's tables held until its run ends", replace(held, **target)),
        ("and a step's job 3 s instead of 6 s", replace(base, fixed_s=3.0, **target)),
        ("the same, eager's tables held until its run ends", replace(held, fixed_s=3.0, **target)),
    ]


def _level_cells(results: Mapping[str, Sequence[SimResult]], variants: Sequence[str]) -> list[str]:
    """Each variant's P / P0, the mean over seeds."""
    return [f"{statistics.mean(r.p / r.p0 for r in results[v]):.2f}" for v in variants]


def _paired_cells(
    results: Mapping[str, Sequence[SimResult]], pairs: Sequence[tuple[str, str]]
) -> list[str]:
    """Each pair's P ratio, per seed and then its mean and sd over the seeds."""
    cells = []
    for variant, to in pairs:
        ratios = [a.p / b.p for a, b in zip(results[variant], results[to], strict=True)]
        sd = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
        cells.append(f"{statistics.mean(ratios):.3f} ({sd:.3f})")
    return cells


def peer_markdown(
    conditions: Sequence[tuple[str, Conditions]], seeds: Sequence[int] = (1, 2, 3, 4, 5)
) -> str:
    """Per condition: P / P0 of each variant (mean over seeds) and PMB's paired ratios
    against the peers and against one table per run (mean and sd over seeds)."""
    head = "| condition | " + " | ".join(f"P/P0 {v}" for v in PEER_VARIANTS)
    pairs = [(v, to) for v in ("pmb", "pmb_serial") for to in ("dagster_eager", "interval")]
    pairs.append(("pmb", "pmb_single"))
    head += " | " + " | ".join(f"{v} / {to}" for v, to in pairs) + " |"
    lines = [head, "|" + "---|" * (len(PEER_VARIANTS) + len(pairs) + 1)]
    for label, cond in conditions:
        results = {v: [simulate(cond, v, s) for s in seeds] for v in PEER_VARIANTS}
        cells = [label]
        cells += _level_cells(results, PEER_VARIANTS)
        cells += _paired_cells(results, pairs)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


CAPACITIES = (1.0, 1.4, 2.0)


def capacity_markdown(seeds: Sequence[int] = (1, 2, 3, 4, 5)) -> str:
    """How many runs PMB should keep in flight, by the machine's capacity (runs' worth of
    speed at once), with the raw tables committing 2 s apart: P / P0 of chained PMB with
    1, 2 and K = 3 runs in flight against the peers (mean over seeds)."""
    base = replace(calibrated(), raw_stagger_s=2.0)
    columns = [("pmb, K = 3", "pmb", None), ("pmb, 2 at once", "pmb", 2)]
    columns += [("pmb, 1 at once", "pmb", 1), ("dagster_eager", "dagster_eager", None)]
    columns.append(("interval", "interval", None))
    lines = ["| capacity | " + " | ".join(f"P/P0 {c[0]}" for c in columns) + " |"]
    lines.append("|" + "---|" * (len(columns) + 1))
    for capacity in CAPACITIES:
        cells = [f"{capacity:g}"]
        for _, variant, at_once in columns:
            cond = replace(base, capacity=capacity, runs_at_once=at_once)
            results = [simulate(cond, variant, seed) for seed in seeds]
            cells.append(f"{statistics.mean(r.p / r.p0 for r in results):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


BUDGET_VARIANTS = ("pmb", "pmb_budget", "pmb_batch", "dagster_eager", "interval", "random")
# The launch rules against each other and against the peers, paired seed by seed.
BUDGET_PAIRS = (
    ("pmb_budget", "pmb"),
    ("pmb_batch", "pmb"),
    ("pmb_batch", "pmb_budget"),
    ("pmb_batch", "dagster_eager"),
    ("pmb_batch", "interval"),
    ("pmb_batch", "random"),
)


def budget_conditions() -> list[tuple[str, Conditions]]:
    """Where the machine's budget (METHOD 10) could change the verdict: the six tables and
    the wide lakehouse on the calibrated machine (one run's worth of speed) and with room
    for three, chains and one table a run."""
    six, wide = six_conditions(), wide_conditions(1)
    return [
        ("six tables, calibrated (capacity 1)", six),
        ("six tables, capacity 3", replace(six, capacity=3.0)),
        ("six tables, one table a run (capacity 1)", replace(six, chains=False)),
        ("wide lakehouse, calibrated (capacity 1)", wide),
        ("wide lakehouse, capacity 3", replace(wide, capacity=3.0)),
    ]


def budget_markdown(
    conditions: Sequence[tuple[str, Conditions]], seeds: Sequence[int] = (1, 2, 3)
) -> str:
    """Per condition: P / P0 of PMB under each launch rule (every free slot, the machine's
    budget, the budget with the larger batch) and of the peers (mean over seeds), runs
    launched, and the rules' paired ratios (mean and sd)."""
    pairs = list(BUDGET_PAIRS)
    rules = ("pmb", "pmb_budget", "pmb_batch")
    head = "| condition | " + " | ".join(f"P/P0 {v}" for v in BUDGET_VARIANTS)
    head += f" | runs {' / '.join(rules)} | "
    head += " | ".join(f"{v} / {to}" for v, to in pairs) + " |"
    lines = [head, "|" + "---|" * (len(BUDGET_VARIANTS) + len(pairs) + 2)]
    for label, cond in conditions:
        results = {v: [simulate(cond, v, s) for s in seeds] for v in BUDGET_VARIANTS}
        cells = [label]
        cells += _level_cells(results, BUDGET_VARIANTS)
        runs = [statistics.mean(r.runs for r in results[v]) for v in rules]
        cells.append(" / ".join(f"{n:.1f}" for n in runs))
        cells += _paired_cells(results, pairs)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="freshness lab simulate",
        description="Sweep the conditions that would change the experiment's verdict, with "
        "the real planner and cost model on a modelled machine; prints a Markdown table.",
    )
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated")
    parser.add_argument("--variants", default=",".join(MODELLED))
    parser.add_argument(
        "--peers",
        action="store_true",
        help="instead: PMB with chains against the peers and one table per run (the "
        "prediction docs/results/long/REPORT.md quotes)",
    )
    parser.add_argument(
        "--capacity",
        action="store_true",
        help="instead: PMB with 1, 2 and K runs in flight against the peers, by the "
        "machine's capacity (docs/results/long/PREDICTION.md, second revision)",
    )
    parser.add_argument(
        "--budget",
        action="store_true",
        help="instead: PMB with the machine as the budget (pmb_budget, and pmb_batch counting "
        "the larger batch) against PMB and the "
        "peers, on six tables and the wide lakehouse (docs/PLANNER.md)",
    )
    args = parser.parse_args(argv)
    if args.budget:
        print(budget_markdown(budget_conditions(), tuple(int(s) for s in args.seeds.split(","))))
        return 0
    if args.capacity:
        print(capacity_markdown(tuple(int(s) for s in args.seeds.split(",") if s)))
        return 0
    if args.peers:
        seeds_given = tuple(int(s) for s in args.seeds.split(",") if s)
        print(peer_markdown(chain_conditions(), seeds_given))
        return 0
    seeds = [int(s) for s in args.seeds.split(",") if s]
    variants = [v for v in args.variants.split(",") if v]
    for required in ("pmb", "max_benefit", "random"):
        if required not in variants:
            parser.error(f"--variants must include {required} (the ratios need it)")
    unknown = sorted(set(variants) - set(MODELLED))
    if unknown:
        parser.error(f"unknown variants {unknown}; expected some of {sorted(MODELLED)}")
    rows = [compare(label, cond, variants, seeds) for label, cond in sweep()]
    print(sweep_markdown(rows, variants))
    return 0
