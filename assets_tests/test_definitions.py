"""The Dagster definitions load, and every SQL job has exactly one asset of the same name."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dagster as dg
from dagster._core.definitions.freshness import TimeWindowFreshnessPolicy

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.definitions import defs
from freshness_pipeline.orchestration.assets import build_job_assets
from freshness_pipeline.scheduling.staleness_target import StalenessTarget

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
        assert node.group_name == "market_data" and node.tags["freshness/layer"] == "raw"
        assert "dagster/kind/hudi" in node.tags


def test_one_group_so_the_graph_opens_on_every_asset():
    # Dagster's graph shows several groups as collapsed boxes, one group as its assets.
    graph = defs.resolve_asset_graph()
    groups = {graph.get(key).group_name for key in graph.get_all_asset_keys()}
    assert groups == {"market_data"}


def test_every_job_asset_has_the_settings_freshness_policy():
    graph = defs.resolve_asset_graph()
    for name in asset_keys(observable=False):
        policy = graph.get(dg.AssetKey(name)).freshness_policy
        assert isinstance(policy, TimeWindowFreshnessPolicy), name
        assert policy.fail_window.to_timedelta() == timedelta(seconds=300)
        assert policy.warn_window is not None
        assert policy.warn_window.to_timedelta() == timedelta(seconds=150)
    for name in RAW:  # fed by ingestion, never scheduled: no policy of ours
        assert graph.get(dg.AssetKey(name)).freshness_policy is None


def test_the_instance_runs_the_daemon_that_evaluates_freshness_policies(tmp_path):
    (tmp_path / "dagster.yaml").write_text((PROJECT_ROOT / "dagster.yaml").read_text())
    with dg.DagsterInstance.from_config(str(tmp_path)) as instance:
        assert instance.freshness_enabled
        assert "FRESHNESS_DAEMON" in instance.get_required_daemon_types()


def test_the_freshness_policy_follows_the_target_setting():
    assets = build_job_assets(StalenessTarget(fail_s=600, warn_fraction=0))
    for assets_def in assets:
        policy = assets_def.specs_by_key[assets_def.key].freshness_policy
        assert isinstance(policy, TimeWindowFreshnessPolicy)
        assert policy.fail_window.to_timedelta() == timedelta(minutes=10)
        assert policy.warn_window is None


def test_one_sql_file_per_materialized_asset():
    sql_names = {p.stem for p in Path(PROJECT_ROOT / "jobs_sql").glob("*.sql")}
    assert sql_names == asset_keys(observable=False)
    assert not sql_names & RAW


def test_workspace_and_instance_files_exist():
    assert "freshness_pipeline.definitions" in (PROJECT_ROOT / "workspace.yaml").read_text()
    instance = (PROJECT_ROOT / "dagster.yaml").read_text()
    assert "max_concurrent_runs: 3" in instance


def test_runs_execute_their_steps_in_the_run_worker_unless_told_otherwise():
    # The multiprocess default would start a second Python process per run; ours is in
    # process unless a run's config selects multiprocess (step_executor.py).
    from freshness_pipeline.orchestration.step_executor import steps_executor

    job = defs.resolve_implicit_global_asset_job_def()
    assert job.executor_def is steps_executor
    default = job.executor_def.config_schema.as_field().default_value
    assert default == {"in_process": {}}


def test_a_folder_of_your_own_jobs_is_what_the_definitions_run(tmp_path):
    """FRESHNESS_JOBS: the assets and the sensor's selection come
    from the folder's declarations; nothing of the bundled six is left."""
    from freshness_pipeline.config.settings import load_settings
    from freshness_pipeline.definitions import build_definitions

    (tmp_path / "trade_volume.sql").write_text(
        "/* freshness\ndescription: Per symbol per event second, the traded volume.\n"
        "inputs: [trade_raw]\nkey: [second, symbol]\nevent_time: second\n"
        "merge: partial_aggregates\ncolumns:\n  volume: sum\n*/\n"
        "SELECT symbol, CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP) AS second,\n"
        "  sum(size) AS volume, max(arrival_ts) AS arrival_ts\nFROM delta_trade_raw\n"
        "GROUP BY symbol, CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP)\n"
    )
    settings = load_settings(environ={"FRESHNESS_JOBS": str(tmp_path)})
    assert list(settings.jobs) == ["trade_volume"]
    built = build_definitions(settings)
    graph = built.resolve_asset_graph()
    materialized = {
        k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).is_materializable
    }
    assert materialized == {"trade_volume"}
    sources = {k.to_user_string() for k in graph.get_all_asset_keys()} - materialized
    # what it reads (and ingestion's quarantine beside it), no table it does not read
    assert sources == {"trade_raw", "raw_rejects"}
    sensor = built.resolve_sensor_def("freshness_sensor")
    assert {k.to_user_string() for k in sensor.asset_selection.resolve(graph)} == {"trade_volume"}


def test_a_folder_with_a_broken_declaration_is_refused_naming_it(tmp_path):
    import pytest

    from freshness_pipeline.config.parsing import SettingsError
    from freshness_pipeline.config.settings import load_settings

    (tmp_path / "x.sql").write_text(
        "/* freshness\ninputs: [trade_raw]\nmerge: median\n*/\nSELECT 1"
    )
    with pytest.raises(SettingsError) as raised:
        load_settings(environ={"FRESHNESS_JOBS": str(tmp_path)})
    text = str(raised.value)
    assert text.startswith(f"FRESHNESS_JOBS={str(tmp_path)!r} is not accepted"), text
    assert "x.sql: x: `key` is missing" in text and "x.sql: x: `merge` must be one of" in text


_USER_JOBS_CHILD = r"""
import sys
import dagster as dg
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.definitions import build_definitions

defs = build_definitions(load_settings())
node = defs.resolve_asset_graph().get(dg.AssetKey("region_minute"))
print("LINEAGE" if "`account_minute.amount`" in (node.description or "") else node.description)
# The run workers fork from the process that loads the definitions, and hudi-rs's runtime
# does not survive a fork: loading them must not touch it.
print("HUDI_RS" if "hudi" in sys.modules else "NO_HUDI_RS")
"""


def test_a_users_jobs_load_with_their_lineage_and_without_hudi_rs(tmp_path: Path):
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = tmp_path / "bank" / "account_txns"
    (table / ".hoodie").mkdir(parents=True)
    (table / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=account_txns\n")
    (table / "EMEA").mkdir()
    columns = {
        "_hoodie_commit_time": pa.string(),
        "txn_id": pa.string(),
        "account_id": pa.string(),
        "region": pa.string(),
        "amount": pa.decimal128(18, 2),
        "txn_ts": pa.timestamp("us", tz="UTC"),
    }
    pq.write_table(pa.schema(columns).empty_table(), table / "EMEA" / "f1_0-1-2_100.parquet")
    inputs = tmp_path / "inputs.toml"
    inputs.write_text(f'[inputs.account_txns]\nuri = "{table}"\n')
    env = {
        **__import__("os").environ,
        "FRESHNESS_JOBS": str(PROJECT_ROOT / "jobs_sql" / "accounts"),
        "FRESHNESS_INPUTS": str(inputs),
        "FRESHNESS_LAKEHOUSE": str(tmp_path / "tables"),
        "FRESHNESS_LANDING": str(tmp_path / "landing"),
    }
    out = subprocess.run(
        [sys.executable, "-c", _USER_JOBS_CHILD],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["LINEAGE", "NO_HUDI_RS"], out.stdout + out.stderr[-2000:]
