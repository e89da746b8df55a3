"""Your own jobs on a table someone else writes: a merge-on-read `account_txns` with change
data capture, written by plain Spark (none of this project's code in the writer): inserts,
amounts corrected, transactions moved to another minute, and deletes, including every
transaction of some account-minutes. The two declared jobs of `jobs_sql/accounts/` are
copied into a temporary folder (FRESHNESS_JOBS), the table is declared in FRESHNESS_INPUTS
(`deletes = true`, arrival by commit), and the real Dagster daemon runs the freshness
sensor. After each phase of writes drains, both tables equal their batch recomputation
from the input as it then is: a moved or deleted transaction leaves its old minute, and an
account-minute (and a region-minute) left empty is deleted downstream."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from assets_tests.conftest import child_env
from freshness_pipeline.catalog.jobs import load_jobs
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.execution.batch_oracle import batch_recompute, differences
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.runtime.stack import stop_child

pytestmark = pytest.mark.spark

# Their writer: plain Spark, merge-on-read (updates go to log files), table version 8.
THEIRS = {
    "hoodie.table.name": "account_txns",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "txn_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "ingested_at",
    "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": "2",
    "hoodie.write.table.version": "8",
    "hoodie.metadata.enable": "false",
    # their CDC log: the old version of every updated or deleted row
    "hoodie.table.cdc.enabled": "true",
    "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER",
}
ACCOUNTS = [(f"acct-{i:02d}", "EMEA" if i % 3 else "APAC") for i in range(12)]
START = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)
MINUTE_4 = START + timedelta(minutes=4)


def transactions(batch: int, count: int) -> list[tuple]:
    """`count` transactions over the accounts and the first five minutes."""
    rows = []
    for n in range(count):
        account, region = ACCOUNTS[(batch * 7 + n) % len(ACCOUNTS)]
        txn_ts = START + timedelta(seconds=(batch * 37 + n * 11) % 300)
        amount = Decimal(f"{(n * 13 + batch) % 500}.{n % 100:02d}")
        rows.append((f"t{batch}-{n}", account, region, amount, txn_ts))
    return rows


def write(spark, uri: str, rows: list[tuple], operation: str = "upsert") -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        rows,
        "txn_id string, account_id string, region string, amount decimal(18,2), txn_ts timestamp",
    ).withColumn("ingested_at", F.current_timestamp())
    frame.write.format("hudi").options(**THEIRS).option(
        "hoodie.datasource.write.operation", operation
    ).mode("append").save(uri)


def watermark(lakehouse, table: str) -> int | None:
    try:
        return lakehouse.metadata(table).watermark_us()
    except TableNotFound:
        return None


def drained(lake, jobs, theirs: str, daemon, log: Path) -> None:
    """Waits until every job's watermark is the input's latest arrival."""
    final = HudiTableMetadata(theirs, None, external=True).watermark_us()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if all(watermark(lake, job) == final for job in jobs):
            return
        assert daemon.poll() is None, log.read_text()[-3000:]
        time.sleep(3)
    raise AssertionError(
        f"not drained: { {j: watermark(lake, j) for j in jobs} } vs {final}\n"
        + log.read_text()[-3000:]
    )


def equal_to_batch(spark, lake, jobs_dir: Path, scratch: Path) -> dict:
    """Both tables against their batch recomputation from the input as it is; returns the
    recomputed frames."""
    jobs = load_jobs(jobs_dir)
    expected = batch_recompute(spark, lake.table_uri, scratch, lake.metadata, jobs=jobs)
    for job in jobs:
        missing, extra, examples = differences(spark, expected[job], lake.table_uri(job))
        assert (missing, extra) == (0, 0), f"{job}: {missing} missing, {extra} extra: {examples}"
    return expected


def keys(frame, *columns: str) -> set[tuple]:
    return {tuple(r) for r in frame.select(*columns).collect()}


def test_two_declared_jobs_over_a_foreign_merge_on_read_table(spark, tmp_path, spark_service):
    theirs = str(tmp_path / "bank" / "account_txns")
    first = transactions(0, 60)
    write(spark, theirs, first)
    jobs_dir = tmp_path / "jobs"
    shutil.copytree(PROJECT_ROOT / "jobs_sql" / "accounts", jobs_dir)
    inputs = tmp_path / "inputs.toml"
    inputs.write_text(f'[inputs.account_txns]\nuri = "{theirs}"\ndeletes = true\n')
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env_settings = {
        "FRESHNESS_LAKEHOUSE": str(tmp_path / "tables"),
        "FRESHNESS_LANDING": str(tmp_path / "landing"),
        "FRESHNESS_JOBS": str(jobs_dir),
        "FRESHNESS_INPUTS": str(inputs),
        "FRESHNESS_TICK_S": "5",
        "FRESHNESS_CLUSTERING_TABLES": "none",
    }
    settings = load_settings(env_settings)
    assert list(settings.jobs) == ["account_minute", "region_minute"]
    env = child_env(settings)
    env.update(env_settings)
    env.update({"DAGSTER_HOME": str(home), "FRESHNESS_SPARK_REMOTE": spark_service.url})
    check = subprocess.run(
        [sys.executable, "-m", "freshness_pipeline.cli", "check"],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    log = tmp_path / "daemon.log"
    daemon = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "dagster-daemon"),
            "run",
            "-w",
            str(PROJECT_ROOT / "workspace.yaml"),
        ],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lake = settings.lakehouse
    try:
        # Phase 1: more transactions while the jobs run, then amounts corrected in place.
        time.sleep(20)
        write(spark, theirs, transactions(1, 40))
        time.sleep(10)
        corrected = [(t, a, r, amount + Decimal("1.00"), ts) for t, a, r, amount, ts in first[:20]]
        write(spark, theirs, corrected)
        drained(lake, settings.jobs, theirs, daemon, log)
        before = equal_to_batch(spark, lake, jobs_dir, tmp_path / "oracle1")

        # Phase 2: transactions moved two minutes on (from minutes 0-1 to 2-3), and deletes
        # of every transaction in minute 4 (09:04): whole account-minutes and region-minutes
        # left empty.
        moved = [
            (t, a, r, amount, ts + timedelta(minutes=2))
            for t, a, r, amount, ts in first[20:40]
            if ts < MINUTE_4 - timedelta(minutes=2)
        ]
        assert moved, "the stream has transactions in minutes 0-1 to move"
        write(spark, theirs, moved)
        emptied = [row for row in first + transactions(1, 40) if row[4] >= MINUTE_4]
        assert emptied, "the stream has transactions in minute 4"
        write(spark, theirs, emptied, operation="delete")
        drained(lake, settings.jobs, theirs, daemon, log)
    finally:
        stop_child("dagster-daemon", daemon, timeout=60)
    after = equal_to_batch(spark, lake, jobs_dir, tmp_path / "oracle2")
    in_minute_4 = f"minute = timestamp_micros({int(MINUTE_4.timestamp() * 1_000_000)})"
    # minute 4 had rows after phase 1 and has none now: they were deleted, not left behind
    assert before["region_minute"].where(in_minute_4).count() > 0
    assert after["region_minute"].where(in_minute_4).count() == 0
    assert keys(before["account_minute"], "minute", "account_id") != keys(
        after["account_minute"], "minute", "account_id"
    )
    # our account_minute keeps its changes for region_minute, as account_txns does for it
    assert HudiTableMetadata(lake.table("account_minute")).cdc_enabled
