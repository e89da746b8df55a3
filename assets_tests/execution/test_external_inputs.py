"""Input tables written by someone else: plain Spark Hudi writes with none of our commit
metadata (merge-on-read with log files and no arrival column; copy-on-write with an arrival
column, an insert_overwrite and a clustering; table versions 8 and 6; our own tables are
version 9), declared in a TOML file.
The sensor plans over them, says which arrival source it used, and after the stream drains
every job's table equals the batch oracle's answer."""

from __future__ import annotations

import time
from datetime import UTC

import dagster as dg
import pytest
from pyspark.sql import functions as F

from assets_tests.execution.conftest import StreamFeeder
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.scheduler_settings import SchedulerSettings
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.execution.batch_oracle import ORDER, batch_recompute, differences
from freshness_pipeline.execution.run_config import resolve_run
from freshness_pipeline.execution.runner import JobRunner
from freshness_pipeline.hudi.commit_keys import SOURCE_COMPLETION, SOURCE_FOOTER
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.orchestration.sensor import arrival_warnings, evaluate_tick
from freshness_pipeline.scheduling.run_plan import RunPlan

pytestmark = pytest.mark.spark

PLAIN = {
    "hoodie.datasource.write.recordkey.field": "event_id",
    "hoodie.datasource.write.partitionpath.field": "symbol_prefix",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "hoodie.metadata.enable": "false",
}
# trade_raw: merge-on-read with a bucket index, so appends after the first go to log files;
# table version 8 (Hudi 1.0's format: timeline layout 2, commit metadata in Avro).
TRADES = {
    **PLAIN,
    "hoodie.write.table.version": "8",
    "hoodie.table.name": "their_trades",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": "2",
    "hoodie.datasource.write.precombine.field": "event_ts",
}
# price_raw: copy-on-write, table version 6 (timeline layout 1), arrival column ingested_at.
PRICES = {
    **PLAIN,
    "hoodie.table.name": "their_prices",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.datasource.write.precombine.field": "ingested_at",
    "hoodie.write.table.version": "6",
}


def _staged_commits(spark, staging_uri: str) -> list:
    """Our ingestion's rows of one staging table, one DataFrame per commit it made."""
    df = spark.read.format("hudi").load(staging_uri)
    instants = sorted(r[0] for r in df.select("_hoodie_commit_time").distinct().collect())
    keep = [c for c in df.columns if not c.startswith("_hoodie_")]
    return [df.where(df._hoodie_commit_time == i).select(*keep) for i in instants]


def _write(frame, uri: str, options: dict[str, str], operation: str) -> None:
    writer = frame.write.format("hudi").options(**options)
    writer.option("hoodie.datasource.write.operation", operation).mode("append").save(uri)


def _overwrite_one_partition(spark, prices_uri: str) -> None:
    """insert_overwrite of one partition with its own rows (a rewrite, as a compaction job
    or a backfill would do): a replacecommit; no row changes."""
    df = spark.read.format("hudi").load(prices_uri)
    part = df.select("symbol_prefix").first()[0]
    keep = [c for c in df.columns if not c.startswith("_hoodie_")]
    rows = df.where(df.symbol_prefix == part).select(*keep)
    rows = spark.createDataFrame(rows.collect(), rows.schema)  # detach from the table
    _write(rows, prices_uri, PRICES, "insert_overwrite")


def _cluster(spark, uri: str) -> None:
    spark.sql(
        f"CALL run_clustering(path => '{uri}', order => 'ingested_at', options => "
        "'hoodie.metadata.enable=false,hoodie.clustering.plan.strategy.small.file.limit="
        "104857600')"
    ).collect()


def _drain(lakehouse_settings, spark, instance, sources_seen: dict[str, set[str]]) -> int:
    """Sensor ticks, each launched plan run by the runner, until a tick launches nothing."""
    hudi_meta = HudiMetadataResource.for_settings(load_settings())
    lake = lakehouse_settings.lakehouse
    runner = JobRunner(spark, lake)
    runs = 0
    for _ in range(40):
        now_us = int(time.time() * 1_000_000)
        _, requests = evaluate_tick(hudi_meta, instance, SchedulerSettings(k=3), now_us)
        if not requests:
            return runs
        for request in requests:
            plan = RunPlan.from_tags(request.tags, request.run_config)
            assert plan is not None
            sources_seen.setdefault(plan.asset, set()).update(plan.arrival_sources)
            spec = JOBS[plan.asset]
            resolved = resolve_run(spec, list(plan.files), plan.cutoff_us, lake.metadata)
            if not resolved.nothing_to_do:
                runner.run(spec, resolved)
                runs += 1
    raise AssertionError("the sensor kept launching runs after 40 ticks")


