"""The six assets through Dagster: in-process materializations with run config and the
`dagster asset materialize` CLI, against real Hudi tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from assets_tests.conftest import child_env
from assets_tests.execution.conftest import StreamFeeder
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings, load_settings
from freshness_pipeline.definitions import defs
from freshness_pipeline.orchestration.resources import HudiMetadataResource, HudiSparkResource
from freshness_pipeline.scheduling.timefmt import readable_utc


class NoSpark(HudiSparkResource):
    """Fails the test if a run touches Spark: refusals must come before Spark starts."""

    @property
    def spark_session(self):
        raise AssertionError("Spark was started for a refused run config")


def job_asset(name: str):
    return next(
        a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and a.key.path == [name]
    )


def config_for(name: str, **values) -> dict:
    return {"ops": {name: {"config": values}}}


def test_assets_have_the_group_layers_kinds_owners_and_deps():
    graph = defs.resolve_asset_graph()
    expected = {
        "trade_aggr": {"trade_raw"},
        "price_aggr": {"price_raw"},
        "market_features": {"price_aggr", "trade_aggr"},
        "enriched_features": {"market_features", "company_master"},
        "sector_vwap": {"enriched_features"},
        "industry_spike": {"enriched_features"},
    }
    for name, parents in expected.items():
        node = graph.get(dg.AssetKey(name))
        assert {k.to_user_string() for k in node.parent_keys} == parents
        assert {"dagster/kind/spark", "dagster/kind/hudi"} <= set(node.tags)
        assert node.owners == ["team:market-data"]
        assert node.group_name == "market_data"
        assert node.tags["freshness/layer"] in {"aggregates", "features", "views"}
        assert node.description and f"jobs_sql/{name}.sql" in node.description


@pytest.mark.spark
def test_materialize_with_and_without_config(spark, lakehouse: Settings):
    feeder = StreamFeeder(spark, lakehouse, seed=8)
    feeder.land(3)
    feeder.ingest()
    resources = {
        "hudi_meta": HudiMetadataResource.for_settings(load_settings()),
        "spark": HudiSparkResource.for_settings(load_settings()),
    }
    pending = feeder.meta("trade_raw").pending_files(None)
    first_u = min(p.pending_max_us for p in pending)
    files = [p.uri for p in pending if p.pending_min_us <= first_u]
    result = dg.materialize(
        [job_asset("trade_aggr")],
        resources=resources,
        run_config=config_for("trade_aggr", files=files, cutoff_u=str(first_u)),
    )
    assert result.success
    meta = result.asset_materializations_for_node("trade_aggr")[0].metadata
    assert meta["files_read"].value == len(files)
    assert meta["t_done_before"].value == "none"
    assert meta["rows_written"].value > 0
    for key in (
        "t_done_after",
        "files_pending",
        "bytes_read",
        "rows_scanned",
        "duration_s",
        "watermark_lag_s",
    ):
        assert key in meta
    assert feeder.meta("trade_aggr").watermark_us() == first_u
    # Launched by hand: said in its metadata, with the table's staleness once committed
    # (the sampler's definition) and no staleness before (it had no watermark).
    assert meta["launched_by"].value == "hand" and "sensor_plan" not in meta
    assert meta["staleness_s"].value >= 0 and "staleness_before_s" not in meta
    assert meta["staleness_target_s"].value == 300.0

    # empty config: everything pending, up to the inputs' watermark
    result = dg.materialize([job_asset("trade_aggr")], resources=resources)
    assert result.success
    assert feeder.meta("trade_aggr").watermark_us() == feeder.meta("trade_raw").watermark_us()
    # nothing left: a second plain run is an explicit no-op
    result = dg.materialize([job_asset("trade_aggr")], resources=resources)
    meta = result.asset_materializations_for_node("trade_aggr")[0].metadata
    assert "already at the inputs' watermark" in meta["nothing_to_do"].value

    # refused configs fail the run with the reason, before Spark starts
    no_spark = {
        "hudi_meta": HudiMetadataResource.for_settings(load_settings()),
        "spark": NoSpark.for_settings(load_settings()),
    }
    for bad, reason in (
        ({"files": ["/etc/passwd"]}, "not a file of trade_aggr's input tables"),
        ({"cutoff_u": str(first_u)}, "at or below"),
        ({"cutoff_u": "tomorrow"}, "neither epoch"),
    ):
        result = dg.materialize(
            [job_asset("trade_aggr")],
            resources=no_spark,
            run_config=config_for("trade_aggr", **bad),
            raise_on_error=False,
        )
        assert not result.success
        failure = result.get_step_failure_events()[0].step_failure_data.error
        assert "run config refused" in failure.message and reason in failure.message


@pytest.mark.spark
def test_dagster_cli_materializes_with_and_without_config(
    spark, spark_service, lakehouse: Settings, tmp_path
):
    """The first run starts its own Spark (FRESHNESS_SPARK_MODE=local's path); the second
    goes through the shared Spark service, as the demo's runs do."""
    feeder = StreamFeeder(spark, lakehouse, seed=9)
    feeder.land(2)
    feeder.ingest()
    env = child_env(lakehouse)
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    Path(env["DAGSTER_HOME"]).mkdir()
    dagster = str(Path(sys.executable).parent / "dagster")
    base = [dagster, "asset", "materialize", "-m", "freshness_pipeline.definitions"]
    pending = feeder.meta("price_raw").pending_files(None)
    first_u = min(p.pending_max_us for p in pending)
    files = [p.uri for p in pending if p.pending_min_us <= first_u]
    config = {"ops": {"price_aggr": {"config": {"files": files, "cutoff_u": str(first_u)}}}}
    run = subprocess.run(
        [*base, "--select", "price_aggr", "--config-json", json.dumps(config)],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert feeder.meta("price_aggr").watermark_us() == first_u
    feeder.land(2)
    feeder.ingest()  # new arrivals, so the second run has work to do
    env["FRESHNESS_SPARK_REMOTE"] = spark_service.url
    run = subprocess.run(
        [*base, "--select", "price_aggr"],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        records = instance.fetch_materializations(dg.AssetKey("price_aggr"), limit=2).records
        # A CLI run carries no sensor tags; the asset tags it once it knows what it reads.
        tags = [instance.get_run_by_id(r.run_id).tags for r in records]
    assert [t["freshness/launched_by"] for t in tags] == ["hand", "hand"]
    assert tags[1]["freshness/cutoff"] == readable_utc(first_u)
    assert tags[1]["freshness/files"] == f"{len(files)} of {len(pending)} files"
    metadata = [r.asset_materialization.metadata for r in records]
    assert all("staleness_s" in m for m in metadata) and "staleness_before_s" in metadata[0]
    assert all(m["files_read"].value > 0 for m in metadata)
    spark_used = [m["spark"].value for m in metadata]
    assert spark_used[0] == f"shared Spark service {spark_service.url}"
    # no demo announced a service in this DAGSTER_HOME, and the run says so
    assert spark_used[1] == (
        f"own Spark driver, master local[*] (no Spark service announced in "
        f"{Path(env['DAGSTER_HOME']).resolve()})"
    )
    assert feeder.meta("price_aggr").watermark_us() == feeder.meta("price_raw").watermark_us()


@pytest.mark.spark
def test_a_chained_sensor_run_refreshes_the_descendants_exactly(spark, lakehouse: Settings):
    """A planned chain through real Dagster steps and Hudi: with price_aggr up to date the
    sensor's run of trade_aggr selects its four descendants; each descendant step
    processes what its inputs hold when it starts, records its part of the plan and no
    launch of its own, and every table then equals the independent oracle."""
    from freshness_pipeline.catalog.jobs import JOBS
    from freshness_pipeline.config.scheduler_settings import SchedulerSettings
    from freshness_pipeline.execution import oracle as independent_oracle
    from freshness_pipeline.orchestration.sensor import evaluate_tick

    feeder = StreamFeeder(spark, lakehouse, seed=9)
    feeder.land(3)
    feeder.ingest()
    resources = {
        "hudi_meta": HudiMetadataResource.for_settings(load_settings()),
        "spark": HudiSparkResource.for_settings(load_settings()),
    }
    # price_aggr up to date, so only trade_aggr is planned (a child of two launched jobs
    # is never chained)
    assert dg.materialize([job_asset("price_aggr")], resources=resources).success
    with dg.instance_for_test() as instance:
        settings = SchedulerSettings(chains="planned")
        now_us = feeder.meta("trade_raw").watermark_us() + 1_000_000
        _, requests = evaluate_tick(
            HudiMetadataResource.for_settings(load_settings()), instance, settings, now_us
        )
        (request,) = requests
        chain = [key.to_user_string() for key in request.asset_selection]
        assert chain == ["trade_aggr", *(j for j in JOBS if j not in ("trade_aggr", "price_aggr"))]
        result = dg.materialize(
            [job_asset(name) for name in chain],
            resources=resources,
            run_config=request.run_config,
            tags=request.tags,
            instance=instance,
        )
    assert result.success
    head = result.asset_materializations_for_node("trade_aggr")[0].metadata
    assert head["launched_by"].value == "freshness_sensor" and "sensor_plan" in head
    for name in chain[1:]:
        meta = result.asset_materializations_for_node(name)[0].metadata
        assert meta["launched_by"].value == "freshness_sensor, in the run of trade_aggr"
        assert "sensor_plan" not in meta and "phase_launch_s" not in meta
        assert meta["planned_G_s"].value > 0 and meta["planned_after"].value
        assert meta["rows_written"].value > 0, name
    cap = feeder.meta("trade_aggr").watermark_us()
    assert cap == feeder.meta("trade_raw").watermark_us()
    for name in ("market_features", "enriched_features", "sector_vwap", "industry_spike"):
        assert feeder.meta(name).watermark_us() == min(
            cap, feeder.meta("price_aggr").watermark_us()
        ), name
    for difference in independent_oracle.check_lakehouse(lakehouse.lakehouse.table):
        assert difference.equal, difference
