"""The batch oracle (METHOD 5.6): each job's SQL run once over all raw data, on Spark (its
generated merge over an empty table).

Used by the oracle tests and `make chaos`; `oracle.py` is its independent counterpart."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from freshness_pipeline.catalog.jobs import JOBS, PIPELINE_ORDER, JobSpec
from freshness_pipeline.execution.external_read import read_external
from freshness_pipeline.execution.session_views import await_release
from freshness_pipeline.execution.sql import merged_sql, partial_sql, summed_columns
from freshness_pipeline.hudi.commit_keys import HOODIE_COLUMNS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ORDER = PIPELINE_ORDER


def read_table(spark, uri: str, uncompleted: Iterable[str] = ()):
    """A table's rows as Hudi's Spark reader gives them, without the rows of `uncompleted`
    instants (HudiTableMetadata.uncompleted_instants): Hudi's reader counts the files of a
    write killed in the table's first commit as committed until its lazy rollback, which
    neither the runs nor hudi-rs do (found by the short chaos test: a killed first
    ingestion commit's events counted twice by this oracle alone)."""
    df = spark.read.format("hudi").load(uri)
    skipped = sorted(set(uncompleted))
    if skipped:
        # by the file each row is read from (a base file ends `_<instant>.parquet`), not by
        # its _hoodie_commit_time: a clustering keeps its rows' commit times
        pattern = "_(" + "|".join(skipped) + ")[.]parquet$"
        df = df.where(f"NOT regexp(input_file_name(), '{pattern}')")
    return df.drop(*[c for c in HOODIE_COLUMNS if c in df.columns])


def source_frames(
    spark, jobs: Mapping[str, JobSpec], table_uri, table_meta=None, cutoff_us: int | None = None
) -> dict[str, DataFrame]:
    """The tables `jobs` read and no job of them writes, as DataFrames: rows that arrived by
    `cutoff_us` (dimensions whole); someone else's table by the rule the runs use."""
    frames: dict[str, DataFrame] = {}
    dimensions = {t for spec in jobs.values() for t in spec.dimensions}
    sources = sorted({t for s in jobs.values() for t in (*s.inputs, *s.dimensions)} - set(jobs))
    for name in sources:
        meta = table_meta(name) if table_meta is not None else None
        if meta is not None and meta.external:
            # Someone else's table: arrival by the same rule the runs use.
            frames[name] = read_external(spark, meta)
        else:
            uncompleted = meta.uncompleted_instants() if meta is not None else ()
            frames[name] = read_table(spark, table_uri(name), uncompleted)
        if cutoff_us is not None and name not in dimensions:
            # What a job capped at this watermark has seen: its inputs' rows up to it.
            frames[name] = frames[name].where(f"arrival_ts <= timestamp_micros({cutoff_us})")
    return frames


def batch_recompute(
    spark,
    table_uri,
    scratch: Path,
    table_meta=None,
    cutoff_us: int | None = None,
    jobs: Mapping[str, JobSpec] | None = None,
) -> dict[str, object]:
    """Every job's SQL over the full input tables, chained; returns job -> DataFrame.

    `jobs`: the declared jobs (the bundled six by default); the tables they read and no job
    writes are their sources. `table_meta` (Lakehouse.metadata) says which inputs are
    external; `cutoff_us` keeps only input rows that arrived by then. Each result is written
    to Parquet under `scratch` and read back before the next job replaces the temp views:
    through Spark Connect a SQL DataFrame is re-analysed when it runs, so it must not
    depend on views that change later (and localCheckpoint is not available there)."""
    jobs = JOBS if jobs is None else jobs
    # A run on this session may still be dropping its views, under the names used below.
    await_release(spark)
    frames: dict[str, DataFrame] = source_frames(spark, jobs, table_uri, table_meta, cutoff_us)
    views: set[str] = set()
    try:
        for name, spec in jobs.items():
            named = {f"delta_{table}": frames[table] for table in spec.inputs}
            named |= {table: frames[table] for table in spec.dimensions}
            if spec.kind != "merge":
                named["group_rows"] = frames[spec.inputs[0]]
            for view, frame in named.items():
                frame.createOrReplaceTempView(view)
            partial = spark.sql(partial_sql(spec))
            partial.createOrReplaceTempView("partial")
            partial.limit(0).createOrReplaceTempView("existing")
            views |= set(named) | {"partial", "existing"}
            summed = summed_columns(spec)
            types = {f.name: f.dataType.simpleString() for f in partial.schema if f.name in summed}
            merge = merged_sql(spec, partial.columns, types)
            spark.sql(merge).write.mode("overwrite").parquet(str(scratch / name))
            frames[name] = spark.read.parquet(str(scratch / name))
    finally:
        # The session may be shared (tests, the chaos campaign): leave no view behind.
        for view in views:
            spark.catalog.dropTempView(view)
    return {name: frames[name] for name in jobs}


def differences(spark, expected, actual_uri: str) -> tuple[int, int, list]:
    """(rows only in expected, rows only in actual, a few examples)."""
    actual = read_table(spark, actual_uri).select(*expected.columns)
    missing = expected.exceptAll(actual)
    extra = actual.exceptAll(expected)
    examples = missing.limit(2).collect() + extra.limit(2).collect()
    return missing.count(), extra.count(), examples
