"""When each of the six tables first materialized after a demo's start (target: all six
within 3 minutes), and whether aging launched that run.

Reads a Dagster instance (the demo's DAGSTER_HOME) and prints one line per job and a
verdict. Start the demo on clean data so the instance holds only its runs:

    make clean-data && make demo          # leave it running 5 minutes, then Ctrl-C
    make first-materializations SINCE="<the demo's start, UTC>"   # or, by hand:
    DAGSTER_HOME=$PWD/.dagster_home .venv/bin/freshness lab first-materializations \\
        --since "<the demo's start, UTC>"

Without `--since` the start is the creation of the instance's earliest run (the first
launch, some seconds after the demo's start: the figures then flatter it slightly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from freshness_pipeline.catalog.jobs import JOBS

TARGET_S = 180.0


@dataclass(frozen=True)
class FirstMaterialization:
    job: str
    at_s: float | None  # epoch seconds; None: never materialized
    aging: str = ""  # the launching run's freshness/aging tag ("": eta's order chose it)


def report(
    start_s: float, firsts: Sequence[FirstMaterialization], target_s: float = TARGET_S
) -> list[str]:
    """One line per job, then the verdict: every job within `target_s` of `start_s`?"""
    lines, late = [], []
    for first in firsts:
        if first.at_s is None:
            lines.append(f"{first.job}: never materialized")
            late.append(first.job)
            continue
        after = first.at_s - start_s
        when = datetime.fromtimestamp(first.at_s, UTC).strftime("%H:%M:%S")
        why = f", launched by aging: {first.aging}" if first.aging else ""
        lines.append(f"{first.job}: {when} UTC, {after:.0f} s after the start{why}")
        if after > target_s:
            late.append(first.job)
    verdict = (
        f"all {len(firsts)} within {target_s:.0f} s: met"
        if not late
        else f"past {target_s:.0f} s: {', '.join(late)}: MISSED"
    )
    return [*lines, verdict]


def read_firsts(instance) -> tuple[list[FirstMaterialization], float | None]:
    """Each job's first materialization in the instance (and its run's aging tag), and the
    creation time of the instance's earliest run."""
    from dagster import AssetKey

    from freshness_pipeline.scheduling.run_plan import AGING_TAG

    firsts = []
    for job in JOBS:
        records = instance.fetch_materializations(AssetKey(job), limit=1, ascending=True).records
        if not records:
            firsts.append(FirstMaterialization(job, None))
            continue
        run = instance.get_run_by_id(records[0].run_id)
        aging = run.tags.get(AGING_TAG, "") if run is not None else ""
        firsts.append(FirstMaterialization(job, records[0].timestamp, aging))
    earliest = instance.get_run_records(limit=1, ascending=True)
    return firsts, (earliest[0].create_timestamp.timestamp() if earliest else None)


def _parse_time(text: str) -> float:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from dagster import DagsterInstance

    parser = argparse.ArgumentParser(
        prog="freshness lab first-materializations",
        description="Each job's first materialization after the demo's start (DAGSTER_HOME).",
    )
    parser.add_argument("--since", help="the demo's start, ISO time (UTC unless it says)")
    parser.add_argument("--target-s", type=float, default=TARGET_S)
    args = parser.parse_args(argv)
    try:
        since = None if args.since is None else _parse_time(args.since)
    except ValueError:
        parser.error(f"--since {args.since!r} is not an ISO time such as 2026-11-23T22:10:00")
    instance = DagsterInstance.get()
    firsts, earliest = read_firsts(instance)
    start = since if since is not None else earliest
    if start is None:
        parser.error("the instance holds no runs: start the demo first, or pass --since")
    print("\n".join(report(start, firsts, args.target_s)))
    return 0
