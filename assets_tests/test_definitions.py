"""The Dagster definitions load, and every SQL job has exactly one asset of the same name."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from freshness_pipeline.definitions import defs
from freshness_pipeline.settings import PROJECT_ROOT

RAW = {"price_raw", "trade_raw", "company_master", "raw_rejects"}


def asset_keys(observable: bool) -> set[str]:
    graph = defs.resolve_asset_graph()
    keys = set()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if node.is_observable == observable and (observable or node.is_materializable):
            keys.add(key.to_user_string())
    return keys


def test_definitions_load_with_raw_sources():
    dg.Definitions.validate_loadable(defs)
    assert asset_keys(observable=True) == RAW
    graph = defs.resolve_asset_graph()
    for key in RAW:
        node = graph.get(dg.AssetKey(key))
        assert node.group_name == "raw"
        assert "dagster/kind/hudi" in node.tags


def test_one_sql_file_per_materialized_asset():
    sql_names = {p.stem for p in Path(PROJECT_ROOT / "jobs_sql").glob("*.sql")}
    assert sql_names == asset_keys(observable=False)
    assert not sql_names & RAW


def test_workspace_and_instance_files_exist():
    assert "freshness_pipeline.definitions" in (PROJECT_ROOT / "workspace.yaml").read_text()
    instance = (PROJECT_ROOT / "dagster.yaml").read_text()
    assert "max_concurrent_runs: 3" in instance


def test_runs_execute_their_one_step_in_the_run_worker():
    # The multiprocess default would start a second Python process per run.
    job = defs.resolve_implicit_global_asset_job_def()
    assert job.executor_def.name == dg.in_process_executor.name
