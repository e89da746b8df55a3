"""The wide lakehouse's tables for the plain peer: a user with dozens of similar tables
writes one asset factory per kind of table (Dagster's documented pattern) and lists the
instances in a file of their own. The file is JSON, a list of
`{"name", "template", "args"}` (DAGSTER_PLAIN_WIDE names it); each template below is plain
batch Spark SQL for one event hour, written from the tables' column definitions like the
six in tables.py. pyspark only: Dagster is in definitions.py."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from freshness_pipeline.lab.peers.dagster_plain.tables import (
    TRADE_TOTALS,
    Table,
    trailing_window_sql,
)

MINUTE = "CAST(date_trunc('MINUTE', second) AS TIMESTAMP)"
SECOND = "CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP)"


def sector_activity(name: str, sector: str) -> Table:
    """Per event second, trading in one sector."""
    quoted = sector.replace("'", "\\'")
    sql = f"""
SELECT sector, second,
       coalesce(sum(volume), 0) AS volume,
       coalesce(sum(trade_count), 0) AS trade_count,
       CAST(coalesce(sum(notional), 0) AS DECIMAL(38, 2)) AS notional,
       count(DISTINCT CASE WHEN volume > 0 THEN symbol END) AS active_symbols,
       max(arrival_ts) AS arrival_ts
FROM enriched_features
WHERE sector = '{quoted}'
GROUP BY sector, second
"""
    return Table(name, sql, ("second", "sector"), ("enriched_features",))


def minute_rollup(name: str, source: str, column: str) -> Table:
    """A per-second table's activity per minute."""
    sql = f"""
SELECT {column}, {MINUTE} AS minute,
       coalesce(sum(volume), 0) AS volume,
       coalesce(sum(trade_count), 0) AS trade_count,
       count(*) AS seconds,
       max(arrival_ts) AS arrival_ts
FROM {source}
GROUP BY {column}, {MINUTE}
"""
    return Table(name, sql, ("minute", column), (source,), time_column="minute")


def trailing_window(name: str, column: str, seconds: int) -> Table:
    """Per group per event second: volume against its trailing window of `seconds`, as
    industry_spike with another group and length."""
    sql = trailing_window_sql(column, seconds)
    return Table(name, sql, ("second", column), ("enriched_features",), lookback_s=seconds)


def letter_slice(name: str, letter: str) -> Table:
    """market_features of the symbols starting with one letter."""
    sql = f"""
SELECT symbol, second, mid, spread, spread_bps, vwap, volume, arrival_ts
FROM market_features
WHERE symbol LIKE '{letter}%'
"""
    return Table(name, sql, ("second", "symbol"), ("market_features",))


def letter_trades(name: str, letter: str) -> Table:
    """Per event second, the trades of the symbols starting with one letter."""
    sql = f"""
SELECT substr(symbol, 1, 1) AS letter, {SECOND} AS second,
       {TRADE_TOTALS}
FROM trade_raw
WHERE symbol LIKE '{letter}%'
GROUP BY substr(symbol, 1, 1), {SECOND}
"""
    return Table(name, sql, ("second", "letter"), ("trade_raw",))


def letter_quotes(name: str, letter: str) -> Table:
    """Per event second, the quote updates of the symbols starting with one letter."""
    sql = f"""
SELECT substr(symbol, 1, 1) AS letter, {SECOND} AS second,
       max(CAST(price AS DECIMAL(18, 2))) AS high_quote,
       min(CAST(price AS DECIMAL(18, 2))) AS low_quote,
       count(*) AS update_count,
       max(arrival_ts) AS arrival_ts
FROM price_raw
WHERE symbol LIKE '{letter}%'
GROUP BY substr(symbol, 1, 1), {SECOND}
"""
    return Table(name, sql, ("second", "letter"), ("price_raw",))


TEMPLATES: dict[str, Callable[..., Table]] = {
    "sector_activity": sector_activity,
    "minute_rollup": minute_rollup,
    "trailing_window": trailing_window,
    "letter_slice": letter_slice,
    "letter_trades": letter_trades,
    "letter_quotes": letter_quotes,
}


def wide_tables(path: Path) -> list[Table]:
    """The tables the file lists, in its order (each after the tables it reads). Raises
    ValueError naming the entry that is wrong."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a JSON list of wide tables ({exc})") from exc
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a JSON list of wide tables")
    tables = []
    for entry in entries:
        name = entry.get("template") if isinstance(entry, dict) else None
        template = TEMPLATES.get(name) if isinstance(name, str) else None
        if template is None:
            raise ValueError(f"{path}: {entry!r} names no template of {sorted(TEMPLATES)}")
        try:
            tables.append(template(entry["name"], *entry.get("args", [])))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{path}: {entry!r}: {exc}") from exc
    return tables
