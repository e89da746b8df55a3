"""Rebuilding a job's table in a new layout: Hudi cannot change a table's partitioning or
index in place, so the table is moved aside and its job writes it again, whole.

Exact without touching anything else: the job's next run finds no table, so it starts
from no watermark and reads every file of its inputs; its rows carry the arrivals they
had (a row's arrival is its inputs' latest), so the tables that read it, which keep their
own watermarks, see as new only what is new to them. The old table stays beside the
lakehouse (`.rebuilt/<table>-<time>`) until someone deletes it.
"""

from __future__ import annotations

import time

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.location import Location

REBUILT_FOLDER = ".rebuilt"


class RebuildError(RuntimeError):
    """A table that cannot be rebuilt, with the reason."""


def move_aside(settings: Settings, table: str, now: float | None = None) -> str:
    """Moves `table`'s folder to `.rebuilt/` beside it; returns where it went. Only a job's
    table: a raw table or someone else's input holds rows nothing could write again."""
    import pyarrow.fs as pafs

    if table not in settings.jobs:
        raise RebuildError(
            f"{table} is not the table of a job ({', '.join(settings.jobs)}): raw tables and "
            "your own inputs hold rows no job can write again"
        )
    location = settings.lakehouse.table(table)
    fs, path = location.filesystem()
    if fs.get_file_info(path).type != pafs.FileType.Directory:
        raise RebuildError(f"{table}: no table at {location.spark}")
    parent, _, name = path.rstrip("/").rpartition("/")
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(time.time() if now is None else now))
    target = f"{parent}/{REBUILT_FOLDER}/{name}-{stamp}"
    fs.create_dir(f"{parent}/{REBUILT_FOLDER}")
    if location.is_local:
        fs.move(path, target)
    else:
        # An object store has no rename of a folder: each object is copied, then the folder
        # goes (a copy that fails half way leaves the table where it was).
        selector = pafs.FileSelector(path, recursive=True)
        for info in fs.get_file_info(selector):
            if info.type == pafs.FileType.File:
                fs.copy_file(info.path, target + info.path[len(path.rstrip("/")) :])
        fs.delete_dir(path)
    return Location(location.scheme, target, location.storage_options).spark
