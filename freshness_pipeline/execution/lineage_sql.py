"""Traces one job's SQL to its column lineage with sqlglot (Spark dialect); the rules and the
views are described in `lineage.py`, which imports this module only when its snapshot of
the derived lineage is missing or out of date (sqlglot's import and the tracing together
take about a quarter of a second)."""

from __future__ import annotations

from collections.abc import Mapping

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from freshness_pipeline.catalog.jobs import JobSpec
from freshness_pipeline.execution.lineage_model import (
    KIND_RANK,
    AssetLineage,
    ColumnRef,
    Edge,
    IndirectDep,
    LineageError,
    OutputColumn,
    file_sha256,
)
from freshness_pipeline.execution.sql import merged_sql, partial_sql, summed_columns

DIALECT = "spark"
_SELF = "<self>"  # the `existing` view: the target's own rows

# Origins of one column of a relation: input column -> the kinds of the paths reaching it.
Origins = dict[ColumnRef, frozenset[str]]


def _compose(step: str, inner: frozenset[str]) -> frozenset[str]:
    return frozenset(max(step, k, key=KIND_RANK.__getitem__) for k in inner)


def _merge_into(target: Origins, origins: Origins) -> None:
    for ref, kinds in origins.items():
        target[ref] = target.get(ref, frozenset()) | kinds


def _step_kind(column: exp.Column, root: exp.Expression) -> str:
    """How a column reference reaches the projection it sits in."""
    if column is root:
        return "identity"
    aggregated = conditional = False
    node: exp.Expr = column
    while node is not root and node.parent is not None:
        parent = node.parent
        if isinstance(parent, exp.AggFunc):
            aggregated = True
        # CASE WHEN c THEN v and IF(c, v, w) both parse to If(this=c, true=v, ...).
        if isinstance(parent, exp.If) and node.arg_key == "this":
            conditional = True
        node = parent
    if conditional:
        return "condition"
    return "aggregate" if aggregated else "transform"


class _SectionTracer:
    """Resolves one qualified SQL statement to the origins of each output column."""

    def __init__(self, leaves: Mapping[str, Mapping[str, Origins]], where: str) -> None:
        self.leaves = leaves  # view name -> column -> origins
        self.where = where
        # Input columns that choose rows rather than values (join and filter predicates,
        # grouping keys): they affect every output column, so they are kept per table.
        self.indirect: dict[ColumnRef, set[str]] = {}

    def relation(
        self, query: exp.Expression, ctes: Mapping[str, list[tuple[str, Origins]]]
    ) -> list[tuple[str, Origins]]:
        if isinstance(query, exp.Subquery):
            return self.relation(query.this, ctes)
        if isinstance(query, exp.SetOperation):  # UNION ALL: by position, names of the left
            left = self.relation(query.this, ctes)
            right = self.relation(query.expression, ctes)
            if len(left) != len(right):
                raise LineageError(f"{self.where}: set operation sides differ in width")
            out = []
            for (name, first), (_, more) in zip(left, right, strict=True):
                merged = dict(first)
                _merge_into(merged, more)
                out.append((name, merged))
            return out
        if not isinstance(query, exp.Select):
            raise LineageError(f"{self.where}: cannot trace a {type(query).__name__}")
        scope_ctes = dict(ctes)
        with_ = query.args.get("with_") or query.args.get("with")
        if with_ is not None:
            for cte in with_.expressions:
                scope_ctes[cte.alias] = self.relation(cte.this, scope_ctes)
        sources = self._sources(query, scope_ctes)
        for join in query.args.get("joins") or []:
            self._note_indirect(join.args.get("on"), sources, "join")
        self._note_indirect(query.args.get("where"), sources, "filter")
        self._note_indirect(query.args.get("having"), sources, "filter")
        self._note_indirect(query.args.get("group"), sources, "group_by")
        out = []
        for projection in query.expressions:
            root = projection.this if isinstance(projection, exp.Alias) else projection
            origins: Origins = {}
            for column in root.find_all(exp.Column):
                _merge_into(
                    origins,
                    {
                        ref: _compose(_step_kind(column, root), kinds)
                        for ref, kinds in self._resolve(column, sources).items()
                    },
                )
            out.append((projection.alias_or_name, origins))
        return out

    def _resolve(self, column: exp.Column, sources: Mapping[str, Mapping[str, Origins]]) -> Origins:
        source = sources.get(column.table)
        if source is None:
            raise LineageError(f"{self.where}: {column.sql()} names no source of its query")
        if column.name not in source:
            raise LineageError(
                f"{self.where}: {column.sql()}: {column.table!r} has no column {column.name!r}"
            )
        return source[column.name]

    def _note_indirect(
        self,
        clause: exp.Expression | None,
        sources: Mapping[str, Mapping[str, Origins]],
        subtype: str,
    ) -> None:
        if clause is None:
            return
        for column in clause.find_all(exp.Column):
            for ref in self._resolve(column, sources):
                self.indirect.setdefault(ref, set()).add(subtype)

    def _sources(
        self, select: exp.Select, ctes: Mapping[str, list[tuple[str, Origins]]]
    ) -> dict[str, dict[str, Origins]]:
        """Alias -> column -> origins for the FROM and JOIN sources of one SELECT."""
        items = []
        from_ = select.args.get("from_") or select.args.get("from")
        if from_ is not None:
            items.append(from_.this)
        items += [join.this for join in select.args.get("joins") or []]
        sources: dict[str, dict[str, Origins]] = {}
        for item in items:
            if isinstance(item, exp.Table):
                name = item.name
                if name in ctes:
                    columns = dict(ctes[name])
                elif name in self.leaves:
                    columns = dict(self.leaves[name])
                else:
                    raise LineageError(
                        f"{self.where}: reads {name!r}, which is neither a CTE nor a view "
                        f"the runner registers ({', '.join(sorted(self.leaves))})"
                    )
                sources[item.alias_or_name] = columns
            elif isinstance(item, exp.Subquery):
                sources[item.alias_or_name] = dict(self.relation(item.this, ctes))
            else:
                raise LineageError(f"{self.where}: cannot trace a {type(item).__name__} source")
        return sources


