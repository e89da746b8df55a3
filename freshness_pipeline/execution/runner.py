"""One run of a job on Spark: read exactly the resolved files, keep t_done < arrival <= u,
transform with the job's SQL, merge into the target (the merge its declared kind
generates) and commit with watermark u.

The watermark, the arrival range written and the run's bookkeeping go into the same Hudi
commit as the rows (METHOD 5.2): a run that fails before its commit changes nothing, and
its retry starts from the same t_done. Reads of target and input snapshots are pruned by
partition and by the footer range of `second`, so a run's cost follows the keys it
touches, not the size of the tables (`second` below: the job's declared event time).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from freshness_pipeline.catalog.jobs import JobSpec
from freshness_pipeline.execution.change_read import before_images_sql, read_changes
from freshness_pipeline.execution.connect_calls import ConnectCalls, watching
from freshness_pipeline.execution.external_read import ARRIVAL, read_external
from freshness_pipeline.execution.handoff import Handoffs
from freshness_pipeline.execution.run_config import ResolvedRun
from freshness_pipeline.execution.run_phases import StepTimes, TimelineTimes, runner_phases
from freshness_pipeline.execution.session_views import await_release, drop_views, release_later
from freshness_pipeline.execution.sql import (
    gone_rows_sql,
    group_rows_sql,
    merged_sql,
    partial_sql,
    summed_columns,
    touched_groups_sql,
)
from freshness_pipeline.hudi import step_cpu
from freshness_pipeline.hudi.changes import change_window, commit_window
from freshness_pipeline.hudi.commit_keys import (
    ARRIVAL_MAX_KEY,
    ARRIVAL_MIN_KEY,
    DELETED_COLUMN,
    HOODIE_COLUMNS,
    INDEX_KEY,
    WATERMARK_KEY,
)
from freshness_pipeline.hudi.footers import footer_arrival_range
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.location import Location
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.hudi.write import (
    STALE_PLAN_MARKER,
    guarded_writer_options,
    write_options,
)
from freshness_pipeline.scheduling.units import US_PER_S

T_DONE_BEFORE_KEY = "freshness.t_done_before_us"
FILES_READ_KEY = "freshness.files_read"
DERIVED_MAX_FILE_BYTES = 4 * 1024 * 1024
DERIVED_SMALL_FILE_BYTES = 2 * 1024 * 1024


class InjectedFailure(RuntimeError):
    """Raised by a run asked to fail after writing its files, before its commit (tests)."""


class StalePlan(RuntimeError):
    """Another run moved the target's watermark after this run planned: Hudi refused the
    commit (nothing of this run is visible), so its window is not counted twice."""


@dataclass(frozen=True)
class RunReport:
    job: str
    t_done_before_us: int | None
    t_done_after_us: int
    files_read: int
    bytes_read: int
    rows_scanned: int
    rows_written: int
    seconds: float
    # read, transform and the write's phases (run_phases.runner_phases); empty if unknown
    phases: Mapping[str, float] = field(default_factory=dict)
    # inputs read from an earlier step's result in this run's memory (execution/handoff.py)
    inputs_in_memory: tuple[str, ...] = ()
    # Spark Connect round trips (execution/connect_calls.py): by phase, and by kind as text
    connect_calls: Mapping[str, int] = field(default_factory=dict)
    connect_call_s: float = 0.0
    connect_by_kind: str = ""
    # What the step cost in the JVM that ran it (hudi/step_cpu.py): its tasks' CPU, run
    # and GC time, and the whole JVM's CPU, JIT and GC while it ran; empty: not measured
    cpu: Mapping[str, float] = field(default_factory=dict)


def _now_us() -> int:
    return int(time.time() * US_PER_S)


def _drop_hoodie(df):
    # Names a frame does not have are ignored: asking for its columns first would cost a
    # round trip through Spark Connect.
    return df.drop(*HOODIE_COLUMNS)


def _us_literal(us: int) -> str:
    return f"timestamp_micros({int(us)})"


def _index_options(spec: JobSpec) -> dict[str, str]:
    """The declared index (catalog/declaration.Layout)."""
    index = spec.declaration.index
    if index == "bucket":
        return {
            "hoodie.index.type": "BUCKET",
            "hoodie.index.bucket.engine": "SIMPLE",
            "hoodie.bucket.index.num.buckets": str(spec.declaration.buckets),
        }
    return {"hoodie.index.type": index.upper()}


def _job_write_options(spec: JobSpec) -> dict[str, str]:
    keygen = "ComplexKeyGenerator" if spec.partition_by else "NonpartitionedKeyGenerator"
    return {
        **_index_options(spec),
        "hoodie.datasource.write.keygenerator.class": f"org.apache.hudi.keygen.{keygen}",
        # Every row is computed whole by the job, so the last write wins.
        "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
        # A run with no new rows still commits, so the watermark moves on.
        "hoodie.allow.empty.commit": "true",
        # CoW rewrites every file group a run touches. New keys are recent seconds, so with
        # small size limits they land in a few young files while older files close and stay
        # untouched: a run's rewrite cost stays bounded as tables grow.
        "hoodie.parquet.max.file.size": str(DERIVED_MAX_FILE_BYTES),
        "hoodie.parquet.small.file.limit": str(DERIVED_SMALL_FILE_BYTES),
    }


# A table whose rows can be deleted keeps its changes, for the jobs that read it (hudi/changes.py).
_CDC_OPTIONS = {
    "hoodie.table.cdc.enabled": "true",
    "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER",
}

# Fails a run after its data files are written, before the commit completes (tests, chaos).
_FAIL_BEFORE_COMMIT = {
    "hoodie.precommit.validators": (
        "org.apache.hudi.client.validator.SqlQuerySingleResultPreCommitValidator"
    ),
    "hoodie.precommit.validators.single.value.sql.queries": (
        "select count(*) from <TABLE_NAME> where 1 = 0#1"
    ),
}


def _stale_plan_reason(message: str, job: str) -> str:
    start = message.find(STALE_PLAN_MARKER)
    reason = message[start:].split("\n", 1)[0]
    return f"{job}: {reason}"


class JobRunner:
    def __init__(
        self,
        spark,
        tables: Lakehouse | Callable[[str], str],
        write_overrides: Mapping[str, str] | None = None,
        handoffs: Handoffs | None = None,
    ) -> None:
        """`tables`: the lakehouse (its tables' locations, storage options and lock
        folder), or a callable table name -> URI (a local lakehouse). `write_overrides`:
        Hudi write options put over the job's own, last (bench/write_modes.py measures
        index types and merge-on-read with them). `handoffs`: the results kept by the
        earlier steps of the same run (execution/handoff.py); None: every input from Hudi."""
        self.spark = spark
        self.write_overrides = dict(write_overrides or {})
        self.handoffs = handoffs
        self._in_memory: list[str] = []
        self._calls = ConnectCalls()
        self.lakehouse = tables if isinstance(tables, Lakehouse) else None
        self._table_uri = None if isinstance(tables, Lakehouse) else tables
        self._views: set[str] = set()
        # the arrival range of the input changes (deletes, moves) the current run follows
        self._change_arrival: tuple[int, int] | None = None

    def table_uri(self, table: str) -> str:
        """A table as Spark spells it."""
        if self.lakehouse is not None:
            return self.lakehouse.table_uri(table)
        assert self._table_uri is not None
        return self._table_uri(table)

    def location(self, table: str) -> Location:
        if self.lakehouse is not None:
            return self.lakehouse.table(table)
        return Location.parse(self.table_uri(table))

    def lock_path(self, table: str) -> str | None:
        return self.lakehouse.lock_path(table) if self.lakehouse is not None else None

    def meta(self, table: str) -> HudiTableMetadata:
        if self.lakehouse is not None:
            return self.lakehouse.metadata(table)  # declared inputs: external, their column
        return HudiTableMetadata(self.location(table))

    # --- reads --------------------------------------------------------------------------

    def _snapshot_files(
        self, table: str, partitions: set[str] | None, lo_us: int, hi_us: int, column: str | None
    ):
        """Latest slices of `table` that may hold rows with `column` (event time) in
        [lo, hi] (every slice when `column` is None; none while the table does not exist
        yet)."""
        try:
            meta = self.meta(table)
        except TableNotFound:
            return []
        uris = []
        for fs in meta.latest_file_slices():
            if partitions is not None and fs.partition not in partitions:
                continue
            uri = meta.file_uri(fs.path)
            if column is None:
                uris.append(uri)
                continue
            low, high = footer_arrival_range(meta.file_location(fs.path), column)
            if low is None or high is None or (low <= hi_us and high >= lo_us):
                uris.append(uri)
        return uris

    def _read_files(self, uris: list[str], like_table: str):
        if uris:
            return _drop_hoodie(self.spark.read.parquet(*uris))
        # No file to read: an empty frame with the table's schema.
        meta = self.meta(like_table)
        # A group the newest commits wrote is current; listing the table is the fallback.
        written = list(meta.written_slices().values())
        any_slice = written[-1] if written else meta.latest_file_slices()[0]
        return _drop_hoodie(self.spark.read.parquet(meta.file_uri(any_slice.path)).limit(0))

    def _delta(self, table: str, resolved: ResolvedRun):
        meta = self.meta(table)
        if meta.external:
            # Someone else's table: Hudi's reader (log files too), its arrival rule, only
            # the commits that wrote rows arriving in the run's range.
            window = commit_window(meta, resolved.t_done_us, resolved.cutoff_us, True)
            ids = [p.slice.file_id for p in resolved.files[table]]
            if window is None:
                df = read_external(self.spark, meta).limit(0)
            elif window.replaced_since_start:
                # Files of those commits were clustered or overwritten since: their rows
                # are in the files that replaced them, which the plan chose by file group.
                df = read_external(self.spark, meta, ids)
            else:
                df = read_external(self.spark, meta, ids, window)
        else:
            kept = self.handoffs and self.handoffs.view_for(
                table, resolved.t_done_us, resolved.cutoff_us
            )
            if kept:
                df = self.spark.table(kept)
                self._in_memory.append(table)
            else:
                df = self._read_files([p.uri for p in resolved.files[table]], table)
        low = -1 if resolved.t_done_us is None else resolved.t_done_us
        return df.where(
            f"arrival_ts > {_us_literal(low)} AND arrival_ts <= {_us_literal(resolved.cutoff_us)}"
        )

    @staticmethod
    def _bounds_row(df, column: str, *more: str):
        """One row: `lo` and `hi` of `column` in microseconds (None without rows), and
        `more` expressions over `df` beside them, in the same query."""
        return df.selectExpr(
            f"min(unix_micros({column})) AS lo", f"max(unix_micros({column})) AS hi", *more
        ).first()

    @classmethod
    def _time_bounds(cls, df, column: str) -> tuple[int, int] | None:
        row = cls._bounds_row(df, column)
        return None if row["lo"] is None else (row["lo"], row["hi"])

    def _existing(self, spec: JobSpec, keys_df, window_s: int = 0):
        """Current target rows sharing keys (or, for windows, groups) with `keys_df`."""
        t = spec.event_time
        # the keys' time range and partitions in one query (one round trip through Connect)
        by_partition = (
            [f"collect_set({spec.partition_expr}) AS partitions"] if spec.partition_expr else []
        )
        row = self._bounds_row(keys_df, t, *by_partition)
        if row["lo"] is None:
            return None
        partitions = set(row["partitions"]) if by_partition and not window_s else None
        # the keys' time range, with the window's reach
        lo, hi = row["lo"] - window_s * US_PER_S, row["hi"] + window_s * US_PER_S
        uris = self._snapshot_files(spec.name, partitions, lo, hi, t)
        if not uris:
            return None
        # The range as a row filter as well as a file filter: Spark pushes it into the
        # Parquet scan, whose column index then skips the pages of a file (an hour's rows,
        # by event time) outside it, where the semi join alone would decode every row.
        # Exact on the same ground as the file filter: `t` is part of every key (or group)
        # matched here.
        target = _drop_hoodie(self.spark.read.parquet(*uris)).where(
            f"{t} >= {_us_literal(lo)} AND {t} <= {_us_literal(hi)}"
        )
        if window_s:
            groups = keys_df.select(*spec.group_columns).distinct()
            return target.join(groups, list(spec.group_columns), "left_semi")
        return target.join(keys_df.select(*spec.key).distinct(), list(spec.key), "left_semi")

    # --- the run ------------------------------------------------------------------------

    def run(
        self,
        spec: JobSpec,
        resolved: ResolvedRun,
        fail_before_commit: bool = False,
        keep_result: bool = False,
    ) -> RunReport:
        """`keep_result`: a later step of the run reads this table; its committed rows
        are kept for it (when exact, execution/handoff.py)."""
        await_release(self.spark)
        with watching(self.spark) as self._calls, step_cpu.tagged(self.spark) as tag:
            try:
                report = self._run(spec, resolved, fail_before_commit, keep_result)
            except Exception:
                self._release()
                raise
            except BaseException:
                # Interrupted (Ctrl-C, or Dagster terminating the run). A local JVM dies
                # with us; a shared Spark service would finish the write and commit behind
                # a run Dagster reports as failed, racing its retry. Cancel it there.
                self._interrupt_service_work()
                raise
        # After the commit, outside the run's counted round trips: one query.
        report = replace(report, cpu=step_cpu.take(self.spark, tag))
        # The commit is done: the views go in the background (a round trip each), and the
        # next run on this session waits for them before it registers its own.
        release_later(self.spark, sorted(self._views))
        self._views.clear()
        if not self._calls.total:
            return replace(report, connect_calls={})  # a local session: no round trips
        return replace(
            report,
            connect_call_s=round(self._calls.total_s, 3),
            connect_by_kind=self._calls.by_kind(),
        )

    def _register(self, df, name: str) -> None:
        df.createOrReplaceTempView(name)
        self._views.add(name)

    def wait_for_release(self) -> None:
        """Returns once the views of the last run on this session are dropped."""
        await_release(self.spark)

    def _release(self) -> None:
        drop_views(self.spark, sorted(self._views))
        self._views.clear()

    def _interrupt_service_work(self) -> None:
        if type(self.spark).__module__.startswith("pyspark.sql.connect"):
            # The service may be gone too; then there is nothing left to cancel.
            with contextlib.suppress(Exception):
                self.spark.interruptAll()

    def _cache_view(self, df, name: str):
        """Registers `df` as the temp view `name`, caches the view, returns it as a frame.

        Not `df.cache()`: through Spark Connect a frame is analysed again at every use,
        and a plan with a CTE gets new ids each time, so the cache entry `df.cache()`
        makes is matched by no later query and by no `unpersist`: it stays in the
        service's shared cache for good, with the plans and the session it names (a
        soak's heap held 64 such entries after 22 minutes, and growing). A view is
        analysed once: queries over it use the cache, and uncaching it by name finds
        the same plan, on a local session and through the service alike."""
        self._register(df, name)
        # (not catalog.cacheTable: through Connect that is two round trips, this is one)
        self.spark.sql(f"CACHE LAZY TABLE {name}")
        return self.spark.table(name)

    def _run(
        self, spec: JobSpec, resolved: ResolvedRun, fail_before_commit: bool, keep: bool
    ) -> RunReport:
        started = time.monotonic()
        started_us = _now_us()
        self._change_arrival = None
        self._in_memory = []
        marks = [self._calls.total]
        follows = self.follows_changes(spec)
        deltas = self._register_inputs(spec, resolved)
        inputs_read_us = _now_us()
        marks.append(self._calls.total)
        result = self._transform(spec, resolved if follows else None)
        stats, rows_scanned = self._stats(result, deltas)
        if follows:
            result = self._with_deletions(spec, result)
        transformed_us = _now_us()
        marks.append(self._calls.total)
        self._commit(spec, resolved, result, stats, fail_before_commit, follows)
        committed_us = _now_us()
        marks.append(self._calls.total)
        if keep and self.handoffs is not None and not follows:
            # (A run that followed deletions also deleted rows its result does not hold.)
            self.handoffs.keep(
                self.spark,
                spec.name,
                "run_result",
                resolved.t_done_us,
                resolved.cutoff_us,
                int(stats["n"]),
            )
        marks.append(self._calls.total)
        phases = ("read", "transform", "write", "keep_result")
        calls = {p: marks[i + 1] - marks[i] for i, p in enumerate(phases)}
        step = StepTimes(started_us, inputs_read_us, transformed_us, committed_us)
        return RunReport(
            job=spec.name,
            t_done_before_us=resolved.t_done_us,
            t_done_after_us=resolved.cutoff_us,
            files_read=resolved.file_count,
            bytes_read=resolved.scan_bytes,
            rows_scanned=rows_scanned,
            rows_written=int(stats["n"]),
            seconds=time.monotonic() - started,
            phases=runner_phases(step, self._timeline_times(spec.name, resolved.cutoff_us)),
            inputs_in_memory=tuple(self._in_memory),
            connect_calls=calls,
        )

    def _timeline_times(self, table: str, cutoff_us: int) -> TimelineTimes | None:
        """The marks of the commit this run just made (the newest carrying its watermark);
        None when they cannot be read: timing never fails a committed run."""
        try:
            meta = self.meta(table)
            ours = [c for c in meta.commits() if c.watermark_us == cutoff_us]
            if not ours:
                return None
            timing = meta.instant_timing(ours[-1])
        except Exception:
            return None
        return TimelineTimes(
            timing.requested_us, timing.inflight_us, timing.completed_us, timing.clean_us
        )

    def _register_inputs(self, spec: JobSpec, resolved: ResolvedRun) -> list:
        """`delta_<input>` per input (its rows with t_done < arrival <= u, cached: the first
        query that reads it fills the cache) and each dimension table whole; returns the
        deltas."""
        deltas = [
            self._cache_view(self._delta(table, resolved), f"delta_{table}")
            for table in spec.inputs
        ]
        for table in spec.dimensions:
            dimension = self.spark.read.format("hudi").load(self.table_uri(table))
            self._register(_drop_hoodie(dimension), table)
        return deltas

    @staticmethod
    def _stats(result, deltas: list):
        """The result's rows and arrival range, and the input rows the run scanned: one
        query (a count of each delta of its own was a Spark job and a Connect round trip
        each, only for the count)."""
        frame = result.selectExpr(
            "count(*) AS n",
            "min(unix_micros(arrival_ts)) AS lo",
            "max(unix_micros(arrival_ts)) AS hi",
        )
        for i, delta in enumerate(deltas):
            frame = frame.crossJoin(delta.selectExpr(f"count(*) AS scanned_{i}"))
        row = frame.first()
        # (numpy.int64 through Spark Connect)
        return row, sum(int(row[f"scanned_{i}"]) for i in range(len(deltas)))

    def _transform(self, spec: JobSpec, changes_of: ResolvedRun | None = None):
        """The job's SELECT over the registered views, then its kind's merge: the rows to
        upsert. `changes_of`: the run whose input changes (CDC) touch groups too."""
        spark = self.spark
        if spec.kind != "merge":
            self._register(self._group_rows(spec, changes_of), "group_rows")
        partial = self._cache_view(spark.sql(partial_sql(spec)), "partial")
        if spec.declaration.merge in ("partial_aggregates", "per_side_replace") or spec.window_s:
            existing = self._existing(spec, partial, spec.window_s)
            self._register(existing if existing is not None else partial.limit(0), "existing")
        summed = summed_columns(spec)
        schema = partial.schema  # one analysis through Connect: names and types alike
        types = {f.name: f.dataType.simpleString() for f in schema if f.name in summed}
        merge = merged_sql(spec, [f.name for f in schema], types)
        return self._cache_view(spark.sql(merge), "run_result")

    def _group_rows(self, spec: JobSpec, changes_of: ResolvedRun | None = None):
        """The current rows of the input's groups this run touches (regroup and window):
        those of its new rows and, following changes, of its changed rows' old versions."""
        t, source = spec.event_time, spec.inputs[0]
        changed = changes_of is not None and self._register_changes(source, changes_of)
        touched = self._cache_view(self.spark.sql(touched_groups_sql(spec, changed)), "run_touched")
        if self.meta(source).external:
            # Someone else's table (merge-on-read logs too): through Hudi's reader, whole.
            current = read_external(self.spark, self.meta(source))
        else:
            bounds = self._time_bounds(touched, t)
            if bounds is None:
                return self._read_files([], source)
            # An event time computed from the input (`groups`, e.g. a minute from its
            # seconds) is no column of the input's files, so their footers cannot prune:
            # every file is read, which is exact, only slower.
            by_footer = None if t in dict(spec.declaration.groups) else t
            uris = self._snapshot_files(source, None, bounds[0], bounds[1], by_footer)
            current = self._read_files(uris, source)
        self._register(current, "group_source")
        return self.spark.sql(group_rows_sql(spec))

    def follows_changes(self, spec: JobSpec) -> bool:
        """Whether a run of `spec` follows its input's deletes and moved rows: a job that
        recomputes its groups, over a table with change data capture whose rows can be
        deleted (ours: a table such a job writes; someone else's: declared `deletes`)."""
        if spec.kind != "regroup":
            return False
        source = spec.inputs[0]
        try:
            meta = self.meta(source)
        except TableNotFound:
            return False
        if not meta.cdc_enabled:
            return False
        if not meta.external:
            return True
        declared = self.lakehouse.inputs.get(source) if self.lakehouse is not None else None
        return bool(declared and declared.deletes)

    def _register_changes(self, source: str, resolved: ResolvedRun) -> bool:
        """`changed_<source>`: the old versions of the rows the input's commits in this
        run's range updated or deleted (hudi/changes.py); False when there are none."""
        meta = self.meta(source)
        window = change_window(meta, resolved.t_done_us, resolved.cutoff_us)
        if window is None:
            return False
        columns = {
            f.name: f.dataType.simpleString()
            for f in self.spark.table(f"delta_{source}").schema
            if f.name != ARRIVAL
        }
        uri = meta.table_uri if meta.external else self.table_uri(source)
        self._register(read_changes(self.spark, uri, window, columns), f"cdc_{source}")
        sql = before_images_sql(columns, f"cdc_{source}")
        changed = self._cache_view(self.spark.sql(sql), f"changed_{source}")
        if not changed.take(1):
            return False
        self._change_arrival = (window.arrival_low_us, window.arrival_high_us)
        return True

    def _with_deletions(self, spec: JobSpec, result):
        """The run's rows, and a deletion of every stored row of a touched group that has
        no row any more (its input rows were all deleted or moved away), marked by Hudi's
        `_hoodie_is_deleted`."""
        columns = result.columns
        rows = result.selectExpr(*columns, f"false AS {DELETED_COLUMN}")
        try:
            self.meta(spec.name)
        except TableNotFound:
            return rows
        stored = self.spark.read.format("hudi").load(self.table_uri(spec.name))
        self._register(_drop_hoodie(stored), "stored")
        gone = self.spark.sql(gone_rows_sql(spec)).selectExpr(*columns, f"true AS {DELETED_COLUMN}")
        return rows.unionByName(gone)

    def _create_if_missing(self, spec: JobSpec, result, options: dict[str, str]) -> None:
        """A new target table starts with an empty commit of its schema and no watermark.

        Under optimistic concurrency a failed write is rolled back lazily, and Hudi reads
        an uncommitted file older than the table's first completed commit as archived,
        hence committed: a failed first run would leave its rows in the table for the next
        run to merge (found by the oracle test: industry_spike's rows twice). After this
        commit every failed write is newer than a completed one and stays invisible. A
        table whose every commit failed, the empty one too, is started afresh."""
        try:
            if self.meta(spec.name).commits():
                return
            # The table exists but no commit of it ever completed: a run was killed during
            # the empty commit itself (found by `make chaos`: sector_vwap's first rows
            # twice). Every file in it is then a failed write's, which Hudi would read as
            # committed once a later commit completes. Nothing committed is lost by
            # starting the table afresh, and this run holds the table's writer pool.
            self._remove_table(spec.name)
        except TableNotFound:
            # No hoodie.properties, yet the folder may be there: a run killed while Hudi
            # created the table left `.hoodie/` without it, and Hudi then refuses every
            # later write ("Could not load Hoodie properties"; found by `make chaos`:
            # industry_spike never committed after its first run was killed). Nothing in
            # it was ever committed, and this run holds the table's writer pool.
            if self._half_created(spec.name):
                self._remove_table(spec.name)
        create = {
            k: v
            for k, v in options.items()
            if not k.startswith("freshness.") or k == T_DONE_BEFORE_KEY
        }
        create[T_DONE_BEFORE_KEY] = ""
        if create.get("hoodie.index.type") == "RECORD_LEVEL_INDEX":
            # Hudi 1.1.1 cannot start the record-level index on an empty commit ("Partition
            # record_index should be part of inflight metadata partitions here []"); the
            # first write with it on builds it from the table's files.
            create["hoodie.index.type"] = "SIMPLE"
            create["hoodie.metadata.record.level.index.enable"] = "false"
        result.limit(0).write.format("hudi").options(**create).mode("append").save(
            self.table_uri(spec.name)
        )

    def _half_created(self, table: str) -> bool:
        """The table's folder is there without hoodie.properties (nor Hudi's backup of it,
        which Hudi restores from) and without a data file: a creation cut short. A read
        that fails (an object store's hiccup) raises rather than answering yes."""
        import pyarrow.fs as pafs

        fs, path = self.location(table).filesystem()
        if fs.get_file_info(path).type != pafs.FileType.Directory:
            return False
        props = [f"{path}/.hoodie/hoodie.properties", f"{path}/.hoodie/hoodie.properties.backup"]
        if any(i.type != pafs.FileType.NotFound for i in fs.get_file_info(props)):
            return False
        found = fs.get_file_info(pafs.FileSelector(path, recursive=True))
        return not any(i.path.endswith(".parquet") or ".log." in i.base_name for i in found)

    def _remove_table(self, table: str) -> None:
        fs, path = self.location(table).filesystem()
        fs.delete_dir(path)

    def _commit(
        self,
        spec: JobSpec,
        resolved: ResolvedRun,
        result,
        stats,
        fail: bool,
        follows_changes: bool = False,
    ) -> None:
        """Upserts `result` with the watermark and the written arrival range in the same
        commit, guarded against stale plans. The range covers the input changes the run
        followed: a group changed by a deletion is new to the jobs reading this table."""
        metadata: dict[str, object] = {
            WATERMARK_KEY: resolved.cutoff_us,
            T_DONE_BEFORE_KEY: "" if resolved.t_done_us is None else resolved.t_done_us,
            FILES_READ_KEY: resolved.file_count,
            INDEX_KEY: spec.index_name,
        }
        lows = [v for v in (stats["lo"], *(self._change_arrival or ())[:1]) if v is not None]
        highs = [v for v in (stats["hi"], *(self._change_arrival or ())[1:]) if v is not None]
        if lows and highs:
            metadata[ARRIVAL_MIN_KEY] = min(lows)
            metadata[ARRIVAL_MAX_KEY] = max(highs)
        options = {
            **write_options(spec.layout, "upsert", metadata),
            **guarded_writer_options(self.lock_path(spec.name)),
        }
        options.update(_job_write_options(spec))
        if follows_changes:
            options.update(_CDC_OPTIONS)
        options.update(self.write_overrides)
        self._create_if_missing(spec, result, options)
        if fail:
            options.update(_FAIL_BEFORE_COMMIT)
        try:
            result.write.format("hudi").options(**options).mode("append").save(
                self.table_uri(spec.name)
            )
        except Exception as exc:
            if STALE_PLAN_MARKER in str(exc):
                raise StalePlan(_stale_plan_reason(str(exc), spec.name)) from exc
            # Locally the validator's exception is in the message; through Spark Connect
            # only the outer HoodieUpsertException's is.
            if fail and any(
                name in str(exc) for name in ("ValidationException", "HoodieUpsertException")
            ):
                raise InjectedFailure(f"{spec.name}: injected failure before commit") from exc
            raise
