"""A table checked against the batch oracle on a few of its keys, while the pipeline runs.

A table at watermark W (METHOD 5.2) holds exactly what its SQL gives over every raw row
that arrived by W. So a few keys are sampled from the table and their groups recomputed
twice by the job's own SQL over the raw tables (the batch oracle, chained through the
table's ancestors): once with the raw rows capped at W and once over all of them. A key
whose two recomputations agree is settled, and its stored row must equal them; a key they
disagree on has rows in flight (arrived after W, or an ancestor's group changed since),
which the table may or may not reflect yet, so it is counted and not judged. Nothing is
ever blocked: the check only reads.

The recomputation is one lazy Spark plan per cutoff, each level a temporary view that keeps
the plan it was made from, with the sampled keys as a filter on the last level: Spark's
optimizer pushes it through the levels' groupings and joins towards the raw scans, so
only the sampled groups are aggregated. Where it cannot (a key computed from two inputs'
columns, such as a full outer join's coalesce), the filter is also put below the level by
what the level's kind promises (`filtered_below`): a `per_side_replace` row of key k is
made of its sides' rows of key k (its runs read only their inputs' new rows of a key, so
it cannot be otherwise), and a `replace_by_key` row whose key columns are its input row's
own (their lineage is identity) is made of that row alone. Anything else is computed
whole: slower, the same answer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

from freshness_pipeline.catalog.jobs import JobSpec
from freshness_pipeline.execution.batch_oracle import read_table, source_frames
from freshness_pipeline.execution.session_views import await_release
from freshness_pipeline.execution.sql import merged_sql, partial_sql, summed_columns


def iso_us(us: int) -> str:
    return datetime.fromtimestamp(us / 1_000_000, tz=UTC).isoformat(timespec="microseconds")


# Doubles derived from exact inputs agree to this (README's precision contract); the runs
# and the recomputation may add a group's partial sums in another order.
REL_TOL = 1e-9
VIEW_PREFIX = "freshness_check_"

KeyState = Literal["equal", "differs", "missing", "unexpected", "in_flight"]


@dataclass(frozen=True)
class KeyVerdict:
    key: tuple[Any, ...]
    state: KeyState
    columns: tuple[str, ...] = ()  # the columns that differ ("differs")


@dataclass(frozen=True)
class ExactnessResult:
    table: str
    watermark_us: int | None
    key_columns: tuple[str, ...]
    verdicts: tuple[KeyVerdict, ...]
    seconds: float = 0.0
    problem: str | None = None  # why nothing could be judged, if so
    timings: Mapping[str, float] = field(default_factory=dict)
    timestamp_columns: tuple[str, ...] = ()  # key columns held as microseconds
    filtered_below: tuple[str, ...] = ()  # tables recomputed for the sampled keys only

    def key_text(self, key: tuple[Any, ...]) -> dict[str, str]:
        """A key's values as a user reads them (a timestamp in ISO 8601, UTC)."""
        return {
            column: (
                iso_us(int(value))
                if column in self.timestamp_columns and value is not None
                else str(value)
            )
            for column, value in zip(self.key_columns, key, strict=True)
        }

    @property
    def failed(self) -> tuple[KeyVerdict, ...]:
        return tuple(v for v in self.verdicts if v.state in ("differs", "missing", "unexpected"))

    @property
    def judged(self) -> int:
        return sum(1 for v in self.verdicts if v.state != "in_flight")

    @property
    def in_flight(self) -> int:
        return sum(1 for v in self.verdicts if v.state == "in_flight")

    @property
    def passed(self) -> bool:
        return not self.failed

    def describe(self) -> str:
        """One line a user reads on the check: the table, and for a failure each key with
        the columns that differ."""
        if self.problem:
            return f"{self.table}: {self.problem}"
        at = "no watermark" if self.watermark_us is None else iso_us(self.watermark_us)
        head = (
            f"{self.table} at watermark {at}: {self.judged} sampled keys judged, "
            f"{self.in_flight} in flight"
        )
        if self.passed:
            return f"{head}; every judged key equals the batch oracle"
        parts = []
        for verdict in self.failed:
            key = ", ".join(f"{c}={v}" for c, v in self.key_text(verdict.key).items())
            what = (
                f"columns {', '.join(verdict.columns)} differ"
                if verdict.state == "differs"
                else "row missing from the table"
                if verdict.state == "missing"
                else "row the oracle does not have"
            )
            parts.append(f"({key}): {what}")
        return f"{head}; {len(self.failed)} differ from the batch oracle: " + "; ".join(parts)


