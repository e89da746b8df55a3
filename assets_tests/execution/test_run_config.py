"""Run configs are checked against real Hudi metadata before Spark starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets_tests.execution.conftest import StreamFeeder
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.execution.run_config import RunConfigError, parse_cutoff, resolve_run
from freshness_pipeline.execution.runner import JobRunner
from freshness_pipeline.hudi.lakehouse import Lakehouse

TRADE_AGGR = JOBS["trade_aggr"]


def test_parse_cutoff_accepts_micros_and_iso():
    assert parse_cutoff("1700000000000000") == 1_700_000_000_000_000
    assert parse_cutoff("2023-11-14T22:13:20Z") == 1_700_000_000_000_000
    assert parse_cutoff("2023-11-14T22:13:20.5") == 1_700_000_000_500_000
    assert parse_cutoff(None) is None and parse_cutoff(" ") is None
    with pytest.raises(RunConfigError, match="neither epoch microseconds nor"):
        parse_cutoff("yesterday")


@pytest.fixture(scope="module")
def fed(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("runcfg")
    settings = Settings(
        Lakehouse.parse(str(root / "tables")), root / "landing", Path(".cache/jars"), "local[2]"
    )
    feeder = StreamFeeder(spark, settings, seed=5)
    feeder.land(3)
    feeder.ingest()
    return feeder


@pytest.mark.spark
def test_missing_input_table_is_named(fed):
    with pytest.raises(RunConfigError, match="input table price_aggr does not exist"):
        resolve_run(JOBS["market_features"], [], None, fed.meta)


@pytest.mark.spark
def test_refuses_files_that_are_not_its_inputs(fed, tmp_path):
    price_file = fed.meta("price_raw").latest_file_slices()[0]
    price_uri = fed.meta("price_raw").file_uri(price_file.path)
    trade_root = fed.settings.table_uri("trade_raw")
    outside = tmp_path / "x_0-1-2_20240101000000000.parquet"
    cases = {
        price_uri: "not a file of trade_aggr's input tables",
        "/etc/passwd": "not a file of trade_aggr's input tables",
        f"{trade_root}/A/../../price_raw/{price_file.path}": "not a file of trade_aggr's input",
        f"{trade_root}/.hoodie/hoodie.properties": "not a Hudi base file",
        f"{trade_root}/A/nosuchgroup-0_0-1-2_20240101000000000.parquet": "not a current or",
        str(outside): "not a file of trade_aggr's input tables",
    }
    for path, message in cases.items():
        with pytest.raises(RunConfigError, match=message):
            resolve_run(TRADE_AGGR, [path], None, fed.meta)


@pytest.mark.spark
def test_refuses_cutoffs_outside_t_done_and_cap(fed):
    cap = fed.meta("trade_raw").watermark_us()
    with pytest.raises(RunConfigError, match="above what the inputs hold"):
        resolve_run(TRADE_AGGR, [], cap + 1, fed.meta)
    resolved = resolve_run(TRADE_AGGR, [], cap, fed.meta)
    assert resolved.cutoff_us == cap and resolved.t_done_us is None
    with pytest.raises(RunConfigError, match="neither epoch"):
        resolve_run(TRADE_AGGR, [], "soon", fed.meta)


@pytest.mark.spark
def test_refuses_a_subset_that_leaves_out_pending_arrivals(fed):
    pending = fed.meta("trade_raw").pending_files(None)
    cap = fed.meta("trade_raw").watermark_us()
    needed = [p.uri for p in pending if p.pending_min_us <= cap]
    assert len(needed) > 1
    with pytest.raises(RunConfigError, match=r"leaves out 1 pending file"):
        resolve_run(TRADE_AGGR, needed[1:], cap, fed.meta)
    earliest = min(p.pending_max_us for p in pending)
    early = [p.uri for p in pending if p.pending_min_us <= earliest]
    resolved = resolve_run(TRADE_AGGR, early, earliest, fed.meta)
    assert resolved.file_count == len(early) < len(pending)


@pytest.mark.spark
def test_rewritten_file_resolves_to_current_slice(spark, fed):
    runner = JobRunner(spark, fed.settings.table_uri)
    runner.run(TRADE_AGGR, resolve_run(TRADE_AGGR, [], None, fed.meta))
    runner.run(JOBS["price_aggr"], resolve_run(JOBS["price_aggr"], [], None, fed.meta))
    planned = [p.uri for p in fed.meta("trade_aggr").pending_files(None)]
    # more data: trade_aggr rewrites its (small) file groups in place
    fed.land(2)
    fed.ingest()
    runner.run(TRADE_AGGR, resolve_run(TRADE_AGGR, [], None, fed.meta))
    cap = fed.meta("price_aggr").watermark_us()
    price_files = [p.uri for p in fed.meta("price_aggr").pending_files(None)]
    resolved = resolve_run(JOBS["market_features"], planned + price_files, cap, fed.meta)
    assert resolved.resolved_moves, "expected the planned trade_aggr files to have moved"
    for given, current in resolved.resolved_moves:
        assert given != current and Path(current).exists()
    report = runner.run(JOBS["market_features"], resolved)
    assert report.rows_written > 0


@pytest.mark.spark
def test_replaced_file_group_is_replanned(spark, fed):
    """Clustering replaces the raw file groups a plan named: the run re-plans that table
    instead of crashing or silently skipping data."""
    fed.land(2)
    fed.ingest()
    t_done = fed.meta("trade_aggr").watermark_us()
    planned = [p.uri for p in fed.meta("trade_raw").pending_files(t_done)]
    assert planned
    raw = fed.settings.table_uri("trade_raw")
    spark.sql(f"call run_clustering(path => '{raw}', order => 'arrival_ts')").collect()
    assert fed.meta("trade_raw").commits()[-1].action == "replacecommit"
    resolved = resolve_run(TRADE_AGGR, planned, None, fed.meta)
    assert resolved.replanned_tables == ("trade_raw",)
    assert resolved.file_count >= 1
    assert all(p.uri not in planned for p in resolved.files["trade_raw"])
    report = JobRunner(spark, fed.settings.table_uri).run(TRADE_AGGR, resolved)
    assert report.rows_scanned > 0
    assert fed.meta("trade_aggr").watermark_us() == fed.meta("trade_raw").watermark_us()


@pytest.mark.spark
def test_the_watermark_filter_reaches_the_parquet_scan(spark, fed):
    """A run's delta is its arrival range: Spark pushes that filter into the Parquet scan
    (row groups outside it are skipped on their statistics), not after a full read."""
    fed.land(1)  # new rows past trade_aggr's watermark, whatever earlier tests ran
    fed.ingest()
    resolved = resolve_run(TRADE_AGGR, [], None, fed.meta)
    assert resolved.files["trade_raw"]
    JobRunner(spark, fed.settings.table_uri)._delta("trade_raw", resolved).createOrReplaceTempView(
        "delta_plan"
    )
    spark.conf.set("spark.sql.maxMetadataStringLength", "10000")  # the plan's lines whole
    try:
        plan = spark.sql("EXPLAIN SELECT * FROM delta_plan").collect()[0][0]
    finally:
        spark.conf.unset("spark.sql.maxMetadataStringLength")
        spark.catalog.dropTempView("delta_plan")
    scans = [line for line in plan.splitlines() if "FileScan parquet" in line]
    assert len(scans) == 1, plan
    pushed = scans[0].split("PushedFilters: [", 1)[1].split("]", 1)[0]
    assert "GreaterThan(arrival_ts," in pushed, scans[0]
    assert "LessThanOrEqual(arrival_ts," in pushed, scans[0]
