"""The plain Dagster peer: written without our code (its imports parsed), its definitions
as a Dagster user's (hourly partitions, eager or cron), and its six tables, materialized by
Dagster through dagster-pyspark over real raw Hudi tables, equal to the independent oracle
with the watermark the sampler reads in every commit."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from freshness_pipeline.lab.peers import dagster_plain
from freshness_pipeline.lab.peers.dagster_plain import definitions as plain
from freshness_pipeline.lab.peers.dagster_plain.tables import TABLES
from freshness_pipeline.stream.generator import DEFAULT_START_US

PEER_DIR = Path(dagster_plain.__file__).parent
PEER = "freshness_pipeline.lab.peers.dagster_plain"


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_peer_imports_nothing_of_ours():
    ours = {
        module
        for path in PEER_DIR.glob("*.py")
        for module in _imports(path)
        if module.split(".")[0] == "freshness_pipeline"
    }
    assert ours and all(m.startswith(PEER) for m in ours), ours
    # Loading its definitions in a fresh Python leaves no module of ours but its own and
    # the (docstring-only) packages above it.
    loaded = subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore",
            "-c",
            f"import sys, {PEER}.definitions; "
            "print(' '.join(m for m in sys.modules if m.startswith('freshness_pipeline')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    above = {"freshness_pipeline", "freshness_pipeline.lab", "freshness_pipeline.lab.peers"}
    assert {m for m in loaded if not m.startswith(PEER)} == above, loaded


def test_hourly_partitions_with_the_hour_in_progress_and_eager_by_default(monkeypatch):
    graph = plain.build_definitions().resolve_asset_graph()
    for name in TABLES:
        node = graph.get(dg.AssetKey(name))
        assert node.partitions_def == plain.hours()
        assert node.automation_condition is not None
        assert node.automation_condition.get_label() == "eager"
    assert plain.hours().end_offset == 1
    now = datetime.now(UTC)
    assert plain.hours().get_last_partition_key() == now.strftime("%Y-%m-%d-%H:00")
    assert {k.to_user_string() for k in graph.get_all_asset_keys()} == {
        *TABLES,
        "price_raw",
        "trade_raw",
        "company_master",
    }
    monkeypatch.setenv("DAGSTER_PLAIN_AUTOMATION", "cron")
    cron = plain.build_definitions().resolve_asset_graph().get(dg.AssetKey("trade_aggr"))
    assert "* * * * *" in str(cron.automation_condition.get_label() or cron.automation_condition)
    monkeypatch.setenv("DAGSTER_PLAIN_AUTOMATION", "sometimes")
    with pytest.raises(ValueError, match="eager or cron"):
        plain.build_definitions()


@pytest.mark.spark
def test_six_tables_by_the_hour_equal_the_oracle_with_their_watermarks(spark, lakehouse):
    from dagster_pyspark import PySparkResource

    from freshness_pipeline.execution import oracle
    from freshness_pipeline.hudi.metadata import HudiTableMetadata
    from freshness_pipeline.ingestion.feeder import StreamFeeder

    feeder = StreamFeeder(spark, lakehouse, seed=11)
    start = datetime.fromtimestamp(DEFAULT_START_US / 1e6, UTC)
    hour = start.strftime("%Y-%m-%d-%H:00")
    partitions = plain.hours()
    six = [plain.job_asset(t, plain.automation_condition(), partitions) for t in TABLES.values()]
    # The test's own Spark session (getOrCreate returns it; no setting of it changed).
    resources = {"pyspark": PySparkResource(spark_config={})}

    with dg.instance_for_test() as instance:
        for seconds in (3, 2):
            feeder.land(seconds)
            feeder.ingest()
            result = dg.materialize(six, partition_key=hour, instance=instance, resources=resources)
            assert result.success
            for difference in oracle.check_lakehouse(lakehouse.lakehouse.table):
                assert difference.equal, difference
            marks = {}
            for name in TABLES:
                event = instance.get_latest_materialization_event(dg.AssetKey(name))
                marks[name] = event.asset_materialization.metadata["watermark_us"].value
                stored = HudiTableMetadata(lakehouse.lakehouse.table(name)).watermark_us()
                assert stored == marks[name], name
            for raw, table in (("trade_raw", "trade_aggr"), ("price_raw", "price_aggr")):
                rows = oracle.read_table(lakehouse.lakehouse.table(raw))
                newest = rows["arrival_ts"].max()
                assert marks[table] == int(newest.value // 1000), table
            assert marks["market_features"] == min(marks["trade_aggr"], marks["price_aggr"])
            assert marks["sector_vwap"] == marks["industry_spike"] == marks["market_features"]


def test_the_wide_tables_it_writes_are_the_declared_ones(tmp_path: Path, monkeypatch):
    """Every wide table a seed draws, as the plain peer builds it from its own list: the
    declared table's name, key and inputs; listed in the definitions with DAGSTER_PLAIN_WIDE."""
    from freshness_pipeline.lab.experiment.wide import plain_wide_spec, wide_jobs, write_wide
    from freshness_pipeline.lab.peers.dagster_plain.wide import wide_tables

    write_wide(tmp_path / "wide", 2)
    declared = wide_jobs(tmp_path / "wide")
    listed = tmp_path / "plain-wide.json"
    listed.write_text(json.dumps(plain_wide_spec(2)))
    tables = wide_tables(listed)
    assert len(tables) == 43 and {t.name for t in tables} == set(declared) - set(TABLES)
    for table in tables:
        spec = declared[table.name]
        assert set(table.key) == set(spec.declaration.key), table.name
        assert set(table.inputs) == set(spec.inputs) | set(spec.dimensions), table.name
        assert table.time_column == spec.declaration.event_time, table.name
        assert table.lookback_s == (spec.window_s or 0), table.name
    monkeypatch.setenv("DAGSTER_PLAIN_WIDE", str(listed))
    keys = plain.build_definitions().resolve_asset_graph().get_all_asset_keys()
    assert {t.name for t in tables} <= {k.to_user_string() for k in keys}
    listed.write_text(json.dumps([{"name": "x", "template": "pie_chart"}]))
    with pytest.raises(ValueError, match="names no template"):
        wide_tables(listed)
    listed.write_text(json.dumps([{"name": "x", "template": "letter_slice"}]))
    with pytest.raises(ValueError, match="letter_slice"):
        wide_tables(listed)


