"""A job declared as data (METHOD 9): the YAML block at the top of its SQL file.

    /* freshness
    inputs: [trade_raw]
    key: [second, symbol]
    event_time: second
    partition: {column: event_hour, from: "date_format(second, 'yyyyMMddHH')"}
    layouts:
      published: {partition: {column: symbol_prefix, from: "substr(symbol, 1, 1)"}}
    merge: partial_aggregates
    columns:
      high: max
      open: {first_by: open_at}
    */
    SELECT ...  -- the partial: the run's new rows, over the views delta_<input>

The file name is the output table. The merge of a run's rows into the stored ones is
generated from `merge` and the per-kind fields (execution/merge_sql.py), never written per job:

- `partial_aggregates`: each non-key column of the SELECT has a rule in `columns`: `sum` or
  `count` (add), `min`, `max`, `first_by: <col>` / `last_by: <col>` (the value at the
  smallest / largest order column, itself declared `min` / `max`), `sum_at_max: <col>` /
  `sum_at_min: <col>` (a size summed over the rows at the extreme of a price, itself
  declared `max` / `min`), or `derived: <SQL over the merged columns>`.
- `per_side_replace`: a join of inputs; `sides` names, per side, the flag column saying the
  side is present in a row, its arrival column and its columns; a stored row keeps the
  sides this run did not change. `columns` may add `derived` columns.
- `recompute_touched_groups`: the groups (the key) this run's input touches are recomputed
  from their current rows (the view `group_rows`); with `window` (seconds, the group's own
  arrival column and the window's columns as SQL over `g`, the row, and `w`, the rows of
  its trailing window), every row whose window holds a touched group is recomputed too.
- `replace_by_key`: the newest version of each key wins.

This module only reads and checks the declaration's own shape; whether the columns exist in
the inputs and the SQL is checked where the schemas are known (the `check` command).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import yaml

MergeKind = Literal[
    "partial_aggregates", "per_side_replace", "recompute_touched_groups", "replace_by_key"
]
MERGE_KINDS: tuple[MergeKind, ...] = (
    "partial_aggregates",
    "per_side_replace",
    "recompute_touched_groups",
    "replace_by_key",
)
# Rules whose partial values combine exactly with the stored ones, for any split of the input.
PLAIN_RULES = ("sum", "count", "min", "max")
ORDERED_RULES = {"first_by": "min", "last_by": "max", "sum_at_max": "max", "sum_at_min": "min"}
# Aggregates that cannot merge from partial values, named so the refusal says why.
UNMERGEABLE = {
    "avg": "an average: declare its sum and count and a derived column",
    "mean": "an average: declare its sum and count and a derived column",
    "median": "a median cannot be merged from partial medians",
    "percentile": "a percentile cannot be merged from partial percentiles",
    "count_distinct": "a distinct count cannot be merged from partial counts",
    "stddev": "a deviation: declare sums of x and x*x and a count, and derive it",
}
ARRIVAL_COLUMN = "arrival_ts"  # every job's output carries its rows' arrival
_HEADER = re.compile(r"\A\s*/\*\s*freshness\s*\n(?P<body>.*?)\*/", re.DOTALL)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FIELDS = {
    "description",
    "group",
    "inputs",
    "dimensions",
    "key",
    "event_time",
    "partition",
    "index",
    "buckets",
    "layouts",
    "merge",
    "columns",
    "sides",
    "window",
    "groups",
}


class DeclarationError(ValueError):
    """One or more problems in a declaration, one line each."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class Problem:
    """One thing wrong, said as the `check` command prints it."""

    file: str
    job: str
    message: str
    column: str | None = None

    def __str__(self) -> str:
        where = f"{self.file}: {self.job}"
        if self.column:
            where += f": column {self.column}"
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class Partition:
    column: str  # the stored partition column
    expr: str  # how it follows from the row (SQL over the output's columns)


IndexKind = Literal["simple", "bloom", "bucket"]
INDEX_KINDS: tuple[IndexKind, ...] = ("simple", "bloom", "bucket")


@dataclass(frozen=True)
class Layout:
    """How a job's table is laid out: what Hudi cannot change in place."""

    partition: Partition | None = None
    # How a run finds the stored file of each of its keys: a join with the key columns of
    # the touched partitions' files (simple: Hudi's default on Spark), their footers'
    # bloom filters, or a hash of the key into `buckets` file groups per partition
    # (bucket: no lookup at all).
    index: IndexKind = "simple"
    buckets: int = 1


@dataclass(frozen=True)
class ColumnRule:
    column: str
    rule: str  # one of PLAIN_RULES, ORDERED_RULES or "derived"
    arg: str | None = None  # the order column, or the derived column's SQL


