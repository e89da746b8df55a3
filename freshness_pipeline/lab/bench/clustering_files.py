"""Raw file counts with and without clustering, on the same stream (scaled down).

    freshness lab clustering-files [--minutes 6] [--rate 1000]

Per arm (clustering off, then on) a fresh lakehouse gets the same seeded stream on a
virtual clock: every minute of stream is landed and ingested (one commit per
`--commit-s` seconds of stream, as the demo's ingestion does), the two aggregates (the
raw tables' readers) catch up, and with clustering on the clustering decision runs and
executes what it launches (default settings but the span and threshold given here).
Prints the raw tables' file counts per minute, then at the end a sensor tick's wall time
(the freshness sensor's evaluation of the two aggregates after one more minute of stream)
and each aggregate's run over that minute.
"""

from __future__ import annotations

import argparse
import os
import time

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.scheduling.units import US_PER_S


def catch_up(readers, runner, lake) -> dict[str, float]:
    """Each reader over everything pending; seconds per run."""
    from freshness_pipeline.execution.run_config import resolve_run

    took = {}
    for spec in readers:
        resolved = resolve_run(spec, [], None, lake.metadata)
        started = time.monotonic()
        if not resolved.nothing_to_do:
            runner.run(spec, resolved)
        took[spec.name] = time.monotonic() - started
    return took


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab clustering-files", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=int, default=6)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--commit-s", type=int, default=10)
    parser.add_argument("--span-s", type=int, default=120)
    parser.add_argument("--min-files", type=int, default=100)
    args = parser.parse_args(argv)
    print(
        f"machine: {os.cpu_count()} cores; {args.minutes} min of stream at {args.rate:,.0f} "
        f"events/s, one commit per {args.commit_s} s of stream; clustering span "
        f"{args.span_s} s, at least {args.min_files} files removed per run",
        flush=True,
    )
    summary = {clustered: _arm(settings, clustered, args) for clustered in (False, True)}
    for clustered, (files, tick_s, runs, clustering_s) in summary.items():
        print(
            f"clustering {'on' if clustered else 'off'}: raw files at the end {files}; "
            f"sensor tick {tick_s:.2f} s; runs over the last minute "
            + ", ".join(f"{j} {s:.2f} s" for j, s in runs.items())
            + (f"; {clustering_s:.1f} s spent clustering" if clustered else "")
        )
    return 0


def _arm(settings: Settings, clustered: bool, args: argparse.Namespace):
    """One arm on a lakehouse of its own: the stream minute by minute, the readers caught
    up, the raw tables clustered or not; then one more minute, a sensor tick and a run.
    Returns (raw files, tick seconds, the last runs' seconds, seconds spent clustering)."""
    import dagster as dg

    from freshness_pipeline.catalog.jobs import JOBS
    from freshness_pipeline.catalog.tables import RAW_TABLES
    from freshness_pipeline.config.scheduler_settings import SchedulerSettings
    from freshness_pipeline.execution.runner import JobRunner
    from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
    from freshness_pipeline.lab.bench.common import temp_lakehouse
    from freshness_pipeline.orchestration.resources import HudiMetadataResource
    from freshness_pipeline.orchestration.sensor import evaluate_tick
    from freshness_pipeline.scheduling.clustering import ClusteringSettings
    from freshness_pipeline.stream.generator import StreamConfig
    from freshness_pipeline.stream.replayer import VirtualClock, generated_batches, land_instantly

    readers = [JOBS["price_aggr"], JOBS["trade_aggr"]]
    tight = ClusteringSettings(min_files=args.min_files, max_span_s=args.span_s)
    settings, spark = temp_lakehouse("bench_clustering_", settings)
    lake = settings.lakehouse
    clock = VirtualClock(time.time() - 86_400)
    batches = generated_batches(StreamConfig(seed=11, rate=args.rate))
    ingestor = Ingestor(spark, settings, IngestConfig(max_files_per_commit=args.commit_s))
    runner = JobRunner(spark, lake)
    hudi_meta = HudiMetadataResource.for_settings(settings)
    clustering_s = 0.0
    with dg.instance_for_test() as instance:
        for minute in range(1, args.minutes + 1):
            land_instantly(batches, settings.landing_dir, 60, clock)
            while ingestor.ingest_once():
                pass
            catch_up(readers, runner, lake)
            if clustered:
                clustering_s += _cluster_raw(spark, lake, hudi_meta, instance, tight)
            files = {t: len(lake.metadata(t).latest_file_slices()) for t in RAW_TABLES}
            arm = "on " if clustered else "off"
            print(f"clustering {arm} minute {minute}: raw files {files}", flush=True)
        land_instantly(batches, settings.landing_dir, 60, clock)
        while ingestor.ingest_once():
            pass
        started = time.monotonic()
        now_us = int(time.time() * US_PER_S)
        evaluate_tick(hudi_meta, instance, SchedulerSettings(k=3), now_us, readers)
        tick_s = time.monotonic() - started
        runs = catch_up(readers, runner, lake)
    ingestor.close()
    return files, tick_s, runs, clustering_s


def _cluster_raw(spark, lake, hudi_meta, instance, tight) -> float:
    """Each raw table clustered where the clustering rule says so; the seconds it took."""
    from freshness_pipeline.catalog.tables import RAW_TABLES
    from freshness_pipeline.execution.clustering_exec import execute_clustering
    from freshness_pipeline.orchestration.clustering_sensor import table_state
    from freshness_pipeline.scheduling.clustering import decide, encode_groups

    took = 0.0
    for table in RAW_TABLES:
        state, _ = table_state(table, hudi_meta, instance, set(), {})
        assert state is not None
        decision = decide(state, tight, int(time.time() * US_PER_S))
        if decision.launch:
            started = time.monotonic()
            execute_clustering(spark, lake, table, tight, encode_groups(decision.groups))
            took += time.monotonic() - started
    return took
