"""A wide chain's steps one after another against side by side (FRESHNESS_STEP_PARALLEL).

    freshness lab steps-at-once [--rounds 3] [--at-once 3]
        [--select 'enriched_features*'] [--upstream '*market_features']

On a throwaway lakehouse holding the wide lakehouse of `experiment/wide.py` (seed 1, the
six market jobs and the declared ones), through a Spark service on a free port: after a
first materialization of every table (not measured), each round lands the same amount of
new stream, ingests it, refreshes `--upstream` (the tables above the chain, not measured),
and materializes `--select` (by default enriched_features and every view below it, the
chain the wide campaign's runs spend most of their time in) with
`dagster asset materialize`, in the run's process (the default) and with the run config
that puts `--at-once` steps side by side (`run_plan.execution_config`), the two in turn,
alternating which goes first. Prints each run's wall time and the steps' own times
(`duration_s`, summed), then the medians and the ratio side by side / in order, and what a
step's process costs (the side by side run's summed step phases against the in-order
run's, per step).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings, child_environment
from freshness_pipeline.lab.bench.common import scratch
from freshness_pipeline.runtime.dagster_instance import open_instance
from freshness_pipeline.runtime.stack import exit_on_signals
from freshness_pipeline.scheduling.run_plan import execution_config

SIDES = ("in order", "at once")


def _materialize(env: dict[str, str], home: Path, select: str, config: dict) -> float:
    started = time.monotonic()
    command = [sys.executable, "-m", "dagster", "asset", "materialize"]
    command += ["-m", "freshness_pipeline.definitions", "--select", select]
    if config:
        command += ["--config-json", json.dumps(config)]
    run = subprocess.run(command, env=env, cwd=home, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{run.stderr[-3000:]}")
    return time.monotonic() - started


def _last_run_steps(home: Path, settings: Settings) -> tuple[int, float, int]:
    """(steps materialized, their duration_s summed, distinct step processes) of the
    newest run."""
    import dagster as dg

    with open_instance(home, settings) as instance:
        run = instance.get_runs(limit=1)[0]
        records = instance.get_records_for_run(
            run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
        ).records
        seconds, pids = 0.0, set()
        for record in records:
            entry = record.event_log_entry
            meta = entry.dagster_event.event_specific_data.materialization.metadata
            if "duration_s" in meta:
                seconds += float(meta["duration_s"].value)
            pids.add(entry.dagster_event.pid)
        return len(records), seconds, len(pids)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="freshness lab steps-at-once", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=3, help="runs per side")
    parser.add_argument("--at-once", type=int, default=3, help="steps side by side")
    parser.add_argument("--select", default="enriched_features*", help="what each run refreshes")
    parser.add_argument(
        "--upstream", default="*market_features", help="refreshed before each run, not measured"
    )
    parser.add_argument("--land", type=int, default=10, help="stream seconds landed per run")
    parser.add_argument("--json", help="also write the figures to this file")
    return parser


def main(argv: list[str], settings: Settings) -> int:
    args = _parser().parse_args(argv)
    exit_on_signals()  # SIGTERM unwinds: the Spark service and the driver stop
    if args.at_once < 2:
        raise SystemExit("--at-once must be at least 2 (1 is the in-order side)")
    from freshness_pipeline.ingestion.feeder import StreamFeeder
    from freshness_pipeline.lab.experiment.wide import write_wide
    from freshness_pipeline.runtime.dagster_instance import write_instance_yaml
    from freshness_pipeline.runtime.ports import free_port
    from freshness_pipeline.runtime.spark import build_spark_session
    from freshness_pipeline.runtime.spark_service import SparkService, service_config

    root, where = scratch("bench_steps_at_once_")
    write_wide(root / "wide", 1)
    settings = settings.changed(
        {
            **where,
            "FRESHNESS_JOBS": f"{PROJECT_ROOT / 'jobs_sql'}:{root / 'wide'}",
            "FRESHNESS_SPARK_REMOTE": None,
        }
    )
    # Ingestion is data preparation, not measured: a local driver of its own.
    spark = build_spark_session(settings, master="local[2]", app_name="bench_at_once", remote="")
    feeder = StreamFeeder(spark, settings, seed=6, rate=300)
    home = root / "dagster_home"
    write_instance_yaml(home, settings.postgres_url, settings.scheduler.k, settings.postgres_params)
    service = service_config(settings, root / "service", port=free_port())
    env = child_environment(
        settings, extra={"DAGSTER_HOME": str(home), "FRESHNESS_SPARK_REMOTE": service.url}
    )
    configs = {"in order": {}, "at once": execution_config(args.at_once)}
    wall: dict[str, list[float]] = {side: [] for side in SIDES}
    steps_s: dict[str, list[float]] = {side: [] for side in SIDES}
    try:
        with SparkService(service):
            feeder.land(args.land)
            feeder.ingest()
            first = _materialize(env, home, "*", configs["at once"])  # every table, once
            print(f"first materialization of every table: {first:.1f} s", flush=True)
            for i in range(args.rounds):
                for side in SIDES if i % 2 == 0 else tuple(reversed(SIDES)):
                    feeder.land(args.land)
                    feeder.ingest()
                    _materialize(env, home, args.upstream, {})
                    seconds = _materialize(env, home, args.select, configs[side])
                    count, summed, processes = _last_run_steps(home, service.settings)
                    wall[side].append(seconds)
                    steps_s[side].append(summed)
                    print(
                        f"  {side:8s} wall {seconds:6.1f} s | {count} steps, their own "
                        f"{summed:6.1f} s | {processes} processes",
                        flush=True,
                    )
    finally:
        spark.stop()
    med = {side: statistics.median(wall[side]) for side in SIDES}
    own = {side: statistics.median(steps_s[side]) for side in SIDES}
    print(f"\nmachine: {os.cpu_count()} cores; {args.rounds} runs per side, alternating;")
    print(f"`dagster asset materialize --select {args.select}`, medians:")
    for side in SIDES:
        print(f"  {side:8s}: wall {med[side]:6.1f} s, the steps' own {own[side]:6.1f} s")
    print(f"  at once / in order: wall {med['at once'] / med['in order']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"wall": wall, "steps_s": steps_s}))
    return 0