def values_equal(a: Any, b: Any, rel_tol: float = REL_TOL) -> bool:
    """Exact for everything but doubles (money is DECIMAL, counts integers)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, Decimal) or isinstance(b, Decimal):
            return a == b
        fa, fb = float(a), float(b)
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
        return math.isclose(fa, fb, rel_tol=rel_tol, abs_tol=0.0)
    return bool(a == b)


def differing_columns(
    stored: Mapping[str, Any], expected: Mapping[str, Any], columns: Iterable[str]
) -> tuple[str, ...]:
    return tuple(c for c in columns if not values_equal(stored.get(c), expected.get(c)))


Rows = Mapping[tuple[Any, ...], Mapping[str, Any]]


def judge(
    keys: Sequence[tuple[Any, ...]],
    columns: Sequence[str],
    stored: Rows,
    at_watermark: Rows,
    over_all: Rows,
) -> tuple[KeyVerdict, ...]:
    """Each sampled key's verdict: in flight where the recomputations at the watermark and
    over every raw row disagree (on presence or any column), else the stored row against
    them."""
    verdicts = []
    for key in keys:
        capped, whole, have = at_watermark.get(key), over_all.get(key), stored.get(key)
        if (capped is None) != (whole is None) or (
            capped is not None and whole is not None and differing_columns(capped, whole, columns)
        ):
            verdicts.append(KeyVerdict(key, "in_flight"))
        elif capped is None:
            verdicts.append(KeyVerdict(key, "equal" if have is None else "unexpected"))
        elif have is None:
            verdicts.append(KeyVerdict(key, "missing"))
        else:
            differ = differing_columns(have, capped, columns)
            verdicts.append(KeyVerdict(key, "differs" if differ else "equal", differ))
    return tuple(verdicts)


def ancestry(jobs: Mapping[str, JobSpec], table: str) -> list[str]:
    """The jobs `table` is computed from, itself last, in the declared order."""
    needed: set[str] = set()
    stack = [table]
    while stack:
        name = stack.pop()
        if name in needed or name not in jobs:
            continue
        needed.add(name)
        stack.extend(jobs[name].inputs)
    return [name for name in jobs if name in needed]


def filtered_below(
    jobs: Mapping[str, JobSpec],
    chain: Sequence[str],
    identity: Callable[[str, str], bool],
) -> tuple[str, ...]:
    """The tables of `chain` (the checked table last) below the checked one whose rows the
    checked table's key filter may keep before their one reader in the chain reads them:
    each has the checked table's key columns, and its reader's kind makes a row of key k
    depend on its rows of key k alone (module docstring). `identity(level, input)`: the
    level's key columns are its input's own, unchanged (their lineage)."""
    table = chain[-1]
    key = set(jobs[table].declaration.key)
    readers: dict[str, list[str]] = {}
    for level in chain:
        for name in (*jobs[level].inputs, *jobs[level].dimensions):
            readers.setdefault(name, []).append(level)
    found: list[str] = []
    keeps = {table}
    for level in reversed(chain):
        if level not in keeps:
            continue
        spec = jobs[level]
        merge = spec.declaration.merge
        for name in spec.inputs:
            if name not in jobs or readers.get(name) != [level]:
                continue
            if set(jobs[name].declaration.key) != key:
                continue
            if merge == "per_side_replace" or (
                merge == "replace_by_key" and len(spec.inputs) == 1 and identity(level, name)
            ):
                keeps.add(name)
                found.append(name)
    return tuple(sorted(found))


def key_identity(
    jobs: Mapping[str, JobSpec], frames: Mapping[str, Any]
) -> Callable[[str, str], bool]:
    """`filtered_below`'s identity from the level's column lineage, traced from its SQL
    over its inputs' schemas as `frames` hold them; a level that cannot be traced is not
    identity (its filter stays on top, as before)."""
    from freshness_pipeline.execution.lineage_model import LineageError
    from freshness_pipeline.execution.lineage_sql import derive_lineage

    def identity(level: str, name: str) -> bool:
        spec = jobs[level]
        try:
            schemas = {
                t: {f.name: f.dataType.simpleString() for f in frames[t].schema}
                for t in (*spec.inputs, *spec.dimensions)
            }
            lineage = derive_lineage(spec, schemas)
        except (LineageError, KeyError):
            return False
        edges = lineage.deps_by_column()
        return all(
            any(
                e.source.table == name and e.source.column == column and e.kinds == ("identity",)
                for e in edges.get(column, [])
            )
            for column in spec.declaration.key
        )

    return identity


def _literal(value: Any, spark_type: str) -> str:
    """A key value as a Spark SQL literal of its column's type."""
    if value is None:
        return f"CAST(NULL AS {spark_type})"
    if spark_type == "timestamp":
        return f"timestamp_micros({int(value)})"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"CAST('{text}' AS {spark_type})"


