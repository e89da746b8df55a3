"""Job declarations (catalog/declaration.py): the six bundled jobs read from their SQL
files agree with the catalog, and every kind of malformed declaration is refused with one
line naming the file, the job and, where there is one, the column."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshness_pipeline.catalog.declaration import (
    DeclarationError,
    Partition,
    load,
    load_folder,
    parse,
    with_layout,
)
from freshness_pipeline.catalog.jobs import JOBS

JOBS_SQL = Path(__file__).resolve().parents[2] / "jobs_sql"
# The six market jobs as declared: (inputs, dimensions, key, partition column, merge kind,
# window seconds, group).
BUNDLED = {
    "trade_aggr": (("trade_raw",), (), "symbol_prefix", "partial_aggregates", None, "aggregates"),
    "price_aggr": (("price_raw",), (), "symbol_prefix", "partial_aggregates", None, "aggregates"),
    "market_features": (
        ("price_aggr", "trade_aggr"),
        (),
        "symbol_prefix",
        "per_side_replace",
        None,
        "features",
    ),
    "enriched_features": (
        ("market_features",),
        ("company_master",),
        "symbol_prefix",
        "replace_by_key",
        None,
        "features",
    ),
    "sector_vwap": (("enriched_features",), (), None, "recompute_touched_groups", None, "views"),
    "industry_spike": (("enriched_features",), (), None, "recompute_touched_groups", 60, "views"),
}
GROUPS = {"sector_vwap": "sector", "industry_spike": "industry"}


def declared(body: str, sql: str = "SELECT 1") -> str:
    return f"/* freshness\n{body}\n*/\n{sql}\n"


MINIMAL = "inputs: [a]\nkey: [second, k]\nevent_time: second\nmerge: replace_by_key"


def problems_of(text: str, name: str = "job") -> list[str]:
    with pytest.raises(DeclarationError) as raised:
        parse(text, name, f"{name}.sql")
    return [str(p) for p in raised.value.problems]


@pytest.mark.parametrize("job", list(BUNDLED))
def test_the_bundled_declarations_say_what_each_market_job_is(job):
    inputs, dimensions, partition, merge, window, group = BUNDLED[job]
    decl = load(JOBS_SQL / f"{job}.sql")
    assert decl.name == job and decl.file == f"{job}.sql"
    assert (decl.inputs, decl.dimensions, decl.merge, decl.group) == (
        inputs,
        dimensions,
        merge,
        group,
    )
    assert decl.key == ("second", GROUPS.get(job, "symbol")) and decl.event_time == "second"
    # Declared by event hour (a run's few new seconds touch one partition); the thesis's
    # layout, by the symbol's first letter or none, is the `published` one.
    assert decl.partition == Partition("event_hour", "date_format(second, 'yyyyMMddHH')")
    published = with_layout(decl, "published")
    assert published.partition == (
        Partition("symbol_prefix", "substr(symbol, 1, 1)") if partition else None
    )
    assert decl.index == published.index == "simple"
    assert with_layout(decl, "") == with_layout(decl, "no-such-layout") == decl
    assert (decl.window.seconds if decl.window else None) == window
    assert decl.description and decl.sql.lstrip().startswith("--")
    assert JOBS[job].declaration == decl  # the catalog runs these


def test_the_bundled_folder_loads_in_dependency_order():
    jobs = list(load_folder(JOBS_SQL))
    # ties (no path between them) in name order
    assert jobs == [
        "price_aggr",
        "trade_aggr",
        "market_features",
        "enriched_features",
        "industry_spike",
        "sector_vwap",
    ]


def test_a_file_without_a_declaration_block_says_so():
    assert problems_of("SELECT 1", "x") == [
        "x.sql: x: no declaration: the file must start with a /* freshness ... */ block"
    ]


def test_malformed_yaml_is_one_line():
    (line,) = problems_of(declared("inputs: [a\nkey: b"))
    assert line.startswith("job.sql: job: the declaration is not valid YAML: ") and "\n" not in line


def test_every_shape_problem_is_reported_at_once():
    text = declared("inputs: a b\nkey: [k]\nevent_time: second\nmerge: upsert\ncolour: red")
    lines = problems_of(text)
    assert any("unknown fields colour" in line for line in lines), lines
    assert any("not SQL identifiers: a b" in line for line in lines), lines
    assert any("`event_time` second is not a column of the key (k)" in line for line in lines)
    assert any("`merge` must be one of partial_aggregates" in line for line in lines), lines


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ("median", "`median` cannot merge incrementally (a median cannot be merged"),
        ("avg", "`avg` cannot merge incrementally (an average: declare its sum and count"),
        ("count_distinct", "a distinct count cannot be merged from partial counts"),
        ("product", "unknown rule 'product' (known: sum, count, min, max, first_by"),
    ],
)
def test_an_aggregate_that_cannot_merge_is_refused_naming_its_column(rule, says):
    body = MINIMAL.replace("replace_by_key", "partial_aggregates")
    lines = problems_of(declared(body + f"\ncolumns:\n  x: {rule}\n  y: sum"))
    assert lines == [f"job.sql: job: column x: {lines[0].split('column x: ')[1]}"], lines
    assert says in lines[0], lines


def test_an_ordered_rule_needs_its_order_column_merged_the_same_way():
    body = MINIMAL.replace("replace_by_key", "partial_aggregates")
    body += "\ncolumns:\n  open: {first_by: open_at}\n  open_at: max\n  size: {sum_at_max: px}"
    lines = problems_of(declared(body))
    assert "job.sql: job: column open: `first_by: open_at` needs open_at declared `min`" in lines[0]
    assert "column size: `sum_at_max: px` needs px declared `max`" in lines[1]
    assert len(lines) == 2


def test_fields_of_another_merge_kind_are_refused():
    body = (
        MINIMAL + "\nsides:\n  a: {present: has_a, arrival: a_ts, columns: [x]}\ncolumns:\n  x: sum"
    )
    lines = problems_of(declared(body))
    assert any("`sides` is for per_side_replace, not replace_by_key" in line for line in lines)
    assert any("takes only `derived` columns; aggregate rules: x" in line for line in lines)


def test_recomputed_groups_need_a_group_and_one_input():
    body = "inputs: [a, b]\nkey: [second]\nevent_time: second\nmerge: recompute_touched_groups"
    lines = problems_of(declared(body))
    assert any("needs a key beyond its event-time column" in line for line in lines), lines
    assert any("from exactly one input" in line for line in lines), lines


def test_a_window_is_checked_for_its_shape():
    body = MINIMAL.replace("replace_by_key", "recompute_touched_groups")
    (line,) = problems_of(declared(body + "\nwindow: {seconds: -5, columns: {}}"))
    assert "`window` must be {seconds: <whole seconds>, group_arrival: <column>" in line


def test_a_declaration_needs_its_sql():
    (line,) = problems_of(declared(MINIMAL, sql=""))
    assert line == "job.sql: job: no SQL after the declaration block"


def test_a_folder_names_every_broken_file_and_a_cycle(tmp_path):
    (tmp_path / "a.sql").write_text(declared(MINIMAL.replace("[a]", "[b]")))
    (tmp_path / "b.sql").write_text(declared(MINIMAL.replace("[a]", "[a]")))
    (tmp_path / "c.sql").write_text("SELECT 1")
    (tmp_path / "d.sql").write_text(declared(MINIMAL.replace("[a]", "[d]")))
    with pytest.raises(DeclarationError) as raised:
        load_folder(tmp_path)
    lines = str(raised.value).splitlines()
    assert "c.sql: c: no declaration" in lines[0]
    assert "d.sql: d: reads its own output" in lines
    assert any(line.startswith("a.sql: a: is in a cycle of jobs: reads b") for line in lines)


def test_a_missing_folder_is_named(tmp_path):
    with pytest.raises(DeclarationError, match="not a folder of job declarations"):
        load_folder(tmp_path / "nope")


def test_two_folders_make_one_pipeline_and_a_name_declared_twice_is_refused(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "per_trade.sql").write_text(declared(MINIMAL.replace("[a]", "[trade_aggr]")))
    jobs = load_folder(JOBS_SQL, mine)
    order = list(jobs)
    assert len(order) == 7 and order.index("per_trade") > order.index("trade_aggr")
    (mine / "trade_aggr.sql").write_text(declared(MINIMAL))
    with pytest.raises(DeclarationError, match=r"trade_aggr: declared twice \(also "):
        load_folder(JOBS_SQL, mine)


def test_a_layout_declares_partition_index_and_buckets_and_names_alternatives():
    decl = parse(
        declared(
            MINIMAL + '\npartition: {column: h, from: "hour(second)"}\nindex: bucket\n'
            "buckets: 4\nlayouts:\n  flat: {index: bloom}\n  wide: {buckets: 2, index: bucket}"
        ),
        "job",
        "job.sql",
    )
    assert (decl.partition, decl.index, decl.buckets) == (
        Partition("h", "hour(second)"),
        "bucket",
        4,
    )
    flat = with_layout(decl, "flat")
    assert (flat.partition, flat.index, flat.buckets) == (None, "bloom", 1)
    assert with_layout(decl, "wide").buckets == 2


def test_a_wrong_layout_is_refused_with_each_reason():
    found = problems_of(
        declared(
            MINIMAL + "\nindex: hash\nbuckets: 0\nlayouts:\n  a: {partition: x}\n"
            "  b: {sort: second}\n  c: {buckets: 3}"
        )
    )
    assert found == [
        "job.sql: job: `index` must be one of simple, bloom, bucket, not 'hash'",
        "job.sql: job: `buckets` must be a whole number of file groups, at least 1",
        "job.sql: job: `partition` must be {column: <name>, from: <SQL over the row>}",
        "job.sql: job: `layouts.b` may set only buckets, index, partition",
        "job.sql: job: `layouts.c.buckets` is for `index: bucket`, not simple",
    ]
