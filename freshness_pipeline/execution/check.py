"""Declared jobs checked without running anything: each job's SELECT against its
declaration (the columns its merge kind needs, aggregates that merge the way their rule
says) and against its inputs' schemas (every column it reads exists: the lineage tracer
resolves each one), in dependency order, each job's output schema feeding the jobs after
it. Every problem is one line naming the file, the job and, where there is one, the column.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from freshness_pipeline.catalog.declaration import ARRIVAL_COLUMN, Problem
from freshness_pipeline.catalog.jobs import JobSpec
from freshness_pipeline.execution.lineage_model import LineageError
from freshness_pipeline.execution.merge_sql import key_expressions
from freshness_pipeline.execution.sql import partial_sql

# The aggregate a column's rule expects to find in the SELECT, where one is visible there.
RULE_AGGREGATES: dict[str, tuple[type[exp.Expression], ...]] = {
    "sum": (exp.Sum, exp.Count),
    "count": (exp.Count, exp.Sum),
    "min": (exp.Min,),
    "max": (exp.Max,),
    "first_by": (exp.ArgMin,),
    "last_by": (exp.ArgMax,),
    "sum_at_max": (exp.Sum,),
    "sum_at_min": (exp.Sum,),
}
# Aggregates no partial_aggregates rule can merge, by what the SELECT calls them.
UNMERGEABLE_CALLS: dict[type[exp.Expression], str] = {
    exp.Avg: "avg",
    exp.Median: "median",
    exp.Quantile: "percentile",
    exp.PercentileCont: "percentile",
    exp.ApproxDistinct: "approx_count_distinct",
    exp.Stddev: "stddev",
    exp.Variance: "variance",
}
_UNRESOLVED = re.compile(
    r"Column '?\"?(?P<column>[A-Za-z_][A-Za-z0-9_]*)\"?'? could not be resolved"
)


def select_problems(spec: JobSpec) -> list[Problem]:
    """The job's SELECT against what its declaration says it returns."""
    decl = spec.declaration
    problems: list[Problem] = []

    def say(message: str, column: str | None = None) -> None:
        problems.append(Problem(decl.file, decl.name, message, column))

    try:
        tree = sqlglot.parse_one(partial_sql(spec), read="spark")
    except sqlglot.errors.ParseError as exc:
        say(f"the SELECT does not parse: {' '.join(str(exc).split())}")
        return problems
    if not (isinstance(tree, exp.Expression) and isinstance(tree, exp.Query)):
        say("the SELECT is not a query")
        return problems
    projections = {p.alias_or_name: p for p in tree.selects}
    for column in _needed(spec):
        if column not in projections:
            say("the SELECT does not return it (the merge needs it)", column)
    if decl.merge == "partial_aggregates":
        _check_aggregates(spec, projections, say)
    return problems


def _needed(spec: JobSpec) -> list[str]:
    decl = spec.declaration
    needed = list(decl.key)
    if decl.window is not None:
        needed.append(decl.window.group_arrival)  # the merge derives the row's arrival
    elif decl.merge != "per_side_replace":  # there: the latest of the sides' arrivals
        needed.append(ARRIVAL_COLUMN)
    needed += [r.column for r in decl.columns if r.rule != "derived"]
    for side in decl.sides:
        needed += [side.present, side.arrival, *side.columns]
    return list(dict.fromkeys(needed))


def _check_aggregates(spec: JobSpec, projections: Mapping[str, exp.Expr], say) -> None:
    """Each column has a rule, and an aggregate visible in its projection is its rule's."""
    decl = spec.declaration
    ruled = {r.column: r for r in decl.columns}
    for column, projection in projections.items():
        if column in decl.key or column == ARRIVAL_COLUMN:
            continue
        rule = ruled.get(column)
        if rule is None:
            say("returned by the SELECT with no merge rule in `columns`", column)
            continue
        if rule.rule == "derived":
            say("declared `derived` but returned by the SELECT: one or the other", column)
            continue
        for node in projection.find_all(*UNMERGEABLE_CALLS):
            name = UNMERGEABLE_CALLS[type(node)]
            say(f"computed with {name}, which cannot merge from partial values", column)
        if any(
            isinstance(node, exp.Count) and isinstance(node.this, exp.Distinct)
            for node in projection.find_all(exp.Count)
        ):
            say("computed with a distinct count, which cannot merge from partial counts", column)
        aggregates = [n for n in projection.find_all(exp.AggFunc)]
        expected = RULE_AGGREGATES[rule.rule]
        if aggregates and not isinstance(aggregates[0], expected):
            found = aggregates[0].sql(dialect="spark").split("(")[0]
            say(f"declared `{rule.rule}` but the SELECT computes it with {found}", column)


