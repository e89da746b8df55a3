"""The SQL a declared job's run needs besides its own SELECT, generated from its merge kind
(catalog/declaration.py; METHOD 9): the groups a run touches, and the merge of the run's
rows (the view `partial`) with the stored rows of the same keys (the view `existing`).

Each merge keeps METHOD 5.6: after any sequence of runs over any split of the input, the
table equals one run over all of it. Pure text; the runner registers the views."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from freshness_pipeline.catalog.declaration import ARRIVAL_COLUMN, ColumnRule, JobDeclaration

RANK_COLUMN = "_freshness_rank"


def key_expressions(job: JobDeclaration) -> list[tuple[str, str]]:
    """(key column, SQL over an input row giving it): declared in `groups`, else the input
    column of the same name."""
    declared = dict(job.groups)
    return [(k, declared.get(k, k)) for k in job.key]


def touched_sql(job: JobDeclaration, changed: bool = False) -> str:
    """recompute_touched_groups: the groups (key values) the run's input rows touch; with
    `changed`, also those the old versions of changed rows (view `changed_<input>`) left."""
    columns = ", ".join(k if sql == k else f"{sql} AS {k}" for k, sql in key_expressions(job))
    source = job.inputs[0]
    touched = f"SELECT DISTINCT {columns} FROM delta_{source}"
    if changed:
        touched += f"\nUNION\nSELECT DISTINCT {columns} FROM changed_{source}"
    return touched


def gone_sql(job: JobDeclaration) -> str:
    """recompute_touched_groups following deletes: the stored rows (view `stored`) of the
    groups the run touched (`run_touched`) that the run did not recompute (`run_result`):
    every input row of theirs is gone."""
    on = " AND ".join(f"{{a}}.{k} = {{b}}.{k}" for k in job.key)
    return (
        "SELECT s.* FROM stored s\n"
        f"LEFT SEMI JOIN run_touched t ON {on.format(a='s', b='t')}\n"
        f"LEFT ANTI JOIN run_result r ON {on.format(a='s', b='r')}"
    )


def group_rows_sql(job: JobDeclaration, source: str = "group_source") -> str:
    """The current input rows (view `source`) of the groups the run touches (`run_touched`)."""
    pairs = key_expressions(job)
    if len(pairs) == 1:
        ((key, sql),) = pairs
        return f"SELECT * FROM {source} WHERE {sql} IN (SELECT {key} FROM run_touched)"
    exprs = ", ".join(sql for _, sql in pairs)
    keys = ", ".join(k for k, _ in pairs)
    return f"SELECT * FROM {source} WHERE ({exprs}) IN (SELECT {keys} FROM run_touched)"


def merge_sql(
    job: JobDeclaration, partial_columns: Sequence[str], types: Mapping[str, str] | None = None
) -> str:
    """The rows the run upserts, over the views `partial` and `existing`. `partial_columns`:
    the columns of the job's SELECT, in order; `types`: their Spark SQL types, which a sum
    keeps (a DECIMAL sum would otherwise widen its type run after run)."""
    if job.merge == "partial_aggregates":
        return _partial_aggregates(job, partial_columns, types or {})
    if job.merge == "per_side_replace":
        return _per_side_replace(job, partial_columns)
    if job.merge == "recompute_touched_groups" and job.window is not None:
        return _windowed_groups(job, partial_columns)
    if job.merge == "recompute_touched_groups":
        return _select_partial(job, partial_columns)
    return _newest_by_key(job, partial_columns)


def output_columns(job: JobDeclaration, partial_columns: Sequence[str]) -> list[str]:
    """The stored table's columns, in order, as merge_sql writes them."""
    if job.merge == "partial_aggregates":
        keys = [c for c in partial_columns if c in job.key]
        names = [*keys, *(r.column for r in job.columns), ARRIVAL_COLUMN]
    elif job.merge == "per_side_replace":
        keys = [c for c in partial_columns if c in job.key]
        values = [c for side in job.sides for c in side.columns]
        arrivals = [side.arrival for side in job.sides]
        names = [*keys, *values, *_derived_names(job), *arrivals, ARRIVAL_COLUMN]
    elif job.merge == "recompute_touched_groups" and job.window is not None:
        window = job.window
        own = [c for c in partial_columns if c != window.group_arrival]
        names = [*own, *(n for n, _ in window.columns), window.group_arrival, ARRIVAL_COLUMN]
    else:
        names = list(partial_columns)
    if job.partition is not None and job.partition.column not in names:
        names.append(job.partition.column)
    return names


