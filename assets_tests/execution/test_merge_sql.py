"""The merges generated from the declarations (execution/merge_sql.py): valid Spark SQL writing,
for each bundled job, the columns of its table in their order (as labelled by hand in
lineage_expected.py, from before the merges were generated), so a table written by earlier
code and one written now share a schema. Their rows are compared with both oracles on real
Hudi tables by execution/test_oracle.py."""

from __future__ import annotations

import pytest
import sqlglot

from assets_tests.execution.lineage_expected import EXPECTED
from freshness_pipeline.catalog.declaration import parse
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.execution.change_read import before_images_sql
from freshness_pipeline.execution.merge_sql import (
    gone_sql,
    group_rows_sql,
    merge_sql,
    output_columns,
    touched_sql,
)
from freshness_pipeline.execution.sql import partial_sql


def selects(sql: str) -> list[str]:
    return sqlglot.parse_one(sql, read="spark").named_selects


@pytest.mark.parametrize("job", list(JOBS))
def test_the_generated_merge_writes_the_tables_columns_in_order(job):
    spec = JOBS[job]
    partial = selects(partial_sql(spec))
    table = [name for name, _, _ in EXPECTED[job]["columns"]]
    generated = merge_sql(spec.declaration, partial, {"notional": "decimal(38,2)"})
    assert selects(generated) == table, generated
    assert output_columns(spec.declaration, partial) == table


@pytest.mark.parametrize(
    ("job", "groups"), [("sector_vwap", "sector"), ("industry_spike", "industry")]
)
def test_the_touched_groups_are_the_keys_of_the_runs_input(job, groups):
    sql = touched_sql(JOBS[job].declaration)
    assert sorted(selects(sql)) == sorted(["second", groups])
    assert sql.endswith("FROM delta_enriched_features")


def test_a_sum_keeps_its_type_and_a_missing_side_keeps_the_other():
    declaration = parse(
        "/* freshness\ninputs: [t]\nkey: [second, k]\nevent_time: second\n"
        "merge: partial_aggregates\ncolumns:\n  n: sum\n  hi: max\n*/\nSELECT 1",
        "j",
        "j.sql",
    )
    sql = merge_sql(declaration, ["k", "second", "n", "hi", "arrival_ts"], {"n": "DECIMAL(38,2)"})
    assert "CAST(coalesce(p.n + e.n, p.n, e.n) AS DECIMAL(38,2)) AS n" in sql
    assert "greatest(p.hi, e.hi) AS hi" in sql
    assert "LEFT JOIN existing e ON e.second = p.second AND e.k = p.k" in sql


def test_replace_by_key_keeps_the_newest_row_of_each_key():
    declaration = parse(
        "/* freshness\ninputs: [t]\nkey: [second, k]\nevent_time: second\n"
        'partition: {column: part, from: "substr(k, 1, 1)"}\nmerge: replace_by_key\n*/\nSELECT 1',
        "j",
        "j.sql",
    )
    sql = merge_sql(declaration, ["k", "second", "v", "arrival_ts"])
    assert selects(sql) == ["k", "second", "v", "arrival_ts", "part"]
    assert "PARTITION BY second, k ORDER BY arrival_ts DESC" in sql


def test_a_group_computed_from_the_input_row_is_touched_and_read_by_its_expression():
    declaration = parse(
        "/* freshness\ninputs: [txns]\nkey: [minute, account]\nevent_time: minute\n"
        "merge: recompute_touched_groups\ngroups: {minute: \"date_trunc('MINUTE', ts)\"}\n*/\n"
        "SELECT 1",
        "j",
        "j.sql",
    )
    assert touched_sql(declaration) == (
        "SELECT DISTINCT date_trunc('MINUTE', ts) AS minute, account FROM delta_txns"
    )
    assert group_rows_sql(declaration) == (
        "SELECT * FROM group_source WHERE (date_trunc('MINUTE', ts), account) IN "
        "(SELECT minute, account FROM run_touched)"
    )
    assert selects(group_rows_sql(declaration)) == ["*"]  # valid Spark SQL


def test_groups_outside_the_key_or_on_another_kind_are_refused():
    from freshness_pipeline.catalog.declaration import DeclarationError

    with pytest.raises(DeclarationError) as raised:
        parse(
            "/* freshness\ninputs: [t]\nkey: [second, k]\nevent_time: second\n"
            'merge: replace_by_key\ngroups: {region: "upper(r)"}\n*/\nSELECT 1',
            "j",
            "j.sql",
        )
    lines = str(raised.value).splitlines()
    assert "j.sql: j: `groups` is for recompute_touched_groups, not replace_by_key" in lines
    assert "j.sql: j: `groups` names columns outside the key: region" in lines


def test_following_changes_touches_the_old_versions_groups_and_finds_emptied_ones():
    decl = JOBS["sector_vwap"].declaration
    new, old = touched_sql(decl, changed=True).split("\nUNION\n")
    assert new == touched_sql(decl)
    assert old.endswith("FROM changed_enriched_features") and selects(old) == selects(new)
    gone = sqlglot.parse_one(gone_sql(decl), read="spark")
    joins = [(j.args.get("side"), j.args.get("kind"), j.this.name) for j in gone.args["joins"]]
    assert joins == [("LEFT", "SEMI", "run_touched"), ("LEFT", "ANTI", "run_result")]
    assert gone.find(sqlglot.exp.From).this.name == "stored"


def test_before_images_are_cast_from_their_text_by_type():
    sql = before_images_sql({"account_id": "string", "txn_ts": "timestamp", "n": "bigint"})
    assert selects(sql) == ["account_id", "txn_ts", "n"]
    # Spark's internal value (microseconds) or a timestamp's text both read back
    assert "timestamp_micros(CAST(image['txn_ts'] AS BIGINT))" in sql
    assert "CAST(image['n'] AS bigint)" in sql
    assert "WHERE op IN ('u', 'd')" in sql
