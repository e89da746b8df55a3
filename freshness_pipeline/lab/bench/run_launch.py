"""How a code server starts runs, side by side (the launch path).

    freshness lab run-launch [--pairs 2] [--minutes 4] [--rate 1000]

Runs the demo's stack without the webserver (shared Spark service, replayer, ingestion,
the daemon and its code server) on a throwaway lakehouse for `--minutes`, once with
FRESHNESS_RUN_START=spawn (Dagster's own: a new Python per run) and once with
`forkserver` (run_start.py), the order alternating pair by pair, and reports per side:
- each sensor run's `launch` phase (queue release until the asset's code runs: the run's
  process, code loading, resources), median and quartiles, and the run's time from its
  worker's RUN_START event to its end (the part after the process started);
- when each of the six tables first materialized after the stack's start
  (bench/first_materializations.py reads the same from a demo).
The runs' own metadata says how each was started (`run_worker`): a side whose runs did not
start the way it asked is reported as such, not averaged in.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.parsing import RUN_STARTS
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.lab.bench.common import scratch


@dataclass
class Side:
    """What one stack's runs measured."""

    run_start: str
    launch_s: list[float] = field(default_factory=list)
    run_wall_s: list[float] = field(default_factory=list)
    started_as: set[str] = field(default_factory=set)  # the runs' `run_worker` values
    first_s: dict[str, float | None] = field(default_factory=dict)  # after the stack's start


def _quartiles(values: Sequence[float]) -> str:
    if not values:
        return "-"
    if len(values) < 4:
        return f"{statistics.median(values):.2f}"
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return f"{q2:.2f} ({q1:.2f}-{q3:.2f})"


def read_side(home: Path, run_start: str, started_at_s: float) -> Side:
    """The sensor runs' launch phases and wall times, and each table's first
    materialization, from the stack's Dagster instance."""
    import dagster as dg

    side = Side(run_start)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for job in JOBS:
            records = instance.fetch_materializations(dg.AssetKey(job), limit=10_000).records
            first = min((r.timestamp for r in records), default=None)
            side.first_s[job] = None if first is None else first - started_at_s
            for record in records:
                materialization = record.asset_materialization
                metadata = materialization.metadata if materialization else {}
                if "phase_launch_s" not in metadata:
                    continue  # nothing to do, or a chained step (no launch of its own)
                launch = metadata["phase_launch_s"].value
                if not isinstance(launch, int | float):
                    raise TypeError(f"run {record.run_id}: phase_launch_s is {launch!r}")
                side.launch_s.append(float(launch))
                if "run_worker" in metadata:
                    side.started_as.add(str(metadata["run_worker"].value))
                run = instance.get_run_record_by_id(record.run_id)
                if run is not None and run.start_time and run.end_time:
                    side.run_wall_s.append(run.end_time - run.start_time)
    return side


def run_side(settings: Settings, run_start: str, minutes: float, rate: int) -> Side:
    """One stack with FRESHNESS_RUN_START=`run_start` for `minutes`, stopped (its runs
    drained), then read."""
    from freshness_pipeline.runtime.stack import Stack, StackConfig, StopFlag
    from freshness_pipeline.stream.generator import StreamConfig

    root, where = scratch(f"run_launch_{run_start}_")
    print(f"{run_start}: lakehouse, Dagster home and logs under {root}", flush=True)
    env = {
        **where,
        "FRESHNESS_RUN_START": run_start,
        "FRESHNESS_SPARK_SERVICE_PORT": settings.texts.get("FRESHNESS_SPARK_SERVICE_PORT", "15012"),
    }
    home = root / "dagster_home"
    stack = Stack(
        StackConfig(
            stream=StreamConfig(rate=rate),
            webserver=False,
            dagster_home=home,
            logs_dir=root / "logs",
            env=env,
        ),
        settings,
    )
    stop = StopFlag()
    with stack:
        started_at_s = stack.started_at.timestamp()
        waited = 0.0
        while not stop() and waited < minutes * 60:
            stack.supervise()
            stop.wait(5)
            waited += 5
    return read_side(home, run_start, started_at_s)


def report(sides: Sequence[Side]) -> str:
    lines = [
        "| run start | sensor runs | launch s, median (quartiles) | run wall s, median "
        "(quartiles) | started as | last of the six first materialized |",
        "|---|---|---|---|---|---|",
    ]
    for run_start in RUN_STARTS:
        mine = [s for s in sides if s.run_start == run_start]
        if not mine:
            continue
        launch = [v for s in mine for v in s.launch_s]
        wall = [v for s in mine for v in s.run_wall_s]
        started_as = ", ".join(sorted(set().union(*(s.started_as for s in mine)))) or "-"
        lasts = []
        for side in mine:
            firsts = list(side.first_s.values())
            lasts.append(
                "never (some)"
                if any(v is None for v in firsts)
                else f"{max(v for v in firsts if v is not None):.0f} s"
            )
        lines.append(
            f"| {run_start} | {len(launch)} | {_quartiles(launch)} | {_quartiles(wall)} | "
            f"{started_as} | {', '.join(lasts)} |"
        )
    medians = {
        s: statistics.median(v)
        for s in RUN_STARTS
        if (v := [x for side in sides if side.run_start == s for x in side.launch_s])
    }
    if len(medians) == 2:
        lines.append("")
        lines.append(
            f"launch, forkserver / spawn (medians): {medians['forkserver'] / medians['spawn']:.2f}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab run-launch", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--pairs", type=int, default=2, help="spawn/forkserver pairs")
    parser.add_argument("--minutes", type=float, default=4.0, help="per stack")
    parser.add_argument("--rate", type=int, default=1000, help="events per second")
    args = parser.parse_args(argv)
    sides = []
    for pair in range(args.pairs):
        order = RUN_STARTS if pair % 2 else tuple(reversed(RUN_STARTS))
        for run_start in order:
            side = run_side(settings, run_start, args.minutes, args.rate)
            sides.append(side)
            print(report([side]), flush=True)
    print(report(sides))
    return 0