def key_filter(key_columns: Sequence[str], types: Mapping[str, str], keys) -> str:
    """`(k1 = v1 AND k2 = v2) OR ...` for the sampled keys: a predicate Spark pushes below
    each level's grouping on those columns (an IN over a struct it would not)."""
    terms = []
    for key in keys:
        parts = []
        for column, value in zip(key_columns, key, strict=True):
            if value is None:
                parts.append(f"`{column}` IS NULL")
            else:
                parts.append(f"`{column}` = {_literal(value, types[column])}")
        terms.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(terms) if terms else "false"


def _key_select(key_columns: Sequence[str], types: Mapping[str, str]) -> list[str]:
    """The key as values a literal can be made from: a timestamp as microseconds (a Python
    datetime would carry the session's time zone)."""
    return [
        f"unix_micros(`{c}`) AS `{c}`" if types[c] == "timestamp" else f"`{c}`" for c in key_columns
    ]


class _Views:
    """Temporary views this check makes, dropped at its end (the session may be a run's)."""

    def __init__(self, spark) -> None:
        self.spark = spark
        self.names: set[str] = set()
        self.frames: dict[str, Any] = {}  # each table of the last recomputation, by name

    def keep(self, frame, name: str):
        frame.createOrReplaceTempView(name)
        self.names.add(name)
        return self.spark.table(name)

    def drop(self) -> None:
        for name in self.names:
            self.spark.catalog.dropTempView(name)


def lazy_recompute(
    views: _Views,
    table_uri: Callable[[str], str],
    table_meta,
    jobs: Mapping[str, JobSpec],
    chain: Sequence[str],
    cutoff_us: int | None,
    tag: str,
    below: Mapping[str, str] | None = None,
):
    """The last job of `chain` recomputed over its sources (capped at `cutoff_us`), every
    level a view holding its plan: the batch oracle's SQL without writing any level; a
    level in `below` kept to the rows its filter names before its reader reads it."""
    spark = views.spark
    chain_jobs = {name: jobs[name] for name in chain}
    frames: dict[str, Any] = {
        name: views.keep(frame, f"{VIEW_PREFIX}{tag}_src_{name}")
        for name, frame in source_frames(
            spark, chain_jobs, table_uri, table_meta, cutoff_us
        ).items()
    }
    views.frames = frames
    for name in chain:
        spec = jobs[name]
        named = {f"delta_{t}": frames[t] for t in spec.inputs}
        named |= {t: frames[t] for t in spec.dimensions}
        if spec.kind != "merge":
            named["group_rows"] = frames[spec.inputs[0]]
        for view, frame in named.items():
            views.keep(frame, view)
        partial = views.keep(spark.sql(partial_sql(spec)), "partial")
        views.keep(partial.limit(0), "existing")
        summed = summed_columns(spec)
        types = {f.name: f.dataType.simpleString() for f in partial.schema if f.name in summed}
        merge = merged_sql(spec, partial.columns, types)
        frame = spark.sql(merge)
        if below and name in below:
            frame = frame.where(below[name])
        frames[name] = views.keep(frame, f"{VIEW_PREFIX}{tag}_{name}")
    return frames[chain[-1]]