@dataclass(frozen=True)
class Side:
    name: str
    present: str  # the partial's boolean column: this side is in the row
    arrival: str  # the side's own arrival column
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Window:
    seconds: int
    group_arrival: str  # the recomputed group's own arrival column
    columns: tuple[tuple[str, str], ...]  # (name, SQL over g and the window rows w)


@dataclass(frozen=True)
class JobDeclaration:
    name: str
    file: str
    sql: str  # the partial SELECT, the declaration block taken off
    inputs: tuple[str, ...]
    key: tuple[str, ...]
    event_time: str
    merge: MergeKind
    description: str = ""
    group: str = "jobs"
    dimensions: tuple[str, ...] = ()
    partition: Partition | None = None
    index: IndexKind = "simple"
    buckets: int = 1
    # other layouts of the same table, by name (FRESHNESS_LAYOUT picks one; with_layout)
    layouts: tuple[tuple[str, Layout], ...] = ()
    columns: tuple[ColumnRule, ...] = ()
    sides: tuple[Side, ...] = ()
    window: Window | None = None
    # recompute_touched_groups: how each key column follows from an input row (SQL over
    # the input's columns), where it is not an input column itself.
    groups: tuple[tuple[str, str], ...] = ()
    path: str = ""  # the file, where it was read from one

    @property
    def group_columns(self) -> tuple[str, ...]:
        """The key without its event-time column: what a group is, in time."""
        return tuple(k for k in self.key if k != self.event_time)

    def rule(self, column: str) -> ColumnRule | None:
        return next((r for r in self.columns if r.column == column), None)


def split_header(text: str) -> tuple[str | None, str]:
    """(the declaration block's YAML, the SQL after it); (None, text) without a block."""
    match = _HEADER.match(text)
    if match is None:
        return None, text
    return match.group("body"), text[match.end() :].strip()


def parse(text: str, name: str, file: str) -> JobDeclaration:
    """The declaration of job `name` from its SQL file's text; DeclarationError lists every
    problem found in its shape."""
    problems: list[Problem] = []
    say = _Reporter(file, name, problems)
    body, sql = split_header(text)
    if body is None:
        say("no declaration: the file must start with a /* freshness ... */ block")
        raise DeclarationError(problems)
    try:
        raw = yaml.safe_load(body) or {}
    except yaml.YAMLError as exc:
        say(f"the declaration is not valid YAML: {_one_line(exc)}")
        raise DeclarationError(problems) from exc
    if not isinstance(raw, dict):
        say("the declaration must be a mapping of fields")
        raise DeclarationError(problems)
    declaration = _build(raw, name, file, sql, say)
    if problems:
        raise DeclarationError(problems)
    return declaration


def load(path: Path) -> JobDeclaration:
    declaration = parse(path.read_text(encoding="utf-8"), path.stem, path.name)
    return replace(declaration, path=str(path))


def load_folder(*folders: Path) -> dict[str, JobDeclaration]:
    """Every `*.sql` declaration of one or more folders (one pipeline beside another), by
    job name; DeclarationError lists every problem of every file (and of the graph they
    make) at once."""
    problems: list[Problem] = []
    jobs: dict[str, JobDeclaration] = {}
    for folder in folders:
        if not folder.is_dir():
            problems.append(Problem(str(folder), "-", "not a folder of job declarations"))
            continue
        paths = sorted(folder.glob("*.sql"))
        if not paths:
            problems.append(Problem(str(folder), "-", "no job declared (no *.sql file)"))
        for path in paths:
            if path.stem in jobs:
                first = jobs[path.stem].path
                problems.append(Problem(str(path), path.stem, f"declared twice (also {first})"))
                continue
            try:
                jobs[path.stem] = load(path)
            except DeclarationError as exc:
                problems += exc.problems
    problems += graph_problems(jobs)
    if problems:
        raise DeclarationError(problems)
    return {name: jobs[name] for name in dependency_order(jobs)}


def dependency_order(jobs: Mapping[str, JobDeclaration]) -> list[str]:
    """Every job after the jobs it reads; ties in name order. Assumes no cycle."""
    done: list[str] = []
    left = dict(sorted(jobs.items()))
    while left:
        ready = [n for n, j in left.items() if not any(i in left for i in j.inputs if i != n)]
        if not ready:
            break  # a cycle: graph_problems names it
        for name in ready:
            done.append(name)
            del left[name]
    return done + list(left)


def graph_problems(jobs: Mapping[str, JobDeclaration]) -> list[Problem]:
    """A job reading itself, or jobs reading each other in a cycle."""
    problems = [
        Problem(j.file, n, "reads its own output") for n, j in jobs.items() if n in j.inputs
    ]
    order = dependency_order(jobs)
    placed: set[str] = set()
    for name in order:
        if any(i in jobs and i != name and i not in placed for i in jobs[name].inputs):
            cycle = sorted(i for i in jobs[name].inputs if i in jobs and i not in placed)
            problems.append(
                Problem(jobs[name].file, name, f"is in a cycle of jobs: reads {', '.join(cycle)}")
            )
        placed.add(name)
    return problems


