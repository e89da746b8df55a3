"""Aging on the modelled machine: P, each job's longest wait and when all
six tables first materialized, with the planner's aging off, each of its rules alone
(the bound, first runs first) and both.

The real planner (`planner.plan` with `max_wait_s`, `planner.age`) on `simulate`'s machine,
which also feeds the planner each job's aging clock (when its oldest unconsumed input
commit landed). Besides the calibrated machine, two slower ones put runs in the range the
demo showed when it starved the sector and industry jobs (60-190 s a run at a load of
9-15 on 2 cores): there the four upstream jobs fill the K = 3 slots most of the time.

    freshness lab simulate-aging [--seeds 1,2,3] [--bound 120]

prints a Markdown table (docs/BENCHMARKS.md, "Aging"). A model's figures, not a
measurement of the real system.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.lab.experiment.sim_conditions import SINGLE_RUN_CALIBRATION, Conditions
from freshness_pipeline.lab.experiment.simulate import SimResult, simulate


def aging_conditions() -> list[tuple[str, Conditions]]:
    """Half an hour of the stream on three machines, the calibrated one first."""
    base = replace(SINGLE_RUN_CALIBRATION, duration_s=1800)
    return [
        ("calibrated (runs ~35 s)", base),
        (
            "slower: fixed 30 s, launch 15 s (runs ~100 s)",
            replace(base, fixed_s=30.0, launch_s=15.0),
        ),
        (
            "slowest: fixed 60 s, launch 20 s (runs ~180 s)",
            replace(base, fixed_s=60.0, launch_s=20.0),
        ),
    ]


@dataclass(frozen=True)
class Aging:
    """One aging setting of the planner."""

    max_wait_s: float | None = None  # None: no bound
    first_runs_first: bool = False

    def describe(self) -> str:
        parts = [] if self.max_wait_s is None else [f"bound {self.max_wait_s:g} s"]
        if self.first_runs_first:
            parts.append("first runs first")
        return " + ".join(parts) or "off"


def agings(bound_s: float) -> list[Aging]:
    """Off, each rule alone, and both (the sensor's default)."""
    return [Aging(), Aging(bound_s), Aging(None, True), Aging(bound_s, True)]


@dataclass(frozen=True)
class AgingRow:
    """One condition under one aging setting, over seeds: mean P, P against aging off on
    the same seeds (mean of the per-seed ratios, and their range: seeds differ more than
    settings do), and per job the longest wait and the latest first materialization any
    seed saw (None: some seed never materialized it)."""

    label: str
    aging: Aging
    p: float
    ratio: tuple[float, float, float]  # mean, min, max of P / P(off) per seed
    longest_wait_s: dict[str, float]
    first_commit_s: dict[str, float | None]

    @property
    def all_six_by_s(self) -> float | None:
        """When the last of the six tables had its first materialization (worst seed)."""
        times = list(self.first_commit_s.values())
        return None if any(t is None for t in times) else max(t for t in times if t is not None)


def compare_aging(
    label: str,
    cond: Conditions,
    settings: Sequence[Aging],
    seeds: Sequence[int] = (1, 2, 3),
    variant: str = "pmb",
) -> list[AgingRow]:
    done: dict[Aging, list[SimResult]] = {}

    def run(aging: Aging) -> list[SimResult]:
        if aging not in done:  # aging off is both the baseline and a row
            varied = replace(
                cond, max_wait_s=aging.max_wait_s, first_runs_first=aging.first_runs_first
            )
            done[aging] = [simulate(varied, variant, seed) for seed in seeds]
        return done[aging]

    off = [r.p for r in run(Aging())]
    rows = []
    for aging in settings:
        results = run(aging)
        ratios = [r.p / p_off for r, p_off in zip(results, off, strict=True)]
        waits = [r.waits for r in results if r.waits is not None]
        longest = {job: max(w.max_wait_s.get(job, 0.0) for w in waits) for job in JOBS}
        first: dict[str, float | None] = {}
        for job in JOBS:
            times = [w.first_commit_s.get(job) for w in waits]
            first[job] = None if None in times else max(t for t in times if t is not None)
        rows.append(
            AgingRow(
                label,
                aging,
                statistics.mean(r.p for r in results),
                (statistics.mean(ratios), min(ratios), max(ratios)),
                longest,
                first,
            )
        )
    return rows


def aging_markdown(rows: Sequence[AgingRow]) -> str:
    jobs = list(JOBS)
    head = "| condition | aging | P | P / P(off) per seed: mean (range) | "
    head += " | ".join(f"longest wait {job} (s)" for job in jobs)
    head += " | all six first materialized by |"
    lines = [head, "|" + "---|" * (len(jobs) + 5)]
    for row in rows:
        mean, low, high = row.ratio
        by = row.all_six_by_s
        cells = [
            row.label,
            row.aging.describe(),
            f"{row.p:,.0f}",
            f"{mean:.3f} ({low:.3f}-{high:.3f})",
            *(f"{row.longest_wait_s[job]:.0f}" for job in jobs),
            "never" if by is None else f"{by:.0f} s",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="freshness lab simulate-aging",
        description="P, each job's longest wait (s) and when all six tables first "
        "materialized, with the planner's aging off, each rule alone and both, on the "
        "modelled machine; prints a Markdown table.",
    )
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated")
    parser.add_argument("--bound", type=float, default=120.0, help="the aging bound, seconds")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    if args.bound <= 0:
        parser.error(f"--bound must be positive, got {args.bound:g}")
    rows = [
        row
        for label, cond in aging_conditions()
        for row in compare_aging(label, cond, agings(args.bound), seeds)
    ]
    print(aging_markdown(rows))
    return 0
