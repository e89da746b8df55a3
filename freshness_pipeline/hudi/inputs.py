"""Declared input tables: which Hudi tables feed the jobs, where they live, who writes them
and which column (if any) holds each row's arrival time.

The bundled jobs read two raw inputs, `price_raw` and `trade_raw` (their SQL says
`delta_<name>`); declared jobs (FRESHNESS_JOBS) read whatever tables they name. By
default every input is ours: under the lakehouse root, with `arrival_ts` (the two raw
tables are written by this project's ingestion). A user points any input at a Hudi table
written by anyone (Hudi Streamer, Flink, Kafka Connect, a plain Spark job) in a TOML file
named by `FRESHNESS_INPUTS`:

    [inputs.trade_raw]
    uri = "s3://market-data/hudi/trades"   # or a folder / file:// URI
    arrival_column = "ingested_at"         # optional; omitted: commit completion time
    read_by = ["trade_aggr"]               # optional; checked against the jobs' SQL
    deletes = true                         # optional; the writer deletes rows or moves
                                           # them between groups (needs Hudi CDC on)

A declared table is `external`: our ingestion never writes it, the scheduler reads its
arrival ranges through the chain in hudi_metadata.py, and its source asset says so.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.hudi.location import Location, LocationError

# The raw inputs the jobs' SQL reads, and the jobs that read each (execution/catalog.py).
RAW_INPUTS: Mapping[str, tuple[str, ...]] = {
    "price_raw": ("price_aggr",),
    "trade_raw": ("trade_aggr",),
}
OUR_ARRIVAL_COLUMN = "arrival_ts"
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_KEYS = frozenset({"uri", "arrival_column", "read_by", "deletes"})


class InputsError(ValueError):
    """A declaration this project cannot use; the message names the file, table and key."""


@dataclass(frozen=True)
class DeclaredInput:
    """One input table of the jobs."""

    name: str  # the input's name in the jobs' SQL
    location: Location
    arrival_column: str | None  # None: a row's arrival is its commit's completion time
    read_by: tuple[str, ...]
    external: bool  # written by someone else (not our ingestion)
    # The writer deletes rows (or changes a row's group): only a job that recomputes its
    # groups can follow, through the table's change data capture (`freshness check`).
    deletes: bool = False

    @property
    def arrival_source(self) -> str:
        if not self.external:
            return "our ingestion's arrival_ts and commit keys"
        if self.arrival_column:
            return f"column {self.arrival_column!r} (Parquet footers of each commit's files)"
        return "commit completion time (no arrival column declared)"


def default_inputs(
    root: Location, readers: Mapping[str, tuple[str, ...]] = RAW_INPUTS
) -> dict[str, DeclaredInput]:
    """The jobs' inputs (`readers`: input -> the jobs reading it; the bundled two raw
    tables by default) as ours, under the lakehouse `root`."""
    return {
        name: DeclaredInput(name, root.child(name), OUR_ARRIVAL_COLUMN, jobs, False)
        for name, jobs in readers.items()
    }


def load_inputs(
    path: Path | None,
    root: Location,
    s3_options: Mapping[str, str] | None = None,
    readers: Mapping[str, tuple[str, ...]] = RAW_INPUTS,
) -> dict[str, DeclaredInput]:
    """The declaration in `path` over the defaults (a table not declared stays ours);
    `s3_options` reach a declared `s3://` table (endpoint, keys: settings.S3Settings);
    `readers`: each input the jobs read, with the jobs that read it."""
    declared = default_inputs(root, readers)
    if path is None:
        return declared
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputsError(f"FRESHNESS_INPUTS names {path}, which does not exist") from exc
    except tomllib.TOMLDecodeError as exc:
        raise InputsError(f"{path} is not valid TOML: {exc}") from exc
    tables = document.get("inputs")
    unknown_top = set(document) - {"inputs"}
    if unknown_top or not isinstance(tables, dict):
        raise InputsError(
            f"{path}: expected only [inputs.<table>] sections, found {sorted(document)}"
        )
    for name, entry in tables.items():
        declared[name] = _parse_entry(path, name, entry, s3_options or {}, readers)
    return declared


def _parse_entry(
    path: Path,
    name: str,
    entry: object,
    s3_options: Mapping[str, str],
    readers: Mapping[str, tuple[str, ...]],
) -> DeclaredInput:
    where = f"{path} [inputs.{name}]"
    if name not in readers:
        raise InputsError(
            f"{where}: the jobs read no input called {name!r}; declare one of {', '.join(readers)}"
        )
    if not isinstance(entry, dict):
        raise InputsError(f"{where}: expected a table of keys {sorted(_KEYS)}")
    extra = set(entry) - _KEYS
    if extra:
        raise InputsError(f"{where}: unknown key(s) {sorted(extra)}; accepted: {sorted(_KEYS)}")
    uri = entry.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InputsError(f"{where}: `uri` is required (a folder, file://... or s3://...)")
    try:
        location = Location.parse(uri)
        if not location.is_local:
            location = location.with_storage_options(s3_options)
    except LocationError as exc:
        raise InputsError(f"{where}: {exc}") from exc
    column = entry.get("arrival_column")
    if column is not None and (not isinstance(column, str) or not _COLUMN.match(column)):
        raise InputsError(f"{where}: arrival_column {column!r} is not a column name")
    read_by = entry.get("read_by", list(readers[name]))
    if not isinstance(read_by, list) or tuple(sorted(read_by)) != tuple(sorted(readers[name])):
        raise InputsError(
            f"{where}: read_by {read_by!r} does not match the jobs: {name} is read by "
            f"{list(readers[name])} (the job declarations fix which job reads which input)"
        )
    deletes = entry.get("deletes", False)
    if not isinstance(deletes, bool):
        raise InputsError(f"{where}: deletes {deletes!r} is not true or false")
    return DeclaredInput(name, location, column, tuple(read_by), True, deletes)