class _Reporter:
    def __init__(self, file: str, job: str, problems: list[Problem]) -> None:
        self.file, self.job, self.problems = file, job, problems

    def __call__(self, message: str, column: str | None = None) -> None:
        self.problems.append(Problem(self.file, self.job, message, column))


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _names(raw: Any, what: str, say: _Reporter, required: bool = True) -> tuple[str, ...]:
    if raw is None:
        if required:
            say(f"`{what}` is missing")
        return ()
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        say(f"`{what}` must be a name or a list of names")
        return ()
    bad = [i for i in items if not _NAME.match(i)]
    if bad:
        say(f"`{what}` holds names that are not SQL identifiers: {', '.join(bad)}")
    if required and not items:
        say(f"`{what}` is empty")
    return tuple(items)


def _build(raw: dict, name: str, file: str, sql: str, say: _Reporter) -> JobDeclaration:
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        say(f"unknown fields {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})")
    inputs = _names(raw.get("inputs"), "inputs", say)
    key = _names(raw.get("key"), "key", say)
    event_time = raw.get("event_time")
    if not isinstance(event_time, str):
        say("`event_time` must name the key's event-time column")
        event_time = ""
    elif key and event_time not in key:
        say(f"`event_time` {event_time} is not a column of the key ({', '.join(key)})")
    merge: MergeKind = "replace_by_key"  # stands in for a wrong one: the problem is said
    if raw.get("merge") in MERGE_KINDS:
        merge = raw["merge"]
    else:
        say(f"`merge` must be one of {', '.join(MERGE_KINDS)}, not {raw.get('merge')!r}")
    if not sql.strip():
        say("no SQL after the declaration block")
    declaration = JobDeclaration(
        name=name,
        file=file,
        sql=sql,
        inputs=inputs,
        key=key,
        event_time=event_time,
        merge=merge,
        description=str(raw.get("description", "")).strip(),
        group=str(raw.get("group", "jobs")),
        dimensions=_names(raw.get("dimensions"), "dimensions", say, required=False),
        **_layout_fields(raw, say),
        layouts=_layouts(raw.get("layouts"), say),
        columns=_columns(raw.get("columns"), say),
        sides=_sides(raw.get("sides"), say),
        window=_window(raw.get("window"), say),
        groups=_groups(raw.get("groups"), say),
    )
    _check_kind(declaration, say)
    return declaration


def _layout_fields(raw: dict, say: _Reporter, where: str = "") -> dict[str, Any]:
    """`partition`, `index` and `buckets` of a declaration or of one of its `layouts`."""
    index = raw.get("index", "simple")
    if index not in INDEX_KINDS:
        say(f"`{where}index` must be one of {', '.join(INDEX_KINDS)}, not {index!r}")
        index = "simple"
    buckets = raw.get("buckets", 1)
    if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 1:
        say(f"`{where}buckets` must be a whole number of file groups, at least 1")
        buckets = 1
    elif "buckets" in raw and index != "bucket":
        say(f"`{where}buckets` is for `index: bucket`, not {index}")
    return {"partition": _partition(raw.get("partition"), say), "index": index, "buckets": buckets}