def _spark_type(data_type: exp.DataType | None) -> str:
    if data_type is None or data_type.is_type(exp.DataType.Type.UNKNOWN):
        return "unknown"
    return data_type.sql(DIALECT).lower().replace("`", "").replace(" ", "")


def _fill_arg_min_max_types(tree: exp.Expression) -> None:
    """min_by/max_by(x, ord) is x's type (sqlglot leaves it unknown)."""
    for node in tree.find_all(exp.ArgMin, exp.ArgMax):
        if node.type is None or node.type.is_type(exp.DataType.Type.UNKNOWN):
            node.type = node.this.type


def _check_tables(tree: exp.Expression, schemas: Mapping[str, object], where: str) -> None:
    """Every table a section reads is a CTE of it or a view the runner registers."""
    ctes = {cte.alias for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if table.name not in ctes and table.name not in schemas:
            raise LineageError(
                f"{where}: reads {table.name!r}, which is neither a CTE nor a view the runner "
                f"registers ({', '.join(sorted(schemas))})"
            )


def _trace_section(
    sql: str,
    schemas: Mapping[str, Mapping[str, str]],
    leaves: Mapping[str, Mapping[str, Origins]],
    where: str,
) -> tuple[list[tuple[str, Origins]], dict[str, str], dict[ColumnRef, set[str]]]:
    """A section's output columns with their origins, their types, and the input columns
    that choose its rows."""
    try:
        tree = sqlglot.parse_one(sql, dialect=DIALECT)
        if not (isinstance(tree, exp.Expression) and isinstance(tree, exp.Query)):
            raise LineageError(f"{where}: not a query: {sql[:80]!r}")
        _check_tables(tree, schemas, where)
        qualified = qualify(
            tree,
            schema={name: dict(cols) for name, cols in schemas.items()},
            dialect=DIALECT,
            quote_identifiers=False,
        )
        typed = annotate_types(qualified, schema={n: dict(c) for n, c in schemas.items()})
    except LineageError:
        raise
    except Exception as exc:  # sqlglot's own errors, and anything its optimizer trips on
        raise LineageError(f"{where}: {type(exc).__name__}: {exc}") from exc
    if not (isinstance(typed, exp.Expression) and isinstance(typed, exp.Query)):
        raise LineageError(f"{where}: the optimizer made no query of it")
    _fill_arg_min_max_types(typed)
    tracer = _SectionTracer(leaves, where)
    relation = tracer.relation(typed, {})
    types = {
        projection.alias_or_name: _spark_type(
            projection.this.type if isinstance(projection, exp.Alias) else projection.type
        )
        for projection in typed.selects
    }
    return relation, types, tracer.indirect


def _input_views(spec: JobSpec) -> dict[str, str]:
    """The runner's view names -> the table each reads (execution/runner.py)."""
    views = {f"delta_{table}": table for table in spec.inputs}
    views |= {table: table for table in spec.dimensions}
    if spec.kind != "merge":
        views["group_rows"] = spec.inputs[0]
    return views


def _runner_indirect(spec: JobSpec) -> dict[ColumnRef, set[str]]:
    """What the runner's views choose rows by (execution/runner.py), outside the SQL."""
    # delta_<input>: the rows with t_done < arrival_ts <= u.
    facts = {ColumnRef(table, "arrival_ts"): {"filter"} for table in spec.inputs}
    if spec.kind != "merge":
        # group_rows: the input's current rows semi-joined with the touched groups (the key).
        for column in spec.key:
            facts.setdefault(ColumnRef(spec.inputs[0], column), set()).add("join")
    return facts


def derive_lineage(spec: JobSpec, table_schemas: Mapping[str, Mapping[str, str]]) -> AssetLineage:
    """One job's column lineage and output schema; `table_schemas` holds every table it reads."""
    views = _input_views(spec)
    schemas: dict[str, Mapping[str, str]] = {}
    leaves: dict[str, dict[str, Origins]] = {}
    for view, table in views.items():
        if table not in table_schemas:
            raise LineageError(f"{spec.name}: no column schema known for its input {table!r}")
        schemas[view] = table_schemas[table]
        leaves[view] = {
            col: {ColumnRef(table, col): frozenset({"identity"})} for col in table_schemas[table]
        }
    indirect = _runner_indirect(spec)
    partial, partial_types, partial_indirect = _trace_section(
        partial_sql(spec), schemas, leaves, f"{spec.name}.sql"
    )
    for ref, subtypes in partial_indirect.items():
        indirect.setdefault(ref, set()).update(subtypes)
    schemas["partial"] = partial_types
    leaves["partial"] = dict(partial)
    # `existing` has the target's columns; the target's schema is what the merge makes, so
    # trace once with partial's columns standing in, then with the schema that gave.
    existing_types: Mapping[str, str] = partial_types
    summed = summed_columns(spec)
    merge = merged_sql(
        spec, [name for name, _ in partial], {c: t for c, t in partial_types.items() if c in summed}
    )
    for _ in range(2):
        schemas["existing"] = existing_types
        leaves["existing"] = {
            col: {ColumnRef(_SELF, col): frozenset({"identity"})} for col in existing_types
        }
        merged, merged_types, merge_indirect = _trace_section(
            merge, schemas, leaves, f"{spec.name}: the merge generated for {spec.declaration.merge}"
        )
        existing_types = merged_types
    for ref, subtypes in merge_indirect.items():
        indirect.setdefault(ref, set()).update(subtypes)
    order = {name: i for i, (name, _) in enumerate(merged)}
    edges = [
        Edge(ref, ColumnRef(spec.name, name), tuple(sorted(kinds, key=KIND_RANK.__getitem__)))
        for name, origins in merged
        for ref, kinds in origins.items()
        if ref.table != _SELF
    ]
    edges.sort(key=lambda e: (order[e.target.column], e.source))
    return AssetLineage(
        asset=spec.name,
        inputs=(*spec.inputs, *spec.dimensions),
        columns=tuple(OutputColumn(name, merged_types[name]) for name, _ in merged),
        edges=tuple(edges),
        sql_sha256=file_sha256(spec.declaration.path),
        indirect=tuple(
            IndirectDep(ref, tuple(sorted(subtypes)))
            for ref, subtypes in sorted(indirect.items())
            if ref.table != _SELF
        ),
    )


def trace_select(
    sql: str, tables: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[ColumnRef, tuple[str, ...]]]:
    """One query over named tables (name -> column -> type): each output column's input
    columns with their kinds. The rules on their own, without a job's views."""
    leaves = {
        name: {col: {ColumnRef(name, col): frozenset({"identity"})} for col in cols}
        for name, cols in tables.items()
    }
    relation, _, _ = _trace_section(sql, tables, leaves, "query")
    return {
        name: {
            ref: tuple(sorted(kinds, key=KIND_RANK.__getitem__)) for ref, kinds in origins.items()
        }
        for name, origins in relation
    }


def trace_select_indirect(
    sql: str, tables: Mapping[str, Mapping[str, str]]
) -> dict[ColumnRef, tuple[str, ...]]:
    """One query's input columns that choose rows (join, filter, group_by)."""
    leaves = {
        name: {col: {ColumnRef(name, col): frozenset({"identity"})} for col in cols}
        for name, cols in tables.items()
    }
    _, _, indirect = _trace_section(sql, tables, leaves, "query")
    return {ref: tuple(sorted(subtypes)) for ref, subtypes in indirect.items()}
