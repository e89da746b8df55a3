"""Incremental run time with a fixed input while the tables grow about 10x.

    freshness lab incremental-growth [--rate 2000] [--base-s 30]
    freshness lab incremental-growth --service   # runs on the service

Grows every table to 1x, 3x and 10x of `base_s` seconds of stream (all six jobs caught
up), then lands the same amount of new stream (`probe_s` seconds) and times each job's
incremental run on it. Prints seconds per job per size and the 10x / 1x ratio; flat is
the target (METHOD 5.4: cost follows the input and the rows touched, not table size).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from freshness_pipeline.catalog.jobs import PIPELINE_ORDER as ORDER
from freshness_pipeline.config.settings import Settings


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab incremental-growth", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--base-s", type=int, default=30)
    parser.add_argument("--probe-s", type=int, default=5)
    parser.add_argument("--sizes", default="1,3,10")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--service", action="store_true", help="run the jobs through a shared Spark service"
    )
    args = parser.parse_args(argv)
    from freshness_pipeline.lab.bench.common import temp_lakehouse
    from freshness_pipeline.runtime.stack import exit_on_signals

    exit_on_signals()  # a kill unwinds, so the Spark service it started stops
    settings, spark = temp_lakehouse("bench_growth_", settings)
    growing = Growing(spark, settings, args.rate)
    service = growing.through_service() if args.service else None
    print(
        f"machine: {os.cpu_count()} cores; rate {args.rate:,.0f} events/s; probe "
        f"{args.probe_s} s of stream per measurement; repeats {args.repeats}"
    )
    grown = 0
    results: dict[int, dict[str, float]] = {}
    for size in [int(x) for x in args.sizes.split(",")]:
        growing.land_and_ingest(size * args.base_s - grown)
        grown = size * args.base_s
        growing.catch_up()
        samples: dict[str, list[float]] = {job: [] for job in ORDER}
        for _ in range(args.repeats):
            growing.land_and_ingest(args.probe_s)
            for job, seconds in growing.catch_up().items():
                samples[job].append(seconds)
            grown += args.probe_s
        results[size] = {job: statistics.median(v) for job, v in samples.items()}
        tables = ("trade_raw", "trade_aggr", "enriched_features")
        rows = {t: growing.meta(t).row_count() for t in tables}
        print(
            f"size {size}x ({grown} s of stream): rows {rows}; seconds per run "
            + ", ".join(f"{j} {s:.2f}" for j, s in results[size].items()),
            flush=True,
        )
    _print_ratios(results)
    spark.stop()
    if service:
        service.stop()
    return 0


class Growing:
    """A lakehouse grown by landed and ingested stream, and the six jobs caught up on it."""

    def __init__(self, spark, settings: Settings, rate: float) -> None:
        from freshness_pipeline.execution.runner import JobRunner
        from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
        from freshness_pipeline.stream.generator import StreamConfig
        from freshness_pipeline.stream.replayer import VirtualClock, generated_batches

        self.settings = settings
        self.clock = VirtualClock(time.time() - 86_400)
        self.batches = generated_batches(StreamConfig(seed=5, rate=rate))
        self.ingestor = Ingestor(spark, settings, IngestConfig(max_files_per_commit=30))
        self.runner = JobRunner(spark, settings.table_uri)

    def through_service(self):
        """The jobs run on a Spark service of their own from now on; returns it."""
        from freshness_pipeline.execution.runner import JobRunner
        from freshness_pipeline.runtime.ports import free_port
        from freshness_pipeline.runtime.spark import build_spark_session
        from freshness_pipeline.runtime.spark_service import SparkService, SparkServiceConfig

        state = self.settings.lakehouse.root.local_path().parent / "service"
        config = SparkServiceConfig(self.settings, state, port=free_port())
        service = SparkService(config).start()
        session = build_spark_session(self.settings, remote=service.url)
        self.runner = JobRunner(session, self.settings.table_uri)
        return service

    def meta(self, table: str):
        from freshness_pipeline.hudi.metadata import HudiTableMetadata

        return HudiTableMetadata(self.settings.lakehouse.table(table))

    def land_and_ingest(self, seconds: int) -> None:
        from freshness_pipeline.stream.replayer import land_instantly

        land_instantly(self.batches, self.settings.landing_dir, seconds, self.clock)
        while self.ingestor.ingest_once():
            pass

    def catch_up(self, new_session=None) -> dict[str, float]:
        """Every job run on what it has pending, in order: seconds per job. `new_session`:
        each step on a session of its own from it (stopped after), as a Dagster run has."""
        from freshness_pipeline.catalog.jobs import JOBS
        from freshness_pipeline.execution.run_config import resolve_run
        from freshness_pipeline.execution.runner import JobRunner

        timings = {}
        for job in ORDER:
            resolved = resolve_run(JOBS[job], [], None, self.meta)
            started = time.monotonic()
            if not resolved.nothing_to_do:
                if new_session is None:
                    self.runner.run(JOBS[job], resolved)
                else:
                    session = new_session()
                    try:
                        JobRunner(session, self.settings.table_uri).run(JOBS[job], resolved)
                    finally:
                        session.stop()
            timings[job] = time.monotonic() - started
        return timings


def _print_ratios(results: dict[int, dict[str, float]]) -> None:
    sizes = sorted(results)
    low, high = sizes[0], sizes[-1]
    print(
        f"ratio {high}x / {low}x per job: "
        + ", ".join(f"{j} {results[high][j] / results[low][j]:.2f}" for j in ORDER)
    )
    total_low = sum(results[low].values())
    total_high = sum(results[high].values())
    print(
        f"all six jobs: {total_low:.1f} s at {low}x, {total_high:.1f} s at {high}x, "
        f"ratio {total_high / total_low:.2f}"
    )
