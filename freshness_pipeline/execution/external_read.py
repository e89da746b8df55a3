"""Reading an external input table (one someone else writes, see inputs.py) for a run.

Through Hudi's own reader, never plain Parquet: a merge-on-read slice's log files hold rows
a Parquet read of its base file misses. The rows get an `arrival_ts` column by the same
rule the scheduler planned with (hudi_metadata.py): the declared arrival column, or, with
none declared, the completion time of the commit that wrote the row (`_hoodie_commit_time`
names it). The batch oracle reads external inputs with the same function, so both sides
agree on what a row's arrival is.

A run reads incrementally: Hudi's incremental query over the commits that wrote rows
arriving in its range (hudi/changes.py), which opens only the files those commits wrote,
kept to the rows those commits wrote and to the file groups the plan chose.
"""

from __future__ import annotations

from collections.abc import Iterable

from freshness_pipeline.hudi.changes import ChangeWindow
from freshness_pipeline.hudi.commit_keys import HOODIE_COLUMNS
from freshness_pipeline.hudi.metadata import HudiTableMetadata

ARRIVAL = "arrival_ts"
INCREMENTAL_OPTIONS = {
    "hoodie.datasource.query.type": "incremental",
    # Files of the range the cleaner already removed: the rows are read from the table
    # as it is instead of failing the run (the arrival filter keeps the same rows).
    "hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true",
}


def arrival_expression(meta: HudiTableMetadata) -> str:
    """Spark SQL for a row's arrival time in `meta`'s table."""
    if meta.arrival_column is not None:
        return f"CAST(`{meta.arrival_column}` AS TIMESTAMP)"
    commits = meta.commits()
    completed = {c.instant: meta.completion_us(c) for c in commits}
    # Rows of commits archived off the active timeline completed before every active one:
    # the oldest active completion bounds them (hudi_metadata plans them the same way).
    oldest = min(completed.values()) if completed else 0
    cases = " ".join(f"WHEN '{instant}' THEN {us}" for instant, us in completed.items())
    mapped = f"CASE _hoodie_commit_time {cases} ELSE {oldest} END" if cases else str(oldest)
    return f"timestamp_micros({mapped})"


def read_external(
    spark,
    meta: HudiTableMetadata,
    file_ids: Iterable[str] | None = None,
    window: ChangeWindow | None = None,
):
    """The table's current rows (all, or those of `file_ids`' file groups; with `window`,
    only those its commits wrote) with `arrival_ts`, without Hudi's own columns."""
    # No data skipping from the table's column stats (its metadata table): Hudi loads them
    # by persisting and unpersisting a Dataset (HoodieCatalystUtils.withPersistedDataset),
    # and two such reads in one Spark application, one Connect session per run, deadlock
    # in Spark's CacheManager (each execute thread holds one CachedRDDBuilder and waits
    # for the other's). Our runs filter someone else's table on expressions of its columns
    # (the groups a run touches), which its stats seldom prune anyway; and stats that do
    # not cover every file can prune matching rows (apache/hudi#20296).
    reader = spark.read.format("hudi").option("hoodie.enable.data.skipping", "false")
    if window is not None:
        reader = (
            reader.options(**INCREMENTAL_OPTIONS)
            .option("hoodie.datasource.read.begin.instanttime", window.start)
            .option("hoodie.datasource.read.end.instanttime", window.end)
        )
    df = reader.load(meta.table_uri)
    if window is not None:
        df = df.where(f"_hoodie_commit_time IN ({sql_strings(window.instants)})")
    if file_ids is not None:
        ids = sorted(set(file_ids))
        if not ids:
            df = df.limit(0)
        else:
            # A base file is named `<fileId>_<token>_<instant>.parquet`; a row merged from a
            # log carries the bare file id: the part before the first `_` is the group.
            df = df.where(f"split(_hoodie_file_name, '_')[0] IN ({sql_strings(ids)})")
    # selectExpr, not withColumn(F.expr(...)): the same call through Spark Connect and locally
    kept = [f"`{c}`" for c in df.columns if c != ARRIVAL]
    df = df.selectExpr(*kept, f"{arrival_expression(meta)} AS {ARRIVAL}")
    return df.drop(*[c for c in HOODIE_COLUMNS if c in df.columns])


def sql_strings(values: Iterable[str]) -> str:
    """Values as a SQL list of string literals, sorted (for `IN (...)`)."""
    return ", ".join(f"'{v}'" for v in sorted(values))
