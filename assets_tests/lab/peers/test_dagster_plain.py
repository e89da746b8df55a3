"""The plain Dagster peer: written without our code (its imports parsed), its definitions
as a Dagster user's (hourly partitions, eager or cron), and its six tables, materialized by
Dagster through dagster-pyspark over real raw Hudi tables, equal to the independent oracle
with the watermark the sampler reads in every commit."""

from __future__ import annotations

import ast
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
