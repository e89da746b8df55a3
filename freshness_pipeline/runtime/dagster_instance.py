"""The Dagster instance settings a DAGSTER_HOME gets, generated from the repo's dagster.yaml.

The repo's `dagster.yaml` is the one source of the run queue, concurrency pools and run
monitoring; this module only adds (or changes) what a deployment needs: Postgres storage
for runs, event log and schedules (`storage: postgres:`, dagster-postgres) when
FRESHNESS_POSTGRES_URL is set, and the run queue's K. The password is not written: the
file names the variable Dagster reads it from.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from freshness_pipeline.config.parsing import POSTGRES_SCHEME
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings

PASSWORD_ENV = "FRESHNESS_POSTGRES_PASSWORD"
REPO_INSTANCE_YAML = PROJECT_ROOT / "dagster.yaml"


def postgres_storage(postgres_url: str, params: Mapping[str, str] | None = None) -> dict[str, Any]:
    """dagster-postgres's `postgres_db` block for a validated FRESHNESS_POSTGRES_URL, with
    libpq's TLS parameters (`Settings.postgres_params`: sslmode, sslrootcert) when set."""
    url = urlsplit(postgres_url)
    extra = {"params": dict(params)} if params else {}
    return {
        "postgres": {
            "postgres_db": {
                "scheme": POSTGRES_SCHEME,  # explicit: SQLAlchemy 2 defaults to psycopg 3
                "username": url.username,
                "password": {"env": PASSWORD_ENV},
                "hostname": url.hostname,
                "port": url.port or 5432,
                "db_name": url.path.strip("/"),
                **extra,
            }
        }
    }


def instance_config(
    postgres_url: str | None = None,
    k: int | None = None,
    params: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The repo's instance settings, with Postgres storage (and its TLS parameters) and the
    run queue at K."""
    config = yaml.safe_load(REPO_INSTANCE_YAML.read_text())
    if k is not None:
        config["concurrency"]["runs"]["max_concurrent_runs"] = k
    if postgres_url:
        config = {"storage": postgres_storage(postgres_url, params), **config}
    return config


def write_instance_yaml(
    home: Path,
    postgres_url: str | None = None,
    k: int | None = None,
    params: Mapping[str, str] | None = None,
) -> Path:
    """Writes DAGSTER_HOME/dagster.yaml (replacing a link to the repo's file, so the repo's
    file is never written through it)."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "dagster.yaml"
    if path.is_symlink():
        path.unlink()
    header = (
        f"# Generated from {REPO_INSTANCE_YAML.name} by "
        "freshness_pipeline/runtime/dagster_instance.py; edit that file, not this one.\n"
    )
    config = instance_config(postgres_url, k, params)
    path.write_text(header + yaml.safe_dump(config, sort_keys=False))
    return path


def open_instance(home: Path, settings: Settings | None = None):
    """The Dagster instance of `home`, opened in this process. Its dagster.yaml names the
    Postgres password by variable (never the secret itself); with `settings` the password
    is handed to the instance as an in-memory override instead, so a process that opens
    the instance (the stack's supervisor, the experiment, the soak) never has to put the
    secret into its own environment."""
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    overrides = instance_overrides(settings) if settings is not None else None
    ref = InstanceRef.from_dir(str(home), overrides=overrides)
    return dg.DagsterInstance.from_ref(ref)


def instance_overrides(settings: Settings) -> dict[str, Any] | None:
    """The instance settings a process passes in memory: Postgres storage with its
    password when the settings have one (None: the file's settings as they are)."""
    if not (settings.postgres_url and settings.postgres_password):
        return None
    storage = postgres_storage(settings.postgres_url, settings.postgres_params)
    storage["postgres"]["postgres_db"]["password"] = settings.postgres_password
    return {"storage": storage}