def spark_type(arrow_type) -> str:
    """An Arrow type in Spark SQL's spelling, as the lineage tracer reads schemas."""
    import pyarrow as pa

    simple = {
        pa.string(): "string",
        pa.large_string(): "string",
        pa.int64(): "bigint",
        pa.int32(): "int",
        pa.int16(): "smallint",
        pa.int8(): "tinyint",
        pa.float64(): "double",
        pa.float32(): "float",
        pa.bool_(): "boolean",
        pa.date32(): "date",
        pa.binary(): "binary",
    }
    if arrow_type in simple:
        return simple[arrow_type]
    if pa.types.is_timestamp(arrow_type):
        return "timestamp"
    if pa.types.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    if pa.types.is_struct(arrow_type):
        fields = ",".join(f"{f.name}:{spark_type(f.type)}" for f in arrow_type)
        return f"struct<{fields}>"
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return f"array<{spark_type(arrow_type.value_type)}>"
    return str(arrow_type)


def base_file_columns(lakehouse, table: str) -> dict[str, str]:
    """A table's columns from its newest base file, pyarrow alone (footers.base_file_schema):
    raises TableNotFound, like the metadata, when it has none."""
    from freshness_pipeline.hudi.footers import base_file_schema
    from freshness_pipeline.hudi.metadata import TableNotFound

    schema = base_file_schema(lakehouse.metadata(table).location)
    if schema is None:
        raise TableNotFound(f"no base file yet in {lakehouse.table_uri(table)}")
    return {f.name: spark_type(f.type) for f in schema}


def schema_of(meta) -> dict[str, str]:
    """A Hudi table's columns (HudiTableMetadata) in Spark's spelling, meta columns left out."""
    return {
        f.name: spark_type(f.type) for f in meta.arrow_schema() if not f.name.startswith("_hoodie_")
    }


def input_schemas(
    jobs: Mapping[str, JobSpec], lakehouse, columns_of=None
) -> tuple[dict[str, Mapping[str, str]], list[str]]:
    """The schema of every table the jobs read and no job writes, from its Hudi table in
    the lakehouse (declared inputs where they are declared); a bundled source not written
    yet (before the first ingestion) by the schema our ingestion gives it. Also the lines
    for tables that are neither. `columns_of`: table name -> its schema (name -> Spark type);
    by default from the table's commits through hudi-rs."""
    from freshness_pipeline.execution.lineage import SOURCE_SCHEMAS
    from freshness_pipeline.hudi.metadata import TableNotFound

    read = {t: spec for spec in jobs.values() for t in (*spec.inputs, *spec.dimensions)}
    dimensions = {t for spec in jobs.values() for t in spec.dimensions}
    schemas: dict[str, Mapping[str, str]] = {}
    problems: list[str] = []
    for table, reader in sorted(read.items()):
        if table in jobs:
            continue
        try:
            if columns_of is not None:
                schema = columns_of(table)
            else:
                schema = schema_of(lakehouse.metadata(table))
            declared = lakehouse.inputs.get(table)
            column = declared.arrival_column if declared and declared.external else None
            if column and column not in schema:
                # every run would fail reading it (external_read.py reads it from each
                # commit's files)
                problems.append(
                    f"{reader.declaration.file}: {reader.name}: reads {table}: its declared "
                    f"arrival_column {column!r} (FRESHNESS_INPUTS) is not a column of the "
                    f"table at {lakehouse.table_uri(table)} (it has "
                    f"{', '.join(sorted(schema))})"
                )
            if table not in dimensions:
                # the runner gives every input row its arrival (external_read.py for
                # someone else's table: the declared column or its commit's completion)
                schema.setdefault(ARRIVAL_COLUMN, "timestamp")
            schemas[table] = schema
        except TableNotFound:
            if table in SOURCE_SCHEMAS:
                schemas[table] = SOURCE_SCHEMAS[table]  # ours, not written yet
                continue
            uri = lakehouse.table_uri(table)
            problems.append(
                f"{reader.declaration.file}: {reader.name}: reads {table}: no Hudi table at {uri}"
            )
    return schemas, problems


