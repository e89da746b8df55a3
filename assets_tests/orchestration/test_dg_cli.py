"""Dagster's `dg` CLI from the project root ([tool.dg] in pyproject.toml): `dg check defs`
and `dg list defs` load the definitions, and `dg launch` materializes an asset with the
run config a hand run takes (`files`, `cutoff_u`) against real Hudi tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from assets_tests.conftest import child_env
from assets_tests.execution.conftest import StreamFeeder
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings

DG = str(Path(sys.executable).parent / "dg")


def _dg(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [DG, *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def child_env_for(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    Path(env["DAGSTER_HOME"]).mkdir()
    return env


def test_dg_checks_and_lists_the_definitions(tmp_path):
    env = child_env_for(tmp_path)
    checked = _dg("check", "defs", env=env)
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "All definitions loaded successfully" in checked.stdout + checked.stderr
    listed = _dg("list", "defs", "--json", env=env)
    assert listed.returncode == 0, listed.stderr[-3000:]
    found = json.loads(listed.stdout)
    assets = {a["asset_key"] for a in found["assets"]}
    assert set(JOBS) | {"trade_raw", "price_raw"} <= assets
    assert "freshness_sensor" in {s["name"] for s in found["sensors"]}
    # run from the project root without an activated environment, it says nothing of one
    assert "virtual environment" not in listed.stderr


@pytest.mark.spark
def test_dg_launch_materializes_a_chosen_subset_through_the_service(
    spark, spark_service, lakehouse: Settings, tmp_path
):
    feeder = StreamFeeder(spark, lakehouse, seed=11)
    feeder.land(2)
    feeder.ingest()
    env = child_env(lakehouse)
    env["DAGSTER_HOME"] = str(tmp_path / "dagster_home")
    Path(env["DAGSTER_HOME"]).mkdir()
    env["FRESHNESS_SPARK_REMOTE"] = spark_service.url
    pending = feeder.meta("trade_raw").pending_files(None)
    first_u = min(p.pending_max_us for p in pending)
    files = [p.uri for p in pending if p.pending_min_us <= first_u]
    config = {"ops": {"trade_aggr": {"config": {"files": files, "cutoff_u": str(first_u)}}}}
    run = _dg("launch", "--assets", "trade_aggr", "--config-json", json.dumps(config), env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert feeder.meta("trade_aggr").watermark_us() == first_u
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        (record,) = instance.fetch_materializations(dg.AssetKey("trade_aggr"), limit=2).records
        tags = instance.get_run_by_id(record.run_id).tags
        metadata = record.asset_materialization.metadata
    assert tags["freshness/launched_by"] == "hand"
    assert tags["freshness/files"] == f"{len(files)} of {len(pending)} files"
    assert metadata["spark"].value == f"shared Spark service {spark_service.url}"
    # a bad cutoff is refused before Spark starts, naming the setting
    bad = {"ops": {"trade_aggr": {"config": {"cutoff_u": "yesterday"}}}}
    refused = _dg("launch", "--assets", "trade_aggr", "--config-json", json.dumps(bad), env=env)
    assert refused.returncode != 0
    assert "cutoff_u" in refused.stdout + refused.stderr