def _rows_by_key(frame, key_columns: Sequence[str], types: Mapping[str, str], columns):
    """Collected rows by key (timestamps in the key as microseconds, as sampled)."""
    selected = [*_key_select(key_columns, types)] + [f"`{c}` AS `__value_{c}`" for c in columns]
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in frame.selectExpr(*selected).collect():
        key = tuple(row[c] for c in key_columns)
        out[key] = {c: row[f"__value_{c}"] for c in columns}
    return out


def check_table(
    spark,
    table: str,
    jobs: Mapping[str, JobSpec],
    table_uri: Callable[[str], str],
    table_meta,
    sample: int = 5,
    seed: int | None = None,
    keys: Sequence[tuple[Any, ...]] = (),
) -> ExactnessResult:
    """Samples `sample` keys of `table` and judges them, with any `keys` given (a key's
    timestamps in microseconds), against the batch oracle at the table's watermark (module
    docstring)."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    spec = jobs[table]
    key_columns = tuple(spec.declaration.key)
    meta = table_meta(table)
    watermark = meta.watermark_us()
    if watermark is None:
        return ExactnessResult(table, None, key_columns, (), problem="no watermark yet")
    await_release(spark)  # a run on this session may still be dropping its views
    views = _Views(spark)
    try:
        stored_all = read_table(spark, table_uri(table), meta.uncompleted_instants())
        types = {f.name: f.dataType.simpleString() for f in stored_all.schema}
        order = "rand()" if seed is None else f"rand({int(seed)})"
        sampled = stored_all.selectExpr(*_key_select(key_columns, types), f"{order} AS __order")
        rows = sampled.orderBy("__order").limit(sample).collect() if sample > 0 else []
        drawn = [tuple(r[c] for c in key_columns) for r in rows]
        judged_keys = list(dict.fromkeys([*map(tuple, keys), *drawn]))
        timings["sample_s"] = time.perf_counter() - started
        if not judged_keys:
            return ExactnessResult(table, watermark, key_columns, (), problem="the table is empty")
        where = key_filter(key_columns, types, judged_keys)
        chain = ancestry(jobs, table)
        mark = time.perf_counter()
        capped = lazy_recompute(views, table_uri, table_meta, jobs, chain, watermark, "w")
        pushed: tuple[str, ...] = ()
        if filtered_below(jobs, chain, lambda level, name: True):  # a level's kind may allow
            pushed = filtered_below(jobs, chain, key_identity(jobs, views.frames))
        below = dict.fromkeys(pushed, where)
        if pushed:  # the same plan again, with the key filter below those levels
            capped = lazy_recompute(
                views, table_uri, table_meta, jobs, chain, watermark, "w", below
            )
        columns = [c for c in capped.columns if c in types and c not in key_columns]
        at_watermark = _rows_by_key(capped.where(where), key_columns, types, columns)
        timings["at_watermark_s"] = time.perf_counter() - mark
        mark = time.perf_counter()
        whole = lazy_recompute(views, table_uri, table_meta, jobs, chain, None, "all", below)
        over_all = _rows_by_key(whole.where(where), key_columns, types, columns)
        timings["over_all_s"] = time.perf_counter() - mark
        mark = time.perf_counter()
        stored = _rows_by_key(stored_all.where(where), key_columns, types, columns)
        timings["stored_s"] = time.perf_counter() - mark
    finally:
        views.drop()
    verdicts = judge(judged_keys, columns, stored, at_watermark, over_all)
    return ExactnessResult(
        table,
        watermark,
        key_columns,
        verdicts,
        seconds=time.perf_counter() - started,
        timings=timings,
        timestamp_columns=tuple(c for c in key_columns if types[c] == "timestamp"),
        filtered_below=pushed,
    )
