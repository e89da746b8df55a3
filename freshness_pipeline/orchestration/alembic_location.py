"""Dagster names its storages' alembic scripts by package resource; we name the same
folder by path, because the resource name leaks memory in a long-lived code server.

Dagster's SQL storages (SQLite and Postgres) check their schema against the alembic
scripts at `dagster._core.storage.sql.ALEMBIC_SCRIPTS_LOCATION`,
"dagster:_core/storage/alembic", each time an instance opens them. Alembic resolves a
resource name with importlib.resources and, as importlib-resources' migration guide
shows, registers an `ExitStack` with `atexit` for every resolution
(`alembic.util.pyfiles.coerce_resource_to_filename`): it lives until the process ends.
A sensor tick opens an instance (Dagster's sensor context opens one from the tick's
instance ref for `context.log` and `context.instance`), so a code server kept two
stacks and ~15 KiB a tick for good: the soak of 2026-11-25 counted 28 more stacks a
minute in its code server (docs/RELIABILITY.md). Named by absolute path, alembic reads
the folder directly and registers nothing; the scripts are the same files.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import dagster._core.storage.sql as dagster_sql


def scripts_folder(location: str) -> Path | None:
    """The folder a "package:relative/path" resource name points at (None: not one, or
    not a folder on disk, e.g. a zipped package)."""
    if os.path.isabs(location) or ":" not in location:
        return None
    package, _, relative = location.partition(":")
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent / relative
    return folder if folder.is_dir() else None


def name_alembic_scripts_by_path() -> None:
    """Point Dagster's default alembic script location at its folder's path (a no-op when
    it already is a path or the folder cannot be found). `get_alembic_config` keeps its
    configs in an lru_cache, and a code server opens an instance before it loads our
    definitions: the configs cached with the resource name are dropped too."""
    folder = scripts_folder(dagster_sql.ALEMBIC_SCRIPTS_LOCATION)
    if folder is not None:
        dagster_sql.ALEMBIC_SCRIPTS_LOCATION = str(folder)
        dagster_sql.get_alembic_config.cache_clear()