def test_sensor_schedules_external_tables_to_the_oracle(spark, tmp_path, monkeypatch):
    staging = tmp_path / "staging"
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(staging / "tables"))
    monkeypatch.setenv("FRESHNESS_LANDING", str(staging / "landing"))
    feeder = StreamFeeder(spark, load_settings(), seed=21)
    feeder.land(3)
    feeder.ingest()

    theirs = tmp_path / "theirs"
    trades_uri, prices_uri = str(theirs / "trades"), str(theirs / "prices")
    _copy_new_commits(spark, feeder, trades_uri, prices_uri)
    declaration = tmp_path / "inputs.toml"
    declaration.write_text(
        f'[inputs.trade_raw]\nuri = "{trades_uri}"\n\n'
        f'[inputs.price_raw]\nuri = "{prices_uri}"\narrival_column = "ingested_at"\n'
    )
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "tables"))
    monkeypatch.setenv("FRESHNESS_INPUTS", str(declaration))
    settings = load_settings()
    # company_master is ours in the new lakehouse (a dimension, not a declared input).
    StreamFeeder(spark, settings, seed=21)

    trades_meta = settings.lakehouse.metadata("trade_raw")
    prices_meta = settings.lakehouse.metadata("price_raw")
    assert trades_meta.external and trades_meta.is_merge_on_read
    assert prices_meta.table_version == 6 and trades_meta.table_version == 8
    assert any(w.is_log for c in trades_meta.commits() for w in c.written), "no log files"
    assert all(c.arrival_range_us is None for c in trades_meta.commits())  # none of our keys

    seen: dict[str, set[str]] = {}
    with dg.instance_for_test() as instance:
        first = _drain(settings, spark, instance, seen)
        assert first > 0
        # More of the stream, then a rewrite and a clustering of the external prices.
        feeder.land(2)
        feeder.ingest()
        _copy_new_commits(spark, feeder, trades_uri, prices_uri)
        _overwrite_one_partition(spark, prices_uri)
        _cluster(spark, prices_uri)
        after = HudiTableMetadata(prices_uri, "ingested_at", external=True)
        actions = [c.action for c in after.commits()]
        assert actions.count("replacecommit") >= 2, actions  # the overwrite and clustering
        second = _drain(settings, spark, instance, seen)
        assert second > 0
        # A rewrite and a clustering hold old arrivals but are not a regression.
        assert after.arrival_regressions() == []

    assert seen["trade_aggr"] == {SOURCE_COMPLETION}
    assert seen["price_aggr"] == {SOURCE_FOOTER}
    # A job sees its inputs up to the smallest of their watermarks (METHOD 5.2), and the two
    # external tables' clocks end apart: the aggregates have all of their input, the joined
    # tables everything up to the earlier of the two.
    lake = settings.lakehouse
    raw_marks = [lake.metadata(t).watermark_us() for t in ("price_raw", "trade_raw")]
    joined_cap = min(raw_marks)
    assert lake.metadata("trade_aggr").watermark_us() == raw_marks[1]
    assert lake.metadata("price_aggr").watermark_us() == raw_marks[0]
    everything = batch_recompute(spark, settings.table_uri, tmp_path / "all", lake.metadata)
    capped = batch_recompute(
        spark, settings.table_uri, tmp_path / "capped", lake.metadata, joined_cap
    )
    for job in ORDER:
        joined = job not in ("price_aggr", "trade_aggr")
        if joined:
            assert lake.metadata(job).watermark_us() == joined_cap, job
        expected = (capped if joined else everything)[job]
        missing, extra, examples = differences(spark, expected, settings.table_uri(job))
        assert (missing, extra) == (0, 0), f"{job}: {missing} missing, {extra} extra: {examples}"

    # Their writer then stamps a commit an hour back: its rows fall below what the jobs
    # already read, which the sensor must say rather than skip them silently.
    late = spark.read.format("hudi").load(prices_uri).limit(5)
    keep = [c for c in late.columns if not c.startswith("_hoodie_")]
    late = late.select(*keep).withColumn("event_id", F.concat(F.col("event_id"), F.lit("-late")))
    late = late.withColumn("ingested_at", F.expr("current_timestamp() - INTERVAL 1 HOUR"))
    _write(late, prices_uri, PRICES, "insert")
    regressions = HudiTableMetadata(prices_uri, "ingested_at", external=True).arrival_regressions()
    newest = HudiTableMetadata(prices_uri, "ingested_at", external=True).latest_commit()
    assert [r.instant for r in regressions] == [newest.instant]
    warnings = arrival_warnings(HudiMetadataResource.for_settings(load_settings()))
    assert len(warnings) == 1 and f"price_raw: commit {newest.instant}" in warnings[0]