def _layouts(raw: Any, say: _Reporter) -> tuple[tuple[str, Layout], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        say("`layouts` must map a layout's name to its {partition, index, buckets}")
        return ()
    out = []
    for name, value in raw.items():
        known = {"partition", "index", "buckets"}
        if not isinstance(value, dict) or set(value) - known:
            say(f"`layouts.{name}` may set only {', '.join(sorted(known))}")
            continue
        out.append((str(name), Layout(**_layout_fields(value, say, f"layouts.{name}."))))
    return tuple(out)


def with_layout(job: JobDeclaration, name: str | None) -> JobDeclaration:
    """`job` laid out as its layout `name` says; unchanged when it declares no such
    layout (or `name` is empty: the declaration's own)."""
    chosen = dict(job.layouts).get(name or "")
    if chosen is None:
        return job
    return replace(job, partition=chosen.partition, index=chosen.index, buckets=chosen.buckets)


def _partition(raw: Any, say: _Reporter) -> Partition | None:
    if raw is None:
        return None
    if (
        not isinstance(raw, dict)
        or not isinstance(raw.get("column"), str)
        or not isinstance(raw.get("from"), str)
    ):
        say("`partition` must be {column: <name>, from: <SQL over the row>}")
        return None
    return Partition(raw["column"], raw["from"])


def _columns(raw: Any, say: _Reporter) -> tuple[ColumnRule, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        say("`columns` must map each column to its merge rule")
        return ()
    rules = []
    for column, value in raw.items():
        rule = _column_rule(str(column), value, say)
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _column_rule(column: str, value: Any, say: _Reporter) -> ColumnRule | None:
    if isinstance(value, str):
        if value in PLAIN_RULES:
            return ColumnRule(column, value)
        reason = UNMERGEABLE.get(value)
        if reason:
            say(f"`{value}` cannot merge incrementally ({reason})", column)
        else:
            say(f"unknown rule {value!r} (known: {', '.join(_rule_names())})", column)
        return None
    if isinstance(value, dict) and len(value) == 1:
        ((rule, arg),) = value.items()
        if (rule in ORDERED_RULES or rule == "derived") and isinstance(arg, str):
            return ColumnRule(column, rule, arg)
    say(f"a rule is a name or {{<rule>: <column or SQL>}}, not {value!r}", column)
    return None


def _rule_names() -> list[str]:
    return [*PLAIN_RULES, *ORDERED_RULES, "derived"]


def _sides(raw: Any, say: _Reporter) -> tuple[Side, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        say("`sides` must map each side's name to {present, arrival, columns}")
        return ()
    sides = []
    for name, value in raw.items():
        if (
            not isinstance(value, dict)
            or not isinstance(value.get("present"), str)
            or not isinstance(value.get("arrival"), str)
        ):
            say(f"side {name} needs `present` (a flag column) and `arrival` (its arrival column)")
            continue
        columns = _names(value.get("columns"), f"sides.{name}.columns", say)
        sides.append(Side(str(name), value["present"], value["arrival"], columns))
    return tuple(sides)


def _window(raw: Any, say: _Reporter) -> Window | None:
    if raw is None:
        return None
    seconds = raw.get("seconds") if isinstance(raw, dict) else None
    group_arrival = raw.get("group_arrival") if isinstance(raw, dict) else None
    columns = raw.get("columns") if isinstance(raw, dict) else None
    if (
        not isinstance(seconds, int)
        or seconds <= 0
        or not isinstance(group_arrival, str)
        or not isinstance(columns, dict)
        or not all(isinstance(v, str) for v in columns.values())
    ):
        say(
            "`window` must be {seconds: <whole seconds>, group_arrival: <column>, "
            "columns: {<name>: <SQL over g and w>}}"
        )
        return None
    return Window(seconds, group_arrival, tuple((str(k), v) for k, v in columns.items()))


def _groups(raw: Any, say: _Reporter) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        say("`groups` must map key columns to SQL over the input's columns")
        return ()
    return tuple((str(k), v) for k, v in raw.items())


def _check_kind(job: JobDeclaration, say: _Reporter) -> None:
    """The fields each merge kind needs, and none it would ignore."""
    needs_columns = job.merge == "partial_aggregates"
    if needs_columns and not job.columns:
        say("`partial_aggregates` needs `columns`: a merge rule per aggregate")
    if job.merge == "per_side_replace" and len(job.sides) < 2:
        say("`per_side_replace` needs `sides`: at least two")
    if job.sides and job.merge != "per_side_replace":
        say(f"`sides` is for per_side_replace, not {job.merge}")
    if job.window is not None and job.merge != "recompute_touched_groups":
        say(f"`window` is for recompute_touched_groups, not {job.merge}")
    if job.merge in ("per_side_replace", "recompute_touched_groups", "replace_by_key"):
        plain = [r.column for r in job.columns if r.rule != "derived"]
        if plain:
            say(f"{job.merge} takes only `derived` columns; aggregate rules: {', '.join(plain)}")
    if job.merge == "recompute_touched_groups":
        if job.key and not job.group_columns:
            say("recompute_touched_groups needs a key beyond its event-time column (the group)")
        if len(job.inputs) != 1:
            say("recompute_touched_groups reads its groups' rows from exactly one input")
    if job.groups and job.merge != "recompute_touched_groups":
        say(f"`groups` is for recompute_touched_groups, not {job.merge}")
    outside = [k for k, _ in job.groups if k not in job.key]
    if outside:
        say(f"`groups` names columns outside the key: {', '.join(outside)}")
    _check_orders(job, say)


def _check_orders(job: JobDeclaration, say: _Reporter) -> None:
    """An ordered rule's order column is itself merged the way the rule reads it."""
    for rule in job.columns:
        if rule.rule not in ORDERED_RULES:
            continue
        needed = ORDERED_RULES[rule.rule]
        order = job.rule(rule.arg or "")
        if order is None or order.rule != needed:
            say(
                f"`{rule.rule}: {rule.arg}` needs {rule.arg} declared `{needed}` "
                "(the order it reads must merge the same way)",
                rule.column,
            )
