"""`check` over declared jobs (execution/check.py), without Spark: the six market jobs pass, and
each kind of problem in a SELECT or its inputs is one line naming file, job and column."""

from __future__ import annotations

from pathlib import Path

from freshness_pipeline.catalog.jobs import JOBS, load_jobs
from freshness_pipeline.execution.check import (
    InputChanges,
    change_problems,
    check_jobs,
    deleting_tables,
)
from freshness_pipeline.execution.lineage import SOURCE_SCHEMAS

TRADES = {"symbol": "string", "price": "double", "size": "bigint", "event_ts": "timestamp"}
TRADES |= {"arrival_ts": "timestamp"}


def job(folder: Path, name: str, body: str, sql: str) -> None:
    (folder / f"{name}.sql").write_text(f"/* freshness\n{body}\n*/\n{sql}\n")


AGG = "inputs: [trades]\nkey: [second, symbol]\nevent_time: second\nmerge: partial_aggregates"
SELECT = (
    "SELECT symbol, CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP) AS second, {cols}, "
    "max(arrival_ts) AS arrival_ts FROM delta_trades "
    "GROUP BY symbol, CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP)"
)


def lines(folder: Path) -> list[str]:
    return [str(p) for p in check_jobs(load_jobs(folder), {"trades": TRADES})]


def test_the_market_jobs_pass():
    assert check_jobs(JOBS, SOURCE_SCHEMAS) == []


def test_a_column_the_sql_reads_that_its_input_lacks_is_named(tmp_path):
    job(
        tmp_path, "agg", AGG + "\ncolumns:\n  volume: sum", SELECT.format(cols="sum(qty) AS volume")
    )
    (line,) = lines(tmp_path)
    assert line.startswith("agg.sql: agg: column qty: read by the SQL but not a column"), line


def test_an_input_that_does_not_exist_is_named(tmp_path):
    body = AGG.replace("[trades]", "[quotes]") + "\ncolumns:\n  volume: sum"
    job(tmp_path, "agg", body, SELECT.format(cols="sum(size) AS volume"))
    assert lines(tmp_path) == ["agg.sql: agg: reads quotes: no such table and no job writes it"]


def test_aggregates_that_do_not_match_their_rule_are_refused(tmp_path):
    body = AGG + "\ncolumns:\n  volume: sum\n  hi: max\n  mean: {derived: 'volume / 2'}"
    cols = "avg(size) AS volume, min(price) AS hi, 1 AS mean, count(*) AS n"
    job(tmp_path, "agg", body, SELECT.format(cols=cols))
    found = lines(tmp_path)
    assert (
        "agg.sql: agg: column volume: computed with avg, which cannot merge from partial values"
        in found
    )
    assert "agg.sql: agg: column hi: declared `max` but the SELECT computes it with MIN" in found
    assert (
        "agg.sql: agg: column mean: declared `derived` but returned by the SELECT: one or the other"
        in found
    )
    assert "agg.sql: agg: column n: returned by the SELECT with no merge rule in `columns`" in found


def test_a_distinct_count_is_refused_and_a_missing_column_named(tmp_path):
    body = AGG + "\ncolumns:\n  symbols: count\n  volume: sum"
    job(tmp_path, "agg", body, SELECT.format(cols="count(DISTINCT symbol) AS symbols"))
    found = lines(tmp_path)
    assert any("column symbols: computed with a distinct count" in line for line in found), found
    assert (
        "agg.sql: agg: column volume: the SELECT does not return it (the merge needs it)" in found
    )


def test_a_downstream_job_is_checked_against_the_schema_upstream_writes(tmp_path):
    job(
        tmp_path,
        "agg",
        AGG + "\ncolumns:\n  volume: sum",
        SELECT.format(cols="sum(size) AS volume"),
    )
    view = "inputs: [agg]\nkey: [second, symbol]\nevent_time: second\nmerge: replace_by_key"
    job(tmp_path, "view", view, "SELECT symbol, second, notional, arrival_ts FROM delta_agg")
    (line,) = lines(tmp_path)
    assert line.startswith("view.sql: view: column notional: read by the SQL but not a column"), (
        line
    )


# Deletes (METHOD 9): honoured through CDC by jobs that recompute their groups, else refused.
ACCOUNTS = Path(__file__).resolve().parents[2] / "jobs_sql" / "accounts"


def change_lines(jobs, **facts) -> list[str]:
    sources = {
        "account_txns": InputChanges(
            **{"deletes": True, "cdc": True, "arrival_column": None} | facts
        )
    }
    return [str(p) for p in change_problems(jobs, sources)]


def test_deletes_through_cdc_pass_and_reach_the_view_over_the_view():
    jobs = load_jobs(ACCOUNTS)
    sources = {"account_txns": InputChanges(deletes=True, cdc=True, arrival_column=None)}
    assert change_problems(jobs, sources) == []
    # account_minute's table loses a row when an account-minute empties: region_minute follows
    assert deleting_tables(jobs, sources) == {"account_txns", "account_minute", "region_minute"}
    appended = {"account_txns": InputChanges(deletes=False, cdc=False, arrival_column="ts")}
    assert deleting_tables(jobs, appended) == set()
    assert change_problems(jobs, appended) == []