def layout_problems(jobs: Mapping[str, JobSpec], lakehouse) -> list[Problem]:
    """A job's table that exists already must have the layout its declaration gives it
    (record key, partition column, index): Hudi cannot change them in place, so a table
    written under another declaration is refused, not silently merged into."""
    from freshness_pipeline.hudi.commit_keys import INDEX_KEY
    from freshness_pipeline.hudi.metadata import TableNotFound

    problems = []
    for name, spec in jobs.items():
        try:
            meta = lakehouse.metadata(name)
            props = meta.properties
        except TableNotFound:
            continue
        # The index of the newest commit that names one; tables written before commits did
        # were written with Hudi's default, simple.
        indexes = [c.extra[INDEX_KEY] for c in meta.commits() if INDEX_KEY in c.extra]
        stored = {
            "record key": props.get("hoodie.table.recordkey.fields", ""),
            "partition": props.get("hoodie.table.partition.fields", ""),
            "index": indexes[-1] if indexes else "simple",
        }
        declared = {
            "record key": ",".join(spec.key),
            "partition": spec.partition_by or "",
            "index": spec.index_name,
        }
        for what, value in declared.items():
            if stored[what] != value:
                problems.append(
                    Problem(
                        spec.declaration.file,
                        name,
                        f"its table at {lakehouse.table_uri(name)} has {what} "
                        f"{stored[what] or 'none'!r}, the declaration says {value or 'none'!r}: "
                        f"rebuild the table (`freshness rebuild {name}`: Hudi cannot change "
                        "it in place) or fix the declaration",
                    )
                )
    return problems


def check_jobs(
    jobs: Mapping[str, JobSpec], source_schemas: Mapping[str, Mapping[str, str]]
) -> list[Problem]:
    """Every job in dependency order: its SELECT against its declaration and every column
    it reads against the schemas of the tables it reads (`source_schemas`: the tables no
    job writes, e.g. from their Hudi metadata)."""
    from freshness_pipeline.execution.lineage_sql import derive_lineage

    problems: list[Problem] = []
    schemas: dict[str, Mapping[str, str]] = dict(source_schemas)
    for name, spec in jobs.items():
        decl = spec.declaration
        unknown = [t for t in (*spec.inputs, *spec.dimensions) if t not in schemas]
        for table in unknown:
            problems.append(
                Problem(decl.file, name, f"reads {table}: no such table and no job writes it")
            )
        own = select_problems(spec)
        if spec.kind != "merge" and not unknown:
            own += group_problems(spec, schemas[spec.inputs[0]])
        problems += own
        if unknown or own:
            schemas[name] = {}  # its readers are checked against nothing more than this
            continue
        try:
            derived = derive_lineage(spec, schemas)
        except LineageError as exc:
            problems.append(_lineage_problem(spec, exc))
            continue
        schemas[name] = {c.name: c.type for c in derived.columns}
    return problems


def group_problems(spec: JobSpec, input_schema: Mapping[str, str]) -> list[Problem]:
    """A recompute_touched_groups run finds the groups its input rows touch by computing
    every key column from an input row (merge_sql.key_expressions): the input's column of
    that name, or the SQL declared for it in `groups`. A column that is neither would fail
    every run with UNRESOLVED_COLUMN, after the sensor launched it."""
    decl = spec.declaration
    declared = dict(decl.groups)
    problems = []
    for key, sql in key_expressions(decl):
        try:
            tree = sqlglot.parse_one(sql, read="spark")
        except sqlglot.errors.ParseError as exc:
            text = " ".join(str(exc).split())
            problems.append(
                Problem(decl.file, decl.name, f"`groups` SQL does not parse: {text}", key)
            )
            continue
        missing = sorted({c.name for c in tree.find_all(exp.Column)} - set(input_schema))
        if not missing:
            continue
        source = decl.inputs[0]
        if key in declared:
            message = f"`groups` computes it from {', '.join(missing)}, not a column of {source}"
        else:
            message = (
                f"a key column that is not a column of {source}: a run finds the groups it "
                f"touches from each input row, so declare how it follows from one in "
                f'`groups` (e.g. `groups: {{{key}: "to_date(<a column of {source}>)"}}`; '
                "docs/JOBS.md)"
            )
        problems.append(Problem(decl.file, decl.name, message, key))
    return problems


