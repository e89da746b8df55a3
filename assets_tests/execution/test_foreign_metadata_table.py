"""Someone else's table with a metadata table and column stats (Hudi's defaults for a
table version 9 writer that turns the index on), read as a run reads it.

Hudi's data skipping loads the column stats by persisting and unpersisting a Dataset
(HoodieCatalystUtils.withPersistedDataset under ColumnStatsIndexSupport.loadTransposed);
two such loads at once in one Spark application deadlocked in Spark's CacheManager (each
execute thread holding one CachedRDDBuilder's monitor and waiting for the other's), and
both runs hung until their workers were killed. external_read turns data skipping off for
inputs. Two runs side by side over such a table through the service, to the exact answer:
runtime/test_own_jobs.py."""

from __future__ import annotations

import pytest

from freshness_pipeline.execution.external_read import read_external
from freshness_pipeline.hudi.metadata import HudiTableMetadata

pytestmark = pytest.mark.spark

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
        ],
        [
            ("t1", "a1", "eu", 100.0, "2026-11-21 11:00:00"),
            ("t12", "a0", "us", 5.0, "2026-11-22 09:00:00"),
        ],
        [("t2", "a2", "eu", 7.5, "2026-11-20 12:00:00")],
    ]
    for rows in batches:
        frame = spark.createDataFrame(rows, schema.replace("timestamp", "string"))
        frame = frame.selectExpr(
            "txn_id",
            "account_id",
            "region",
            "amount",
            "CAST(txn_datetime AS TIMESTAMP) AS txn_datetime",
        )
        frame.write.format("hudi").options(**WITH_STATS).option(
            "hoodie.datasource.write.operation", "upsert"
        ).mode("append").save(uri)


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
