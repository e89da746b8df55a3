"""Your own jobs on a table someone else writes: a merge-on-read `account_txns` written by
plain Spark (none of this project's code in the writer: inserts, then amounts corrected),
the two declared jobs of `jobs_sql/accounts/` copied into a temporary folder
(FRESHNESS_JOBS), the table declared in FRESHNESS_INPUTS with its arrival column, and the
real Dagster daemon with the freshness sensor. After the writer stops, both tables equal
their batch recomputation from the final input."""

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
from freshness_pipeline.config.settings import PROJECT_ROOT, load_settings
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.jobs.batch_oracle import batch_recompute, differences
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
}
ACCOUNTS = [(f"acct-{i:02d}", "EMEA" if i % 3 else "APAC") for i in range(12)]
START = datetime(2026, 11, 27, 9, 0, tzinfo=UTC)


def transactions(batch: int, count: int) -> list[tuple]:
    """`count` transactions over the accounts and the first five minutes."""
    rows = []
    for n in range(count):
        account, region = ACCOUNTS[(batch * 7 + n) % len(ACCOUNTS)]
        txn_ts = START + timedelta(seconds=(batch * 37 + n * 11) % 300)
        amount = Decimal(f"{(n * 13 + batch) % 500}.{n % 100:02d}")
        rows.append((f"t{batch}-{n}", account, region, amount, txn_ts))
    return rows


def write(spark, uri: str, rows: list[tuple]) -> None:
    from pyspark.sql import functions as F

    frame = spark.createDataFrame(
        rows,
        "txn_id string, account_id string, region string, amount decimal(18,2), txn_ts timestamp",
    ).withColumn("ingested_at", F.current_timestamp())
    frame.write.format("hudi").options(**THEIRS).option(
        "hoodie.datasource.write.operation", "upsert"
    ).mode("append").save(uri)


def watermark(lakehouse, table: str) -> int | None:
    try:
        return lakehouse.metadata(table).watermark_us()
    except TableNotFound:
        return None


def test_two_declared_jobs_over_a_foreign_merge_on_read_table(spark, tmp_path, spark_service):
    theirs = str(tmp_path / "bank" / "account_txns")
    write(spark, theirs, transactions(0, 60))
    jobs_dir = tmp_path / "jobs"
    shutil.copytree(PROJECT_ROOT / "jobs_sql" / "accounts", jobs_dir)
    inputs = tmp_path / "inputs.toml"
    inputs.write_text(f'[inputs.account_txns]\nuri = "{theirs}"\narrival_column = "ingested_at"\n')
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
    daemon = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "dagster-daemon"),
            "run",
            "-w",
            str(PROJECT_ROOT / "workspace.yaml"),
        ],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=(tmp_path / "daemon.log").open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lake = settings.lakehouse
    try:
        # More transactions while the jobs run, then corrections of earlier amounts.
        time.sleep(20)
        write(spark, theirs, transactions(1, 40))
        time.sleep(15)
        corrected = [
            (t, a, r, amount + Decimal("1.00"), ts) for t, a, r, amount, ts in transactions(0, 20)
        ]
        write(spark, theirs, corrected)
        final = HudiTableMetadata(theirs, "ingested_at", external=True).watermark_us()
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            if all(watermark(lake, job) == final for job in settings.jobs):
                break
            assert daemon.poll() is None, (tmp_path / "daemon.log").read_text()[-3000:]
            time.sleep(3)
        else:
            raise AssertionError(
                f"not drained: { {j: watermark(lake, j) for j in settings.jobs} } vs {final}\n"
                + (tmp_path / "daemon.log").read_text()[-3000:]
            )
    finally:
        stop_child("dagster-daemon", daemon, timeout=60)
    expected = batch_recompute(
        spark, lake.table_uri, tmp_path / "oracle", lake.metadata, jobs=load_jobs(jobs_dir)
    )
    for job in settings.jobs:
        missing, extra, examples = differences(spark, expected[job], lake.table_uri(job))
        assert (missing, extra) == (0, 0), f"{job}: {missing} missing, {extra} extra: {examples}"
    # the corrections reached the sums: account-minutes hold the corrected amounts
    assert expected["account_minute"].count() > 0
