"""The merges generated from the declarations (jobs/merge_sql.py): valid Spark SQL, and for
each bundled job the same columns, in the same order, as the merge written by hand in its
SQL file (so a table written by either has one schema). Their results are compared on
real Hudi tables by the oracle tests once the runner runs the generated merges."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from freshness_pipeline.catalog.declaration import load, parse
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.jobs.merge_sql import merge_sql, output_columns, touched_sql
from freshness_pipeline.jobs.sql import sql_sections

JOBS_SQL = Path(__file__).resolve().parents[2] / "jobs_sql"


def selects(sql: str) -> list[str]:
    return sqlglot.parse_one(sql, read="spark").named_selects


@pytest.mark.parametrize("job", list(JOBS))
def test_the_generated_merge_writes_the_hand_written_columns(job):
    declaration = load(JOBS_SQL / f"{job}.sql")
    sections = sql_sections(job)
    partial = selects(sections["partial"])
    by_hand = selects(sections["merge"])
    if by_hand == ["*"]:
        by_hand = partial
    generated = merge_sql(declaration, partial, {"notional": "DECIMAL(38,2)"})
    assert selects(generated) == by_hand, generated
    assert output_columns(declaration, partial) == by_hand


@pytest.mark.parametrize("job", ["sector_vwap", "industry_spike"])
def test_the_touched_groups_are_the_keys_of_the_runs_input(job):
    declaration = load(JOBS_SQL / f"{job}.sql")
    assert sorted(selects(touched_sql(declaration))) == sorted(
        selects(sql_sections(job)["touched"])
    )


def test_a_sum_keeps_its_type_and_a_missing_side_keeps_the_other():
    declaration = parse(
        "/* freshness\ninputs: [t]\nkey: [second, k]\nevent_time: second\n"
        "merge: partial_aggregates\ncolumns:\n  n: sum\n  hi: max\n*/\nSELECT 1",
        "j",
        "j.sql",
    )
    sql = merge_sql(declaration, ["k", "second", "n", "hi", "arrival_ts"], {"n": "DECIMAL(38,2)"})
    assert (
        "CAST(CASE WHEN e.n IS NULL THEN p.n WHEN p.n IS NULL THEN e.n ELSE p.n + e.n END "
        "AS DECIMAL(38,2)) AS n"
    ) in sql
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
