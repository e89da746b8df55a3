"""Parquet footers: a base file's range of the arrival column, read once and cached (a
base file never changes: a new version of a file group is a new file)."""

from __future__ import annotations

import json
from typing import NamedTuple

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from freshness_pipeline.hudi.caches import BoundedCache
from freshness_pipeline.hudi.commit_keys import ARRIVAL_COLUMN
from freshness_pipeline.hudi.location import Location
from freshness_pipeline.hudi.timeline import as_micros


class ArrivalColumnMissing(ValueError):
    """A table's files lack the arrival column declared for it."""


class FooterRange(NamedTuple):
    """Min and max of a timestamp column over a Parquet file (None: no statistics)."""

    low: int | None
    high: int | None


# 20k entries (~300 B each with the path key): several times what the active timelines of
# the two raw tables name (120 commits x 26 files each); an evicted footer is re-read.
FOOTER_CACHE: BoundedCache[str, FooterRange] = BoundedCache(20_000)


def _filesystem(uri: str | Location) -> tuple[pafs.FileSystem, str]:
    location = uri if isinstance(uri, Location) else Location.parse(uri)
    return location.filesystem()


def footer_arrival_range(uri: str | Location, column: str = ARRIVAL_COLUMN) -> FooterRange:
    """Min and max of a timestamp `column` (epoch microseconds) from a Parquet footer only.
    An S3 file is a Location (it carries the store's storage options)."""
    return _cached_range(uri, column, "", lambda: _read_footer_range(uri, column))


def _cached_range(uri: str | Location, column: str, suffix: str, read) -> FooterRange:
    """One file's range of `column` from FOOTER_CACHE, read once (files never change)."""
    cache_key = f"{column}@{uri.spark if isinstance(uri, Location) else uri}{suffix}"
    found = FOOTER_CACHE.get(cache_key)
    if found is None:
        found = read()
        FOOTER_CACHE.put(cache_key, found)
    return found


def _read_footer_range(uri: str | Location, column: str) -> FooterRange:
    fs, path = _filesystem(uri)
    with fs.open_input_file(path) as handle:
        meta = pq.ParquetFile(handle).metadata
    if column not in meta.schema.names:
        raise ArrivalColumnMissing(f"{uri} has no column {column!r} (the declared arrival column)")
    index = meta.schema.names.index(column)
    to_micros = _int64_timestamp_scale(meta.schema.column(index))
    low: int | None = None
    high: int | None = None
    for group in range(meta.num_row_groups):
        chunk = meta.row_group(group).column(index)
        stats = chunk.statistics
        if stats is None or not stats.has_min_max:
            continue
        if to_micros is not None and chunk.physical_type == "INT64":
            # The raw integers: pyarrow turns a UTC timestamp's `stats.min` into a datetime
            # through pandas, which it imports for that (~60 MiB in the code server, at the
            # first footer of an archived commit: minute 26 of a soak).
            multiplier, divisor = to_micros
            gmin = stats.min_raw * multiplier // divisor
            gmax = stats.max_raw * multiplier // divisor
        else:
            gmin, gmax = as_micros(stats.min), as_micros(stats.max)
        low = gmin if low is None else min(low, gmin)
        high = gmax if high is None else max(high, gmax)
    return FooterRange(low, high)


# A Parquet timestamp's unit -> (multiplier, divisor) from its ticks to microseconds.
_TO_MICROS = {"milliseconds": (1000, 1), "microseconds": (1, 1), "nanoseconds": (1, 1000)}


def _int64_timestamp_scale(column) -> tuple[int, int] | None:
    """How an INT64 timestamp column's ticks become microseconds, from its logical type;
    None for anything else (INT96, a plain integer), read through pyarrow's conversion."""
    logical = column.logical_type
    if logical.type != "TIMESTAMP":
        return None
    return _TO_MICROS.get(json.loads(logical.to_json()).get("timeUnit"))


def own_rows_arrival_range(uri: str | Location, column: str, instant: str) -> FooterRange:
    """Min and max of `column` over the rows of one commit in a base file that also holds
    older rows (a copy-on-write merge): two columns read, `_hoodie_commit_time` filtered."""
    return _cached_range(uri, column, f"#{instant}", lambda: _read_own_rows(uri, column, instant))


def _read_own_rows(uri: str | Location, column: str, instant: str) -> FooterRange:
    import pyarrow.compute as pc

    fs, path = _filesystem(uri)
    with fs.open_input_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        if "_hoodie_commit_time" not in parquet.schema_arrow.names:
            return FooterRange(None, None)  # a table written without Hudi's meta fields
        table = parquet.read(columns=["_hoodie_commit_time", column])
    # No Python value enters pyarrow here (pc.equal(column, instant) would convert the str
    # with pa.scalar, and pyarrow imports pandas for that: ~60 MiB appearing in the code
    # server half an hour into a soak). The instant is picked out of the column's own
    # distinct values, and the range read as integers.
    commit_times = pc.unique(table["_hoodie_commit_time"])
    names = commit_times.to_pylist()
    if instant not in names:
        return FooterRange(None, None)
    mine = commit_times.slice(names.index(instant), 1)
    own = table.filter(pc.is_in(table["_hoodie_commit_time"], value_set=mine))[column]
    if own.null_count == len(own):
        return FooterRange(None, None)
    if pa.types.is_timestamp(own.type):
        own = pc.cast(own, pa.timestamp("us", own.type.tz), safe=False)
    bounds = pc.min_max(pc.cast(own, pa.int64()))
    return FooterRange(bounds["min"].as_py(), bounds["max"].as_py())


def base_file_schema(table: Location) -> pa.Schema | None:
    """The schema of the newest base file in the first folder of `table` that has one,
    through pyarrow alone (None when there is none yet). For what loads with the Dagster
    definitions (a declared job's column lineage): the process that loads them is the
    parent the run workers fork from, and hudi-rs's runtime does not survive a fork (a
    forked run blocked in its first table read)."""
    fs, root = table.filesystem()
    folders = [root]
    while folders:
        folder = folders.pop(0)
        entries = fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True))
        files = [
            e
            for e in entries
            if e.type == pafs.FileType.File
            and e.base_name.endswith(".parquet")
            and not e.base_name.startswith(".")
        ]
        if files:
            newest = max(files, key=lambda e: (e.mtime_ns or 0, e.path))
            schema = pq.read_schema(newest.path, filesystem=fs)
            return pa.schema([f for f in schema if not f.name.startswith("_hoodie_")])
        folders += sorted(
            e.path
            for e in entries
            if e.type == pafs.FileType.Directory and not e.base_name.startswith(".")
        )
    return None
