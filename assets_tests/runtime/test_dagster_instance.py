"""The cluster profile's dagster.yaml is generated from the repo's: the run queue,
concurrency pools and run monitoring are the same settings, storage moves to Postgres
(scheme explicit, password by variable name only)."""

from __future__ import annotations

from pathlib import Path

import yaml

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.runtime.dagster_instance import (
    instance_config,
    instance_overrides,
    open_instance,
    write_instance_yaml,
)

URL = "postgresql+psycopg2://dagster@127.0.0.1:5544/dagster"


def test_generated_yaml_keeps_the_repos_queue_pools_and_monitoring(tmp_path: Path):
    repo = yaml.safe_load((PROJECT_ROOT / "dagster.yaml").read_text())
    path = write_instance_yaml(tmp_path / "home", URL, k=3)
    generated = yaml.safe_load(path.read_text())
    for key in ("concurrency", "run_queue", "run_monitoring", "freshness", "telemetry"):
        assert generated[key] == repo[key], key
    assert set(generated) == set(repo) | {"storage"}


def test_storage_is_postgres_with_the_psycopg2_scheme_and_no_password_written(tmp_path: Path):
    path = write_instance_yaml(tmp_path / "home", URL)
    db = yaml.safe_load(path.read_text())["storage"]["postgres"]["postgres_db"]
    assert db == {
        "scheme": "postgresql+psycopg2",
        "username": "dagster",
        "password": {"env": "FRESHNESS_POSTGRES_PASSWORD"},
        "hostname": "127.0.0.1",
        "port": 5544,
        "db_name": "dagster",
    }


def test_k_changes_only_the_run_queue_and_sqlite_stays_without_storage():
    config = instance_config(k=2)
    assert config["concurrency"]["runs"]["max_concurrent_runs"] == 2
    assert "storage" not in config


def test_writing_through_a_link_never_touches_the_repos_file(tmp_path: Path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").symlink_to(PROJECT_ROOT / "dagster.yaml")
    before = (PROJECT_ROOT / "dagster.yaml").read_text()
    write_instance_yaml(home, URL)
    assert not (home / "dagster.yaml").is_symlink()
    assert (PROJECT_ROOT / "dagster.yaml").read_text() == before


def test_a_process_opens_the_instance_with_the_password_from_its_settings(tmp_path: Path):
    """The password reaches Dagster as an in-memory override: never written to the file,
    never put into this process's environment."""
    settings = load_settings(
        {
            "FRESHNESS_POSTGRES_URL": "postgresql+psycopg2://dagster@127.0.0.1:5432/dagster",
            "FRESHNESS_POSTGRES_PASSWORD": "s3cret-value",
        }
    )
    overrides = instance_overrides(settings)
    assert overrides is not None
    db = overrides["storage"]["postgres"]["postgres_db"]
    assert db["password"] == "s3cret-value" and db["hostname"] == "127.0.0.1"
    path = write_instance_yaml(tmp_path, settings.postgres_url)
    assert "s3cret-value" not in path.read_text()
    assert instance_overrides(load_settings({})) is None  # SQLite: nothing to pass


def test_open_instance_reads_the_homes_own_settings(tmp_path: Path):
    write_instance_yaml(tmp_path, k=2)
    with open_instance(tmp_path, load_settings({})) as instance:
        assert instance.get_concurrency_config().run_queue_config.max_concurrent_runs == 2
