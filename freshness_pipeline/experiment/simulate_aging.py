"""Aging on the modelled machine (issue 18 item 5): P, each job's longest wait and when all
six tables first materialized, with the planner's aging off and at each bound.

The real planner (`planner.plan` with `max_wait_s`, `planner.age`) on `simulate`'s machine,
which also feeds the planner each job's aging clock (when its oldest unconsumed input
commit landed). Besides the calibrated machine, two slower ones put runs in the range the
demo showed when it starved the sector and industry jobs (60-190 s a run at a load of
9-15 on 2 cores): there the four upstream jobs fill the K = 3 slots most of the time.

    python -m freshness_pipeline.experiment.simulate_aging [--seeds 1,2,3] [--bounds off,120]

prints a Markdown table (docs/BENCHMARKS.md, "Aging"). A model's figures, not a
measurement of the real system.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace

from freshness_pipeline.experiment.simulate import Conditions, calibrated, simulate
from freshness_pipeline.jobs.catalog import JOBS


def aging_conditions() -> list[tuple[str, Conditions]]:
    """Half an hour of the stream on three machines, the calibrated one first."""
    base = replace(calibrated(), duration_s=1800)
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
class AgingRow:
    """One condition at one bound, over seeds: mean P, and per job the longest wait and
    the latest first materialization any seed saw (None: some seed never materialized it)."""

    label: str
    max_wait_s: float | None  # the bound; None: aging off
    p: float
    p0: float
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
    bounds: Sequence[float | None],
    seeds: Sequence[int] = (1, 2, 3),
    variant: str = "pmb",
) -> list[AgingRow]:
    rows = []
    for bound in bounds:
        results = [simulate(replace(cond, max_wait_s=bound), variant, seed) for seed in seeds]
        waits = [r.waits for r in results if r.waits is not None]
        longest = {job: max(w.max_wait_s.get(job, 0.0) for w in waits) for job in JOBS}
        first: dict[str, float | None] = {}
        for job in JOBS:
            times = [w.first_commit_s.get(job) for w in waits]
            first[job] = None if any(t is None for t in times) else max(times)  # type: ignore[type-var]
        rows.append(
            AgingRow(
                label,
                bound,
                statistics.mean(r.p for r in results),
                statistics.mean(r.p0 for r in results),
                longest,
                first,
            )
        )
    return rows


def _bound_text(bound: float | None) -> str:
    return "off" if bound is None else f"{bound:g} s"


def aging_markdown(rows: Sequence[AgingRow]) -> str:
    jobs = list(JOBS)
    head = "| condition | aging | P | P / P(off) | " + " | ".join(jobs)
    head += " | all six first materialized by |"
    lines = [
        head,
        "|" + "---|" * (len(jobs) + 5),
    ]
    off = {row.label: row.p for row in rows if row.max_wait_s is None}
    for row in rows:
        ratio = f"{row.p / off[row.label]:.3f}" if row.label in off else ""
        by = row.all_six_by_s
        cells = [
            row.label,
            _bound_text(row.max_wait_s),
            f"{row.p:,.0f}",
            ratio,
            *(f"{row.longest_wait_s[job]:.0f}" for job in jobs),
            "never" if by is None else f"{by:.0f} s",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _parse_bound(text: str) -> float | None:
    if text.strip().lower() == "off":
        return None
    bound = float(text)
    if bound <= 0:
        raise ValueError(f"a bound must be positive or off, got {text!r}")
    return bound


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m freshness_pipeline.experiment.simulate_aging",
        description="P, each job's longest wait (s) and when all six tables first "
        "materialized, with the planner's aging off and at each bound, on the modelled "
        "machine; prints a Markdown table.",
    )
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated")
    parser.add_argument(
        "--bounds", default="off,60,120,300", help="`off` or seconds, comma-separated"
    )
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    try:
        bounds = [_parse_bound(b) for b in args.bounds.split(",") if b]
    except ValueError as exc:
        parser.error(str(exc))
    if None not in bounds:
        bounds.insert(0, None)  # the ratio column compares with aging off
    rows = [
        row
        for label, cond in aging_conditions()
        for row in compare_aging(label, cond, bounds, seeds)
    ]
    print(aging_markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
