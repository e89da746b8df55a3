"""Clustering on real Hudi and Spark, beside live ingestion and the jobs.

A short stream is ingested and drained by the sensor's plans; the clustering sensor's run
(the real Dagster job, in process) merges the raw tables' read files while ingestion
commits in another thread; then a clustering that also merges files still pending for the
jobs (beyond what the decision allows, to test the metadata's hand-on of pending ranges);
after the drain the raw tables' readers equal the independent oracle and every raw row is there
once. A clustering that fails after writing its files leaves a pending plan that blocks
neither ingestion nor the jobs, and the next run resumes it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import dagster as dg
import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.scheduler_settings import SchedulerSettings
from freshness_pipeline.config.settings import Settings, load_settings
from freshness_pipeline.execution.clustering_exec import execute_clustering
from freshness_pipeline.execution.oracle import check_lakehouse, read_table
from freshness_pipeline.execution.run_config import resolve_run
from freshness_pipeline.execution.runner import JobRunner
from freshness_pipeline.ingestion.feeder import StreamFeeder
from freshness_pipeline.orchestration.clustering_sensor import (
    build_clustering_job,
    evaluate_clustering,
    table_state,
)
from freshness_pipeline.orchestration.resources import HudiMetadataResource, HudiSparkResource
from freshness_pipeline.orchestration.sensor import evaluate_tick
from freshness_pipeline.scheduling.clustering import (
    HEARTBEAT_EXPIRY_S,
    ClusteringSettings,
    PendingClustering,
    decide,
    encode_groups,
)
from freshness_pipeline.scheduling.run_plan import RunPlan
from freshness_pipeline.scheduling.units import US_PER_S

pytestmark = pytest.mark.spark


# The raw tables' readers: what clustering the raw tables can affect (the other four jobs
# read only these two), kept to two to fit the test on two shared cores.
READERS = (JOBS["price_aggr"], JOBS["trade_aggr"])


def _drain(settings: Settings, spark, instance) -> int:
    """Sensor ticks (over the raw tables' readers), each launched plan run by the runner,
    until a tick launches nothing."""
    hudi_meta, lake = HudiMetadataResource.for_settings(load_settings()), settings.lakehouse
    runner = JobRunner(spark, lake)
    runs = 0
    for _ in range(40):
        now_us = int(time.time() * 1_000_000)
        _, requests = evaluate_tick(hudi_meta, instance, SchedulerSettings(k=3), now_us, READERS)
        if not requests:
            return runs
        for request in requests:
            plan = RunPlan.from_tags(request.tags, request.run_config)
            assert plan is not None
            spec = JOBS[plan.asset]
            resolved = resolve_run(spec, list(plan.files), plan.cutoff_us, lake.metadata)
            if not resolved.nothing_to_do:
                runner.run(spec, resolved)
                runs += 1
    raise AssertionError("the sensor kept launching runs after 40 ticks")


def _check(settings: Settings) -> None:
    """The raw tables' readers equal the independent oracle; every raw row is there once."""
    lake = settings.lakehouse
    for diff in check_lakehouse(lake.table, only=tuple(spec.name for spec in READERS)):
        assert diff.equal, diff
    for table in RAW_TABLES:
        meta = lake.metadata(table)
        inserted = sum(
            w.num_inserts for c in meta.commits() if not c.is_clustering for w in c.written
        )
        rows = read_table(lake.table(table))
        assert len(rows) == inserted == rows["event_id"].nunique(), table


def _read_and_decided(feeder: StreamFeeder, instance, table: str, seconds: int):
    """Lands and ingests `seconds` of stream, lets the jobs read it all, and returns the
    clustering decision for `table` then (one that launches)."""
    feeder.land(seconds)
    feeder.ingest()
    assert _drain(feeder.settings, feeder.ingestor.spark, instance) > 0
    state, _ = table_state(
        table, HudiMetadataResource.for_settings(load_settings()), instance, set(), {}
    )
    assert state is not None
    decision = decide(state, _tight(feeder.settings), int(time.time() * 1_000_000))
    assert decision.launch, decision.reason
    return decision


def _tight(settings: Settings) -> ClusteringSettings:
    # The feeder's stream is short: a few seconds of arrival per group, two files to merge.
    return replace(settings.clustering, min_files=2, max_span_s=6)


def test_clustering_beside_ingestion_keeps_every_row_once(lakehouse, spark, monkeypatch):
    monkeypatch.setenv("FRESHNESS_CLUSTERING_MIN_FILES", "2")
    monkeypatch.setenv("FRESHNESS_CLUSTERING_MAX_SPAN_S", "6")
    settings = load_settings()
    lake = settings.lakehouse
    feeder = StreamFeeder(spark, settings, seed=5)
    hudi_meta = HudiMetadataResource.for_settings(load_settings())
    with dg.instance_for_test() as instance:
        feeder.land(4)
        feeder.ingest()
        assert _drain(settings, spark, instance) > 0

        # The sensor's decision, launched as the real job, while ingestion commits.
        now_us = int(time.time() * 1_000_000)
        decisions, requests = evaluate_clustering(hudi_meta, instance, settings.clustering, now_us)
        assert len(requests) == 2, [d.reason for d in decisions]
        for request in requests:
            assert "removes" in request.tags["freshness/clustering_reason"]
        before = {t: len(lake.metadata(t).latest_file_slices()) for t in RAW_TABLES}
        feeder.land(4)
        failures: list[BaseException] = []

        def ingest() -> None:
            try:
                feeder.ingest()
            except BaseException as exc:  # reported below, in the test's thread
                failures.append(exc)

        writer = threading.Thread(target=ingest)
        writer.start()
        for request in requests:
            table = request.tags["freshness/clustering_table"]
            result = build_clustering_job(table).execute_in_process(
                run_config=request.run_config,
                instance=instance,
                tags=request.tags,
                resources={
                    "spark": HudiSparkResource.for_settings(load_settings()),
                    "hudi_meta": hudi_meta,
                },
            )
            assert result.success
            observed = result.get_asset_observation_events()
            assert observed and observed[0].asset_key == dg.AssetKey(table)
            metadata = observed[0].event_specific_data.asset_observation.metadata
            replaced, written = metadata["files_replaced"].value, metadata["files_written"].value
            print(f"{table}: the clustering merged {replaced} files into {written}")
            assert replaced > written > 0
        writer.join()
        assert not failures, failures
        for table in RAW_TABLES:
            meta = lake.metadata(table)
            clustering = meta.last_clustering()
            assert clustering is not None and clustering.operation.lower() == "cluster"
            # Ingestion committed while the clustering was under way: true concurrency.
            overlapped = [
                c
                for c in meta.commits()
                if not c.is_clustering and clustering.instant < c.completion < clustering.completion
            ]
            print(f"{table}: {len(overlapped)} ingestion commit(s) inside the clustering")
            replaced = {f for fids in clustering.replaced_file_ids.values() for f in fids}
            current = {s.file_id for s in meta.latest_file_slices()}
            assert replaced and not replaced & current  # the readers see the new files only
        # The next tick has nothing worth a run (or waits for unread files): said, not done.
        decisions, requests = evaluate_clustering(
            hudi_meta, instance, settings.clustering, int(time.time() * 1_000_000)
        )
        assert all(d.reason for d in decisions)
        assert _drain(settings, spark, instance) > 0
        after = {t: len(lake.metadata(t).latest_file_slices()) for t in RAW_TABLES}
        print(f"raw files before the clustering {before}, at the end {after}")
    _check(settings)


def test_merging_pending_files_hands_their_ranges_on(lakehouse, spark):
    """Beyond what the decision allows: files the jobs have not read are merged too, so
    the merged files' pending ranges must come from the commits they replaced, and no
    pending row may be lost or counted twice."""
    settings = load_settings()
    lake = settings.lakehouse
    feeder = StreamFeeder(spark, settings, seed=13)
    hudi_meta = HudiMetadataResource.for_settings(load_settings())
    with dg.instance_for_test() as instance:
        feeder.land(4)
        feeder.ingest()
        assert _drain(settings, spark, instance) > 0
        feeder.land(4)
        feeder.ingest()
        for table in RAW_TABLES:
            state, _ = table_state(table, hudi_meta, instance, set(), {})
            assert state is not None
            pending = [f for f in state.files if f.arrival_max_us > (state.consumed_us or -1)]
            assert pending, "nothing pending to merge"
            everything = replace(state, consumers=(), consumed_us=None)
            decision = decide(everything, _tight(settings), int(time.time() * 1_000_000))
            assert decision.launch and decision.pending_small_files == 0, decision.reason
            merged = {fid for g in decision.groups for fid in g.file_ids}
            assert merged & {f.file_id for f in pending}, "no pending file in a group"
            outcome = execute_clustering(
                spark, lake, table, _tight(settings), encode_groups(decision.groups)
            )
            assert outcome.files_after < outcome.files_before, outcome
            assert len(state.files) == outcome.files_before
        assert _drain(settings, spark, instance) > 0
    _check(settings)


def test_failed_clustering_is_resumed_and_blocks_nothing(lakehouse, spark):
    settings = load_settings()
    lake = settings.lakehouse
    tight = _tight(settings)
    feeder = StreamFeeder(spark, settings, seed=9)
    hudi_meta = HudiMetadataResource.for_settings(load_settings())
    with dg.instance_for_test() as instance:
        decision = _read_and_decided(feeder, instance, "price_raw", 4)
        with pytest.raises(Exception, match="injected fault"):
            execute_clustering(
                spark,
                lake,
                "price_raw",
                tight,
                encode_groups(decision.groups),
                fail_after_write=True,
            )
        pending = lake.metadata("price_raw").pending_clustering()
        assert len(pending) == 1, pending
        print(f"after the failure: pending {pending}")

        # Ingestion and the jobs carry on beside the pending clustering.
        feeder.land(2)
        feeder.ingest()
        assert _drain(settings, spark, instance) > 0

        # The next decision resumes it (once no live heartbeat says someone executes it).
        later = time.time() + HEARTBEAT_EXPIRY_S + 1
        state, _ = table_state("price_raw", hudi_meta, instance, set(), {})
        assert state is not None
        aged = lake.metadata("price_raw").pending_clustering(now_s=later)
        state = replace(state, pending=tuple(PendingClustering(*p) for p in aged))
        decision = decide(state, tight, int(later * 1_000_000))
        assert decision.launch and decision.resume == (pending[0][0],), decision.reason
        outcome = execute_clustering(spark, lake, "price_raw", tight, resume=decision.resume)
        assert outcome.files_after < outcome.files_before, outcome
        meta = lake.metadata("price_raw")
        assert meta.pending_clustering() == []
        assert meta.last_clustering() is not None
        assert meta.last_clustering().instant == pending[0][0]
    _check(settings)


def test_a_clustering_its_driver_executes_is_never_taken_for_abandoned(lakehouse, spark):
    """A run's client can die while the Spark service carries its clustering on: the
    driver beats while it executes and commits, so no decision resumes (rolls back) it
    meanwhile, and the file goes once the driver is done."""
    settings = load_settings()
    lake = settings.lakehouse
    tight = _tight(settings)
    feeder = StreamFeeder(spark, settings, seed=11)
    hudi_meta = HudiMetadataResource.for_settings(load_settings())
    with dg.instance_for_test() as instance:
        decision = _read_and_decided(feeder, instance, "price_raw", 4)
        failures: list[BaseException] = []

        def cluster() -> None:
            try:
                execute_clustering(
                    spark, lake, "price_raw", tight, encode_groups(decision.groups), hold_s=14
                )
            except BaseException as e:  # noqa: BLE001 - reported by the test below
                failures.append(e)

        driver = threading.Thread(target=cluster)
        driver.start()
        seen = []
        deadline = time.monotonic() + 60
        # Until it has been pending longer than one beat: the heartbeat is then younger
        # than the instant's timeline files, so it was written again.
        while driver.is_alive() and time.monotonic() < deadline:
            seen = lake.metadata("price_raw").pending_clustering()
            if seen and seen[0].touched_age_s > 11 and seen[0].heartbeat_age_s is not None:
                break
            time.sleep(0.2)
        assert seen and seen[0].touched_age_s > 11, f"seen {seen}, driver failed: {failures}"
        assert seen[0].heartbeat_age_s is not None and seen[0].heartbeat_age_s < 11, seen
        state, _ = table_state("price_raw", hudi_meta, instance, set(), {})
        assert state is not None
        # Even as late as a stale instant's expiry: the heartbeat alone holds the decision.
        pending = (PendingClustering(seen[0].instant, seen[0].heartbeat_age_s, 1e9),)
        waiting = decide(replace(state, pending=pending), tight, int(time.time() * US_PER_S))
        assert not waiting.launch and "may still be executing" in waiting.reason, waiting
        driver.join(timeout=120)
        assert not driver.is_alive() and not failures, failures
        assert lake.metadata("price_raw").pending_clustering() == []
        beats = lake.table("price_raw").local_path() / ".hoodie" / ".heartbeat"
        heartbeat = beats / seen[0].instant
        deadline = time.monotonic() + 15
        while heartbeat.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not heartbeat.exists(), "the heartbeat outlived its clustering"
    _check(settings)


def test_a_failing_file_group_reports_its_own_error(lakehouse, spark):
    """When one file group's work fails, Hudi 1.1 cancels the other groups and may report a
    sibling's CancellationException instead (apache/hudi#18456; the soak's clustering
    failures said only that). Our execution strategy reports the group's own failure: here
    a base file that is no Parquet file."""
    settings = load_settings()
    lake = settings.lakehouse
    tight = _tight(settings)
    with dg.instance_for_test() as instance:
        feeder = StreamFeeder(spark, settings, seed=17)
        decision = _read_and_decided(feeder, instance, "trade_raw", 6)
        assert len(decision.groups) >= 2, decision
    slices = {s.file_id: s for s in lake.metadata("trade_raw").latest_file_slices()}
    broken = slices[decision.groups[-1].file_ids[0]]
    path = lake.table("trade_raw").local_path() / broken.path
    path.write_bytes(b"not a parquet file" * 64)
    with pytest.raises(Exception) as failed:
        execute_clustering(spark, lake, "trade_raw", tight, encode_groups(decision.groups))
    message = str(failed.value)
    print(f"the clustering's error: {message[:2000]}")
    assert path.name in message or "parquet" in message.lower(), message[:4000]
    # the exception raised (py4j's first line is only "An error occurred while calling")
    raised = next(line for line in message.splitlines() if "Exception" in line)
    assert "CancellationException" not in raised, message[:4000]