def _derived_names(job: JobDeclaration) -> list[str]:
    return [r.column for r in job.columns if r.rule == "derived"]


def _key_join(job: JobDeclaration, left: str = "p", right: str = "e") -> str:
    return " AND ".join(f"{right}.{k} = {left}.{k}" for k in job.key)


def _partition_select(job: JobDeclaration, columns: Sequence[str]) -> list[str]:
    if job.partition is None or job.partition.column in columns:
        return []
    return [f"{job.partition.expr} AS {job.partition.column}"]


def _combine(rule: ColumnRule, types: Mapping[str, str]) -> str:
    """How the run's partial value of a column combines with the stored one."""
    c = rule.column
    if rule.rule in ("sum", "count"):
        # A side without a value (SQL's sum of no rows) keeps the other's.
        added = f"coalesce(p.{c} + e.{c}, p.{c}, e.{c})"
        return f"CAST({added} AS {types[c]})" if c in types else added
    if rule.rule in ("min", "max"):
        # Spark's least and greatest skip nulls: a side without a value keeps the other's.
        return f"{'least' if rule.rule == 'min' else 'greatest'}(p.{c}, e.{c})"
    o = rule.arg
    if rule.rule in ("first_by", "last_by"):
        before = "<" if rule.rule == "first_by" else ">"
        return (
            f"CASE WHEN e.{o} IS NULL OR (p.{o} IS NOT NULL AND p.{o} {before} e.{o}) "
            f"THEN p.{c} ELSE e.{c} END"
        )
    beyond, short = (">", "<") if rule.rule == "sum_at_max" else ("<", ">")
    return (
        f"CASE WHEN e.{o} IS NULL OR p.{o} {beyond} e.{o} THEN p.{c} "
        f"WHEN p.{o} IS NULL OR p.{o} {short} e.{o} THEN e.{c} "
        f"ELSE p.{c} + e.{c} END"
    )


def _merged_with_existing(job: JobDeclaration, merged: list[str], final: list[str]) -> str:
    """The run's rows joined with the stored rows of their keys into `merged`, then the
    table's columns computed from it."""
    return (
        "WITH merged AS (\n  SELECT\n    "
        + ",\n    ".join(merged)
        + f"\n  FROM partial p\n  LEFT JOIN existing e ON {_key_join(job)}\n)\n"
        + "SELECT\n  "
        + ",\n  ".join(final)
        + "\nFROM merged"
    )


def _partial_aggregates(
    job: JobDeclaration, partial_columns: Sequence[str], types: Mapping[str, str]
) -> str:
    keys = [c for c in partial_columns if c in job.key]
    merged = [f"p.{k}" for k in keys]
    merged += [f"{_combine(r, types)} AS {r.column}" for r in job.columns if r.rule != "derived"]
    merged.append(f"greatest(p.{ARRIVAL_COLUMN}, e.{ARRIVAL_COLUMN}) AS {ARRIVAL_COLUMN}")
    final = [*keys]
    final += [f"{r.arg} AS {r.column}" if r.rule == "derived" else r.column for r in job.columns]
    final.append(ARRIVAL_COLUMN)
    final += _partition_select(job, final)
    return _merged_with_existing(job, merged, final)