def _lineage_problem(spec: JobSpec, exc: LineageError) -> Problem:
    text = " ".join(str(exc).split())
    match = _UNRESOLVED.search(text)
    decl = spec.declaration
    if match:
        inputs = ", ".join((*spec.inputs, *spec.dimensions))
        return Problem(
            decl.file,
            decl.name,
            f"read by the SQL but not a column of its inputs ({inputs})",
            match.group("column"),
        )
    return Problem(decl.file, decl.name, text)


@dataclass(frozen=True)
class InputChanges:
    """What a table the jobs read (and no job writes) says about its rows changing."""

    deletes: bool  # declared: its writer deletes rows or moves them between groups
    cdc: bool | None  # hoodie.table.cdc.enabled; None while the table does not exist
    arrival_column: str | None


def deleting_tables(
    jobs: Mapping[str, JobSpec], sources: Mapping[str, InputChanges]
) -> frozenset[str]:
    """The tables whose rows can disappear: declared inputs with `deletes = true`, and the
    table of every job that recomputes its groups from one of them (an emptied group's
    row is deleted there too)."""
    deleting = {name for name, facts in sources.items() if facts.deletes}
    for name, spec in jobs.items():  # dependency order: a job after what it reads
        if spec.kind == "regroup" and deleting.intersection(spec.inputs):
            deleting.add(name)
    return frozenset(deleting)


def change_problems(
    jobs: Mapping[str, JobSpec], sources: Mapping[str, InputChanges]
) -> list[Problem]:
    """Deletes are honoured only where they can be seen (METHOD 9): through the change data
    capture of a table whose writer deletes, by a job that recomputes its groups. Any other
    job reading such a table is refused, with the reason."""
    deleting = deleting_tables(jobs, sources)
    problems = []
    for name, spec in jobs.items():
        decl = spec.declaration
        for table in (t for t in spec.inputs if t in deleting):
            if spec.kind != "regroup":
                how = "with a trailing window" if spec.kind == "window" else decl.merge
                problems.append(
                    Problem(
                        decl.file,
                        name,
                        f"reads {table}, whose rows can be deleted, but its merge ({how}) "
                        "cannot take a deleted row's contribution back: declare "
                        "recompute_touched_groups without a window",
                    )
                )
            facts = sources.get(table)
            if facts is None:
                continue  # a job's table: this project writes it with CDC on
            if facts.cdc is False:
                problems.append(
                    Problem(
                        decl.file,
                        name,
                        f"reads {table}, declared `deletes = true`, but the table has no "
                        "change data capture (hoodie.table.cdc.enabled is not true): a "
                        "deleted row could not be seen; its writer must turn CDC on",
                    )
                )
            if facts.arrival_column is not None:
                problems.append(
                    Problem(
                        decl.file,
                        name,
                        f"reads {table}, declared `deletes = true` with arrival_column "
                        f"{facts.arrival_column!r}: a deletion has no such value; declare no "
                        "arrival_column, so each commit's completion is its changes' arrival",
                    )
                )
    return problems


def input_changes(jobs: Mapping[str, JobSpec], lakehouse) -> dict[str, InputChanges]:
    """InputChanges of every table the jobs read and no job writes."""
    from freshness_pipeline.hudi.metadata import TableNotFound

    facts = {}
    for table in sorted({t for spec in jobs.values() for t in spec.inputs} - set(jobs)):
        declared = lakehouse.inputs.get(table)
        try:
            cdc: bool | None = lakehouse.metadata(table).cdc_enabled
        except TableNotFound:
            cdc = None
        facts[table] = InputChanges(
            deletes=bool(declared and declared.deletes),
            cdc=cdc,
            arrival_column=declared.arrival_column if declared and declared.external else None,
        )
    return facts
