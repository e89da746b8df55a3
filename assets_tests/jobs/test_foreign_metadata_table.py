"""Someone else's merge-on-read table with a metadata table and column stats (Hudi's
defaults for a table version 9 writer that turns the index on), read by two runs side by
side through the shared Spark service, one Connect session each, as two run workers do.

Hudi's data skipping loads the column stats by persisting and unpersisting a Dataset
(HoodieCatalystUtils.withPersistedDataset under ColumnStatsIndexSupport.loadTransposed);
two such loads at once in one Spark application deadlocked in Spark's CacheManager (each
execute thread holding one CachedRDDBuilder's monitor and waiting for the other's), and
both runs hung until their workers were killed. external_read turns data skipping off for
inputs; this test reads through it, side by side, round after round."""

from __future__ import annotations

import os
import threading

import pytest

from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.jobs.external_read import read_external

pytestmark = pytest.mark.spark

ROUNDS = 2
TIMEOUT_S = 240  # a round takes about 15 s; a deadlock never ends

WITH_STATS = {
    "hoodie.table.name": "their_txns",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "txn_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "txn_datetime",
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.column.stats.column.list": "txn_id,account_id,amount,txn_datetime",
}


def write_txns_with_column_stats(spark, uri: str) -> None:
    """Three commits: inserts, then upserts that change amounts and move one row."""
    schema = (
        "txn_id string, account_id string, region string, amount double, txn_datetime timestamp"
    )
    batches = [
        [
            (
                f"t{i}",
                f"a{i % 4}",
                "eu" if i % 2 else "us",
                float(i),
                f"2026-11-2{i % 3} 10:00:0{i % 10}",
            )
            for i in range(12)
        ],  # fmt: skip
        [
            ("t1", "a1", "eu", 100.0, "2026-11-21 11:00:00"),
            ("t12", "a0", "us", 5.0, "2026-11-22 09:00:00"),
        ],
        [("t2", "a2", "eu", 7.5, "2026-11-20 12:00:00")],
    ]
    for rows in batches:
        frame = spark.createDataFrame(rows, schema.replace("timestamp", "string"))
        frame = frame.selectExpr("txn_id", "account_id", "region", "amount",
                                 "CAST(txn_datetime AS TIMESTAMP) AS txn_datetime")  # fmt: skip
        frame.write.format("hudi").options(**WITH_STATS).option(
            "hoodie.datasource.write.operation", "upsert"
        ).mode("append").save(uri)


PER_ACCOUNT = """/* freshness
inputs: [txns]
key: [day, account_id]
event_time: day
merge: recompute_touched_groups
groups: {day: "to_date(txn_datetime)"}
*/
SELECT account_id, to_date(txn_datetime) AS day, CAST(sum(amount) AS DOUBLE) AS amount,
       max(arrival_ts) AS arrival_ts
FROM group_rows GROUP BY account_id, to_date(txn_datetime)
"""


def test_two_runs_read_a_table_with_column_stats_side_by_side(
    spark_service, connect_spark, tmp_path, monkeypatch
):
    """Two jobs over the table, each run in a thread of its own with its own Connect
    session, round after round, each round into a fresh lakehouse (so every run has the
    whole table to read): the runner's own cached views beside Hudi's column stats loads,
    as two run workers have them."""
    # the Connect client's builder: the session's local JVM (the `spark` fixture) would
    # make pyspark.sql.SparkSession refuse a remote one
    from pyspark.sql.connect.session import SparkSession

    from freshness_pipeline.config.settings import load_settings
    from freshness_pipeline.jobs.run_config import resolve_run
    from freshness_pipeline.jobs.runner import JobRunner

    uri = str(tmp_path / "their_txns")
    write_txns_with_column_stats(connect_spark, uri)
    assert (tmp_path / "their_txns" / ".hoodie" / "metadata" / "column_stats").is_dir()
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "per_account.sql").write_text(PER_ACCOUNT)
    (jobs / "per_region.sql").write_text(PER_ACCOUNT.replace("account_id", "region"))
    inputs = tmp_path / "inputs.toml"
    inputs.write_text(f'[inputs.txns]\nuri = "{uri}"\n')
    monkeypatch.setenv("FRESHNESS_JOBS", str(jobs))
    monkeypatch.setenv("FRESHNESS_INPUTS", str(inputs))

    errors: list[BaseException] = []
    done: list[str] = []

    def run(job: str) -> None:
        # a session of its own, as each run worker opens one on the service
        session = SparkSession.builder.remote(spark_service.url).create()
        try:
            for round_ in range(ROUNDS):
                lakehouse = {"FRESHNESS_LAKEHOUSE": str(tmp_path / f"lake{round_}")}
                settings = load_settings({**os.environ, **lakehouse})
                lake, spec = settings.lakehouse, settings.jobs[job]
                files = [p.uri for p in lake.metadata("txns").pending_files(None)]
                cutoff = lake.metadata("txns").watermark_us()
                resolved = resolve_run(spec, files, cutoff, lake.metadata)
                JobRunner(session, lake).run(spec, resolved)
                done.append(job)
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)
        finally:
            session.stop()

    threads = [
        threading.Thread(target=run, args=(job,), daemon=True)
        for job in ("per_account", "per_region")
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT_S)
    hung = [t for t in threads if t.is_alive()]
    assert not hung, f"{len(hung)} of two side-by-side runs still running after {TIMEOUT_S} s"
    assert not errors, errors
    assert sorted(done) == sorted(["per_account", "per_region"] * ROUNDS)
    expected = connect_spark.read.format("hudi").load(uri).selectExpr("account_id").distinct()
    ours = connect_spark.read.format("hudi").load(str(tmp_path / "lake0" / "per_account"))
    assert ours.selectExpr("account_id").distinct().count() == expected.count()


def _hudi_index_log(spark):
    """A StringWriter receiving what Hudi's file index and metadata-table reader log at
    INFO in this local JVM."""
    jvm = spark._jvm
    core, info = jvm.org.apache.logging.log4j.core, jvm.org.apache.logging.log4j.Level.INFO
    writer = jvm.java.io.StringWriter()
    layout = core.layout.PatternLayout.createDefaultLayout()
    appender = core.appender.WriterAppender.createAppender(
        layout, None, writer, "index-probe", False, True
    )
    appender.start()
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    for name in ("org.apache.hudi.HoodieFileIndex", "org.apache.hudi.metadata"):
        logger = core.config.LoggerConfig(name, info, False)
        logger.addAppender(appender, info, None)
        config.addLogger(name, logger)
    context.updateLoggers()
    return writer


def test_a_runs_read_of_someone_elses_table_skips_no_files_by_column_stats(spark, tmp_path):
    """What the deadlock needed, seen in Hudi's own log: a filtered read of the table with
    Hudi's defaults loads its column stats and prunes files by them; the read a run makes
    (external_read) loads none, and returns the same rows."""
    uri = str(tmp_path / "their_txns")
    write_txns_with_column_stats(spark, uri)
    meta = HudiTableMetadata(uri, None, external=True)
    log = _hudi_index_log(spark)
    filtered = "account_id = 'a1'"
    plain = spark.read.format("hudi").load(uri).where(filtered).count()
    # the probe sees the stats when they are read (and here they prune a file)
    assert "metadata table partition column_stats" in log.toString(), log.toString()[-4000:]
    assert "skipping percentage 0.0" not in log.toString()
    log.getBuffer().setLength(0)
    ours = read_external(spark, meta).where(filtered).count()
    assert "column_stats" not in log.toString(), log.toString()[-4000:]
    assert ours == plain > 0