def _per_side_replace(job: JobDeclaration, partial_columns: Sequence[str]) -> str:
    keys = [c for c in partial_columns if c in job.key]
    merged = [f"p.{k}" for k in keys]
    for side in job.sides:
        for column in (*side.columns, side.arrival):
            merged.append(f"IF(p.{side.present}, p.{column}, e.{column}) AS {column}")
    arrivals = [side.arrival for side in job.sides]
    final = [*keys, *(c for side in job.sides for c in side.columns)]
    final += [f"{r.arg} AS {r.column}" for r in job.columns if r.rule == "derived"]
    final += [*arrivals, f"greatest({', '.join(arrivals)}) AS {ARRIVAL_COLUMN}"]
    final += _partition_select(job, [*keys, *arrivals, ARRIVAL_COLUMN])
    return _merged_with_existing(job, merged, final)


def _select_partial(job: JobDeclaration, partial_columns: Sequence[str]) -> str:
    columns = [*partial_columns, *_partition_select(job, partial_columns)]
    return "SELECT " + ", ".join(columns) + " FROM partial"


def _newest_by_key(job: JobDeclaration, partial_columns: Sequence[str]) -> str:
    """replace_by_key: one row per key, the newest by arrival."""
    columns = [*partial_columns, *_partition_select(job, partial_columns)]
    return (
        "SELECT " + ", ".join(columns) + " FROM (\n"
        f"  SELECT *, row_number() OVER (PARTITION BY {', '.join(job.key)} "
        f"ORDER BY {ARRIVAL_COLUMN} DESC) AS {RANK_COLUMN}\n"
        f"  FROM partial\n) WHERE {RANK_COLUMN} = 1"
    )


def _windowed_groups(job: JobDeclaration, partial_columns: Sequence[str]) -> str:
    """recompute_touched_groups with a trailing window of w seconds: the recomputed groups
    (partial) over the stored ones, and every row whose window holds a recomputed group
    (its group within w seconds before it) recomputed from those groups."""
    window = job.window
    assert window is not None
    t, groups_of = job.event_time, job.group_columns
    same_group = " AND ".join(f"{{a}}.{g} = {{b}}.{g}" for g in groups_of)
    own = [c for c in partial_columns if c != window.group_arrival]
    ga = window.group_arrival
    union_cols = ", ".join(partial_columns)
    stored_cols = ", ".join(f"e.{c}" for c in partial_columns)
    select = [f"g.{c}" for c in own]
    select += [f"{sql} AS {name}" for name, sql in window.columns]
    select += [f"g.{ga}", f"greatest(g.{ga}, coalesce(max(w.{ga}), g.{ga})) AS {ARRIVAL_COLUMN}"]
    # The partition is computed over the finished rows: inside the window's join its
    # columns would be ambiguous (g or w) and outside its GROUP BY.
    names = [*own, *(name for name, _ in window.columns), ga, ARRIVAL_COLUMN]
    names += _partition_select(job, names)
    return (
        f"WITH groups AS (\n  SELECT {union_cols} FROM partial\n  UNION ALL\n"
        f"  SELECT {stored_cols}\n  FROM existing e LEFT ANTI JOIN partial p\n"
        f"    ON {same_group.format(a='p', b='e')} AND p.{t} = e.{t}\n),\n"
        "affected AS (\n"
        f"  SELECT DISTINCT {', '.join(f'g.{c}' for c in (*groups_of, t))}\n"
        f"  FROM groups g JOIN partial p\n    ON {same_group.format(a='p', b='g')}\n"
        f"   AND g.{t} >= p.{t} AND g.{t} <= p.{t} + INTERVAL {window.seconds} SECONDS\n),\n"
        "windowed AS (\n  SELECT\n  " + ",\n  ".join(select) + "\nFROM affected a\n"
        f"JOIN groups g ON {same_group.format(a='g', b='a')} AND g.{t} = a.{t}\n"
        f"LEFT JOIN groups w\n  ON {same_group.format(a='w', b='g')}\n"
        f" AND w.{t} >= g.{t} - INTERVAL {window.seconds} SECONDS AND w.{t} < g.{t}\n"
        f"GROUP BY {', '.join(f'g.{c}' for c in partial_columns)}\n)\n"
        f"SELECT {', '.join(names)} FROM windowed"
    )