def test_deletes_the_input_cannot_show_are_refused():
    jobs = load_jobs(ACCOUNTS)
    (line,) = change_lines(jobs, cdc=False)
    assert line.startswith("account_minute.sql: account_minute: reads account_txns")
    assert "no change data capture (hoodie.table.cdc.enabled" in line
    (line,) = change_lines(jobs, arrival_column="ingested_at")
    assert "arrival_column 'ingested_at': a deletion has no such value" in line


def test_a_merge_that_cannot_take_a_row_back_is_refused(tmp_path):
    for sql in ACCOUNTS.glob("*.sql"):
        (tmp_path / sql.name).write_text(sql.read_text())
    totals = (
        "inputs: [account_txns]\nkey: [minute, account_id]\nevent_time: minute\n"
        "merge: partial_aggregates\ncolumns: {amount: sum}"
    )
    minute = "CAST(date_trunc('MINUTE', txn_ts) AS TIMESTAMP)"
    job(
        tmp_path,
        "account_total",
        totals,
        f"SELECT account_id, {minute} AS minute, sum(amount) AS amount, "
        f"max(arrival_ts) AS arrival_ts FROM delta_account_txns GROUP BY account_id, {minute}",
    )
    lines_ = change_lines(load_jobs(tmp_path))
    assert len(lines_) == 1, lines_
    assert lines_[0].startswith("account_total.sql: account_total: reads account_txns")
    assert (
        "its merge (partial_aggregates) cannot take a deleted row's contribution back" in lines_[0]
    )


TXNS = {
    "txn_id": "string",
    "account_id": "string",
    "amount": "double",
    "txn_datetime": "timestamp",
    "arrival_ts": "timestamp",
}
PER_DAY = "inputs: [txns]\nkey: [day, account_id]\nevent_time: day\nmerge: recompute_touched_groups"
PER_DAY_SQL = (
    "SELECT account_id, to_date(txn_datetime) AS day, sum(amount) AS amount, "
    "max(arrival_ts) AS arrival_ts FROM group_rows GROUP BY account_id, to_date(txn_datetime)"
)


def test_a_computed_group_column_without_groups_is_refused_naming_it(tmp_path):
    """A run finds the groups it touches from each input row: `day` is no column of txns,
    so every run would fail (UNRESOLVED_COLUMN day) unless `groups` says how it follows."""
    job(tmp_path, "per_day", PER_DAY, PER_DAY_SQL)
    (line,) = [str(p) for p in check_jobs(load_jobs(tmp_path), {"txns": TXNS})]
    assert line.startswith(
        "per_day.sql: per_day: column day: a key column that is not a column of txns"
    ), line
    assert "`groups`" in line
    job(tmp_path, "per_day", PER_DAY + '\ngroups: {day: "to_date(txn_datetime)"}', PER_DAY_SQL)
    assert check_jobs(load_jobs(tmp_path), {"txns": TXNS}) == []
    job(tmp_path, "per_day", PER_DAY + '\ngroups: {day: "to_date(txn_time)"}', PER_DAY_SQL)
    assert [str(p) for p in check_jobs(load_jobs(tmp_path), {"txns": TXNS})] == [
        "per_day.sql: per_day: column day: `groups` computes it from txn_time, not a column of txns"
    ]


def test_a_declared_arrival_column_the_input_lacks_is_refused(tmp_path):
    from freshness_pipeline.config.settings import load_settings
    from freshness_pipeline.execution.check import input_schemas

    job(tmp_path, "per_day", PER_DAY + '\ngroups: {day: "to_date(txn_datetime)"}', PER_DAY_SQL)
    inputs = tmp_path / "inputs.toml"
    inputs.write_text('[inputs.txns]\nuri = "/theirs/txns"\narrival_column = "ingested_at"\n')
    settings = load_settings(
        {
            "FRESHNESS_JOBS": str(tmp_path),
            "FRESHNESS_INPUTS": str(inputs),
            "FRESHNESS_LAKEHOUSE": str(tmp_path / "tables"),
        }
    )
    columns = {k: v for k, v in TXNS.items() if k != "arrival_ts"}  # their table's own
    _, problems = input_schemas(settings.jobs, settings.lakehouse, lambda _t: dict(columns))
    assert problems == [
        "per_day.sql: per_day: reads txns: its declared arrival_column 'ingested_at' "
        "(FRESHNESS_INPUTS) is not a column of the table at /theirs/txns (it has account_id, "
        "amount, txn_datetime, txn_id)"
    ]
    columns["ingested_at"] = "timestamp"
    _, problems = input_schemas(settings.jobs, settings.lakehouse, lambda _t: dict(columns))
    assert problems == []