@pytest.mark.spark
def test_one_of_each_wide_table_by_the_hour_equals_the_declared_batch(spark, lakehouse, tmp_path):
    """The wide lakehouse's templates, one table of each and the minute rollups, written by
    the plain peer for the hour equal to our declared jobs' batch recomputation."""
    from dagster_pyspark import PySparkResource

    from freshness_pipeline.execution.batch_oracle import batch_recompute, differences
    from freshness_pipeline.ingestion.feeder import StreamFeeder
    from freshness_pipeline.lab.experiment.wide import plain_wide_spec, wide_jobs, write_wide
    from freshness_pipeline.lab.peers.dagster_plain.wide import wide_tables

    write_wide(tmp_path / "wide", 1)
    every = wide_jobs(tmp_path / "wide")
    spec = plain_wide_spec(1)
    picked = {"sector_vwap_minute", "industry_spike_minute"}
    for template in {e["template"] for e in spec}:
        first = next(e for e in spec if e["template"] == template)
        picked.add(first["name"])
        if template == "minute_rollup":
            picked.add(first["args"][0])  # the table it rolls up
    listed = tmp_path / "plain-wide.json"
    listed.write_text(json.dumps([e for e in spec if e["name"] in picked]))
    tables = [*TABLES.values(), *wide_tables(listed)]
    assert len(tables) >= 6 + 8, [t.name for t in tables]

    feeder = StreamFeeder(spark, lakehouse, seed=4)
    feeder.land(4)
    feeder.ingest()
    hour = datetime.fromtimestamp(DEFAULT_START_US / 1e6, UTC).strftime("%Y-%m-%d-%H:00")
    assets = [plain.job_asset(t, plain.automation_condition(), plain.hours()) for t in tables]
    resources = {"pyspark": PySparkResource(spark_config={})}
    with dg.instance_for_test() as instance:
        result = dg.materialize(assets, partition_key=hour, instance=instance, resources=resources)
        assert result.success

    lake = lakehouse.lakehouse
    jobs = {n: every[n] for n in every if n in picked or n in TABLES}
    expected = batch_recompute(spark, lake.table_uri, tmp_path / "batch", lake.metadata, jobs=jobs)
    wrong = []
    for name in sorted(picked):
        stored = spark.read.format("hudi").load(lake.table_uri(name)).columns
        # Our window tables also keep each group's own arrival for their incremental
        # merge (group_arrival_ts); the peer recomputes the window whole and has no need.
        only_ours = set(expected[name].columns) - set(stored)
        assert only_ours <= {"group_arrival_ts"}, (name, only_ours)
        shared = expected[name].select(*[c for c in expected[name].columns if c in stored])
        missing, extra, examples = differences(spark, shared, lake.table_uri(name))
        if missing or extra or shared.count() == 0:
            wrong.append((name, missing, extra, examples[:2]))
    assert not wrong, wrong
