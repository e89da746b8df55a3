"""A job's SQL: its own SELECT (the run's rows, from its declared file) and what its merge
kind generates around it (execution/merge_sql.py): the groups a run touches and the merge with
the stored rows. The runner, the batch oracle and the column lineage all read it here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from freshness_pipeline.catalog.jobs import BUNDLED_JOBS_DIR, JobSpec
from freshness_pipeline.execution.merge_sql import gone_sql, merge_sql, touched_sql
from freshness_pipeline.execution.merge_sql import group_rows_sql as _group_rows_sql

SQL_DIR = BUNDLED_JOBS_DIR
SUMMED = ("sum", "count")


def sql_path(job: str) -> Path:
    return SQL_DIR / f"{job}.sql"


def partial_sql(spec: JobSpec) -> str:
    """The job's SELECT over the views delta_<input> (and group_rows for regrouping jobs)."""
    return spec.declaration.sql.rstrip().rstrip(";")


def touched_groups_sql(spec: JobSpec, changed: bool = False) -> str:
    return touched_sql(spec.declaration, changed)


def gone_rows_sql(spec: JobSpec) -> str:
    """The stored rows of touched groups left without input rows: to delete."""
    return gone_sql(spec.declaration)


def group_rows_sql(spec: JobSpec) -> str:
    """The input's current rows (view group_source) in the groups the run touches."""
    return _group_rows_sql(spec.declaration)


def merged_sql(spec: JobSpec, partial_columns: Sequence[str], types: Mapping[str, str]) -> str:
    """The rows the run upserts, over the views partial and existing; `types`: the partial's
    column types (a sum keeps its column's)."""
    return merge_sql(spec.declaration, partial_columns, types)


def summed_columns(spec: JobSpec) -> set[str]:
    """The columns whose merge adds: their type is held to the partial's."""
    return {r.column for r in spec.declaration.columns if r.rule in SUMMED}
