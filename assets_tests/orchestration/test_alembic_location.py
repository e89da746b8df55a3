"""A sensor tick opens a Dagster instance (its context does); opening one must leave
nothing behind in the long-lived code server (alembic_location.py)."""

from __future__ import annotations

import contextlib
import gc

import dagster as dg
import dagster._core.storage.sql as dagster_sql
import pytest
from dagster._grpc.impl import get_external_sensor_execution

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.definitions import build_definitions
from freshness_pipeline.orchestration.alembic_location import scripts_folder


def _exit_stacks() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, contextlib.ExitStack))


def test_the_scripts_folder_of_a_resource_name():
    folder = scripts_folder("dagster:_core/storage/alembic")
    assert folder is not None and (folder / "env.py").is_file()
    assert scripts_folder(str(folder)) is None  # already a path
    assert scripts_folder("no_such_package_here:alembic") is None
    assert str(folder) == dagster_sql.ALEMBIC_SCRIPTS_LOCATION  # the definitions set it


@pytest.mark.parametrize("sensor_name", ["freshness_sensor", "clustering_sensor"])
def test_evaluating_a_sensor_as_the_code_server_does_leaves_nothing_behind(
    tmp_path, monkeypatch, sensor_name
):
    """Through Dagster's own gRPC entry point, with an instance ref as the daemon sends
    it: after a first tick, ticks add no ExitStack (with Dagster's resource name for the
    alembic scripts each tick left two, registered with atexit by alembic)."""
    # As in a code server: an instance opened (and alembic configs cached with Dagster's
    # resource name) before the definitions load.
    monkeypatch.setattr(dagster_sql, "ALEMBIC_SCRIPTS_LOCATION", "dagster:_core/storage/alembic")
    dagster_sql.get_alembic_config.cache_clear()
    (tmp_path / "early").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "early")) as early:
        early.get_runs()
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "tables"))
    monkeypatch.setenv("FRESHNESS_SPARK_MODE", "local")  # no service to wait for
    repo = build_definitions(load_settings()).get_repository_def()
    (tmp_path / "home").mkdir()
    with dg.instance_for_test(temp_dir=str(tmp_path / "home")) as instance:
        ref = instance.get_ref()

        def tick(number: int):
            return get_external_sensor_execution(
                repo, None, ref, sensor_name, None, None, None, ["test", str(number)], None
            )

        first = tick(0)
        assert type(first).__name__ == "SensorExecutionData", first
        before = _exit_stacks()
        for number in range(1, 5):
            tick(number)
        assert _exit_stacks() == before
