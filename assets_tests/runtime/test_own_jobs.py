"""A newcomer's own pipeline, end to end, as docs/JOBS.md tells it: someone else's
merge-on-read table (table version 9, a metadata table with column stats, upserts into log
files), declared in FRESHNESS_INPUTS; a folder of two recompute_touched_groups jobs over it
(per account per day, with `groups`, and per region per day); `freshness check FOLDER`
passes; the stack runs with only these jobs (no market stream, no company master, no
clustering), the sensor runs both side by side through the Spark service; a commit of
upserts lands while it runs; both tables end equal to a recomputation from the table's
snapshot, and nothing is written outside the lakehouse and the state folder."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest

from freshness_pipeline import cli
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.runtime.stack import Stack, StackConfig

pytestmark = pytest.mark.spark

DRAIN_TIMEOUT_S = 300

PER_ACCOUNT = """/* freshness
description: Per account per day of transaction time, the summed amount and the count.
inputs: [txns]
key: [day, account_id]
event_time: day
merge: recompute_touched_groups
groups: {day: "to_date(txn_datetime)"}
*/
SELECT account_id, to_date(txn_datetime) AS day, CAST(sum(amount) AS DOUBLE) AS amount,
       count(*) AS txns, max(arrival_ts) AS arrival_ts
FROM group_rows
GROUP BY account_id, to_date(txn_datetime)
"""
PER_REGION = """/* freshness
description: Per region per day of transaction time, the summed amount.
inputs: [txns]
key: [day, region]
event_time: day
merge: recompute_touched_groups
groups: {day: "to_date(txn_datetime)"}
*/
SELECT region, to_date(txn_datetime) AS day, CAST(sum(amount) AS DOUBLE) AS amount,
       max(arrival_ts) AS arrival_ts
FROM group_rows
GROUP BY region, to_date(txn_datetime)
"""
THEIRS = {
    "hoodie.table.name": "their_txns",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.datasource.write.recordkey.field": "txn_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "txn_datetime",
    "hoodie.index.type": "BUCKET",  # upserts go to log files
    "hoodie.bucket.index.num.buckets": "1",
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
}


def _write(spark, uri: str, rows: list[tuple]) -> None:
    frame = spark.createDataFrame(
        rows, "txn_id string, account_id string, region string, amount double, at string"
    ).selectExpr(
        "txn_id", "account_id", "region", "amount", "CAST(at AS TIMESTAMP) AS txn_datetime"
    )
    frame.write.format("hudi").options(**THEIRS).option(
        "hoodie.datasource.write.operation", "upsert"
    ).mode("append").save(uri)


def _rows(first: int, count: int, amount: float) -> list[tuple]:
    regions = ("eu", "us", "apac")
    return [
        (f"t{i}", f"a{i % 5}", regions[i % 3], amount + i, f"2026-11-2{i % 4} 0{i % 10}:00:00")
        for i in range(first, first + count)
    ]


def _expected(spark, uri: str) -> tuple[set, set]:
    """Both jobs' answers recomputed from the table's snapshot, whole."""
    spark.read.format("hudi").load(uri).createOrReplaceTempView("their_snapshot")
    account = spark.sql(
        "SELECT account_id, to_date(txn_datetime) AS day, round(sum(amount), 6), count(*) "
        "FROM their_snapshot GROUP BY 1, 2"
    ).collect()
    region = spark.sql(
        "SELECT region, to_date(txn_datetime) AS day, round(sum(amount), 6) "
        "FROM their_snapshot GROUP BY 1, 2"
    ).collect()
    return {tuple(r) for r in account}, {tuple(r) for r in region}


def _ours(spark, uri: str, columns: str) -> set:
    frame = spark.read.format("hudi").load(uri)
    return {tuple(r) for r in frame.selectExpr(*columns.split(";")).collect()}


def _caught_up(lakehouse) -> bool:
    try:
        mark = lakehouse.metadata("txns").watermark_us()
        return all(
            lakehouse.metadata(j).watermark_us() == mark for j in ("per_account", "per_region")
        )
    except TableNotFound:
        return False


def _drain(stack: Stack, lakehouse) -> bool:
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while time.monotonic() < deadline:
        stack.supervise()
        if _caught_up(lakehouse):
            return True
        time.sleep(2)
    return False


def test_a_newcomers_jobs_over_a_foreign_table_run_alone_to_the_exact_answer(
    spark, tmp_path, monkeypatch, capsys
):
    theirs = str(tmp_path / "theirs" / "txns")
    _write(spark, theirs, _rows(0, 30, 10.0))
    _write(spark, theirs, _rows(20, 20, 50.0))  # upserts t20-t29, inserts t30-t39
    assert (Path(theirs) / ".hoodie" / "metadata" / "column_stats").is_dir()
    mine = tmp_path / "my_jobs"
    mine.mkdir()
    (mine / "per_account.sql").write_text(PER_ACCOUNT)
    (mine / "per_region.sql").write_text(PER_REGION)
    inputs = tmp_path / "inputs.toml"
    inputs.write_text(f'[inputs.txns]\nuri = "{theirs}"\n')
    state = tmp_path / "state"
    monkeypatch.setenv("FRESHNESS_INPUTS", str(inputs))
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "lake"))
    monkeypatch.setenv("FRESHNESS_STATE_DIR", str(state))

    # check FOLDER with FRESHNESS_JOBS unset: the folder's jobs, against the real table
    monkeypatch.delenv("FRESHNESS_JOBS", raising=False)
    assert cli.main(["check", str(mine)]) == 0, capsys.readouterr()
    assert "2 job(s) checked, no problem" in capsys.readouterr().out

    monkeypatch.setenv("FRESHNESS_JOBS", str(mine))
    settings = load_settings()
    assert cli.jobs_reading_the_market(settings) == ""  # so the demo runs them alone
    before = set(PROJECT_ROOT.iterdir())
    home = tmp_path / "dagster_home"
    config = StackConfig(
        webserver=False,
        dagster_home=home,
        market=False,
        env={"FRESHNESS_CLUSTERING_TABLES": "none"},
    )
    stack = Stack(config, settings)
    stack.start()
    try:
        first = _drain(stack, settings.lakehouse)
        if first:
            # amounts corrected in place (the same groups: without CDC a row moved to
            # another group could not be followed, docs/JOBS.md) and a new transaction
            changed = [(*row[:3], 1.5, row[4]) for row in _rows(0, 5, 0.0)]
            _write(spark, theirs, [*changed, ("t99", "a9", "eu", 7.0, "2026-11-21 12:00:00")])
        second = first and _drain(stack, settings.lakehouse)
        children = [name for name, _, _ in stack.children]
    finally:
        stack.stop()
    log = (state / "logs" / "dagster.log").read_text()[-3000:] if (state / "logs").exists() else ""
    assert first and second, log
    assert not {"ingest", "replay"} & set(children), children  # no market stream
    assert (state / "logs" / "spark-service.log").exists()  # logs under the state folder
    assert set(PROJECT_ROOT.iterdir()) <= before, set(PROJECT_ROOT.iterdir()) - before

    account, region = _expected(spark, theirs)
    lake = tmp_path / "lake"
    assert (
        _ours(spark, str(lake / "per_account"), "account_id;day;round(amount, 6);txns") == account
    )
    assert _ours(spark, str(lake / "per_region"), "region;day;round(amount, 6)") == region
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
        assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [
            (r.run_id, r.status) for r in runs
        ]
        # no clustering and nothing but the two jobs
        assert {k.to_user_string() for r in runs for k in r.asset_selection or ()} <= {
            "per_account",
            "per_region",
        }