def _copy_new_commits(spark, feeder: StreamFeeder, trades_uri: str, prices_uri: str) -> None:
    """Our ingestion's staging commits not yet copied, each as one plain Hudi write into the
    external tables (trades without arrival_ts, prices with it renamed): the rows are ours,
    only the writer differs."""
    root = feeder.settings.lakehouse.root
    for table, uri, options in (
        ("trade_raw", trades_uri, TRADES),
        ("price_raw", prices_uri, PRICES),
    ):
        try:
            copied = spark.read.format("hudi").load(uri).select("event_id")
        except Exception:  # the external table does not exist yet
            copied = None
        for frame in _staged_commits(spark, root.child(table).spark):
            new = frame if copied is None else frame.join(copied, "event_id", "left_anti")
            if not new.limit(1).count():
                continue
            if table == "trade_raw":
                new = new.drop("arrival_ts")
            else:
                # Their writer stamps its own ingestion time (wall clock, like the
                # completion times the trades' arrivals come from: one clock for all inputs).
                new = new.drop("arrival_ts").withColumn("ingested_at", F.current_timestamp())
            _write(new, uri, options, "upsert")


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_version_9_tables_written_by_others_resolve_their_arrivals(spark, tmp_path, table_type):
    """Hudi 1.1's own table version (9), as a plain writer leaves it: with an arrival
    column, each commit's range is its files' footer min/max; the merge-on-read table's
    second write goes to a log file, so only its completion time bounds it (from above)."""
    uri = str(tmp_path / table_type.lower())
    options = {
        **PLAIN,
        "hoodie.table.name": f"theirs_{table_type.lower()}",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.precombine.field": "ingested_at",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": "1",
    }
    stamps = ("2026-11-23 10:00:00", "2026-11-23 10:00:05", "2026-11-23 10:01:00")
    for first, (low, high) in enumerate([(stamps[0], stamps[1]), (stamps[2], stamps[2])]):
        rows = spark.createDataFrame(
            [(f"e{first}-{i}", "ABC", "A", ts) for i, ts in enumerate((low, high))],
            "event_id string, symbol string, symbol_prefix string, ingested_at string",
        ).withColumn("ingested_at", F.to_timestamp("ingested_at"))
        _write(rows, uri, options, "upsert")
    meta = HudiTableMetadata(uri, "ingested_at", external=True)
    assert meta.table_version == 9
    first, second = meta.commits()
    us = [_utc_us(s) for s in stamps]
    assert meta.commit_arrival(first) == (us[0], us[1], SOURCE_FOOTER)
    if table_type == "COPY_ON_WRITE":
        # The upsert rewrote the one file group with the first commit's rows in it: its
        # footer starts at theirs (conservative for pending ranges). The regression check
        # below must look at the commit's own rows, or this would count as one.
        assert meta.commit_arrival(second) == (us[0], us[2], SOURCE_FOOTER)
    else:
        assert all(w.is_log for w in second.written)
        assert meta.commit_arrival(second) == (None, meta.completion_us(second), SOURCE_COMPLETION)
    pending = meta.pending_files(us[1])  # the first commit consumed
    assert len(pending) == 1 and pending[0].pending_max_us >= us[1]
    assert meta.arrival_regressions() == []


def _utc_us(text: str) -> int:
    from datetime import datetime

    parsed = datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1_000_000)
