"""A wide lakehouse from a seed: the six market jobs and 43 declared jobs beside them.

With six tables on two cores the scheduler has almost nothing to choose: one pipeline is in
flight at a time. Real lakehouses have dozens of derived tables competing for few run
slots, in chains of different depth and cost. This module writes such a lakehouse's jobs
as declarations (docs/JOBS.md), the same files a user writes, into a folder that runs
beside the bundled one (`FRESHNESS_JOBS=jobs_sql:<folder>`):

- per-sector activity per second over enriched_features, a few with a per-minute rollup
  below them (depth 5 and 6 from the raw tables);
- per-industry trailing windows of several lengths (the cost of a window grows with it);
- per-symbol trailing windows over enriched_features: the heavy steps (every symbol's
  window of rows is read again for each touched second);
- per-letter slices of market_features (cheap, depth 3);
- per-letter trade and quote aggregates straight off the raw tables, a few with a
  per-minute rollup: short pipelines of their own, beside the market one;
- per-minute rollups of the two views.

Which sectors, letters and window lengths is drawn from the seed; `describe` says what a
seed made, for the report.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.catalog.jobs import BUNDLED_JOBS_DIR, JobSpec, load_jobs

SECTORS = (
    "Communication Services",
    "Consumer Discretionary",
    "Consumer Staples",
    "Energy",
    "Financials",
    "Health Care",
    "Industrials",
    "Information Technology",
    "Materials",
    "Real Estate",
    "Utilities",
)
LETTERS = "ABCDEFGHIJKLMNOPRSTW"  # first letters that many listed symbols share
HOUR_PARTITION = "partition: {column: event_hour, from: \"date_format(second, 'yyyyMMddHH')\"}"
MINUTE_PARTITION = "partition: {column: event_hour, from: \"date_format(minute, 'yyyyMMddHH')\"}"


@dataclass(frozen=True)
class WideShape:
    """How many jobs of each template a seed draws (the defaults: 43 jobs)."""

    sectors: int = 9  # per-sector activity per second
    sector_minutes: int = 5  # of those, with a per-minute rollup below
    industry_windows: tuple[int, ...] = (15, 30, 120, 300)  # trailing seconds
    symbol_windows: int = 3  # heavy: per symbol, a trailing window of 10-60 s
    letters: int = 8  # per-letter slices of market_features
    view_minutes: bool = True  # per-minute rollups of sector_vwap and industry_spike
    trade_letters: int = 6  # per-letter trade aggregates straight off trade_raw
    trade_minutes: int = 2  # of those, with a per-minute rollup below
    quote_letters: int = 4  # per-letter quote aggregates straight off price_raw


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def _header(description: str, group: str, inputs: str, key: str, event_time: str) -> str:
    return (
        "/* freshness\n"
        f"description: {json.dumps(description)}\n"  # (a JSON string is a YAML one)
        f"group: {group}\n"
        f"inputs: [{inputs}]\n"
        f"key: [{key}]\n"
        f"event_time: {event_time}\n"
    )


def sector_activity(sector: str) -> str:
    return (
        _header(
            f"Per event second, trading in {sector}: volume, trades, notional, active symbols.",
            "wide_sectors",
            "enriched_features",
            "second, sector",
            "second",
        )
        + f"{HOUR_PARTITION}\nmerge: recompute_touched_groups\n*/\n"
        + "-- View group_rows: the current enriched_features rows of the touched groups.\n"
        "SELECT\n"
        "  sector,\n"
        "  second,\n"
        "  coalesce(sum(volume), 0) AS volume,\n"
        "  coalesce(sum(trade_count), 0) AS trade_count,\n"
        "  CAST(coalesce(sum(notional), 0) AS DECIMAL(38, 2)) AS notional,\n"
        "  count(DISTINCT CASE WHEN volume > 0 THEN symbol END) AS active_symbols,\n"
        "  max(arrival_ts) AS arrival_ts\n"
        "FROM group_rows\n"
        f"WHERE sector = '{sector}'\n"
        "GROUP BY sector, second\n"
    )


def minute_rollup(source: str, group_column: str, description: str, group: str) -> str:
    minute = "CAST(date_trunc('MINUTE', second) AS TIMESTAMP)"
    return (
        _header(description, group, source, f"minute, {group_column}", "minute")
        + f'{MINUTE_PARTITION}\nmerge: recompute_touched_groups\ngroups: {{minute: "{minute}"}}\n'
        "*/\n"
        f"-- View group_rows: the current {source} rows of the touched minutes.\n"
        "SELECT\n"
        f"  {group_column},\n"
        f"  {minute} AS minute,\n"
        "  coalesce(sum(volume), 0) AS volume,\n"
        "  coalesce(sum(trade_count), 0) AS trade_count,\n"
        "  count(*) AS seconds,\n"
        "  max(arrival_ts) AS arrival_ts\n"
        "FROM group_rows\n"
        f"GROUP BY {group_column}, {minute}\n"
    )


def trailing_window(group_column: str, seconds: int, group: str) -> str:
    return (
        _header(
            f"Per {group_column} per event second: volume against its trailing {seconds} s "
            "average, and the spike ratio.",
            group,
            "enriched_features",
            f"second, {group_column}",
            "second",
        )
        + f"{HOUR_PARTITION}\nmerge: recompute_touched_groups\n"
        "window:\n"
        f"  seconds: {seconds}\n"
        "  group_arrival: group_arrival_ts\n"
        "  columns:\n"
        f'    trailing_volume_avg: "CAST(coalesce(sum(w.volume), 0) AS DOUBLE) / {seconds}"\n'
        f'    spike_ratio: "g.volume / (CAST(coalesce(sum(w.volume), 0) AS DOUBLE) / {seconds})"\n'
        "*/\n"
        "-- View group_rows: the current enriched_features rows of the touched groups.\n"
        "SELECT\n"
        f"  {group_column},\n"
        "  second,\n"
        "  coalesce(sum(volume), 0) AS volume,\n"
        "  coalesce(sum(trade_count), 0) AS trade_count,\n"
        "  max(arrival_ts) AS group_arrival_ts\n"
        "FROM group_rows\n"
        f"GROUP BY {group_column}, second\n"
    )


def letter_slice(letter: str) -> str:
    return (
        _header(
            f"market_features of the symbols starting with {letter}: mid, spread and VWAP.",
            "wide_letters",
            "market_features",
            "second, symbol",
            "second",
        )
        + f"{HOUR_PARTITION}\nmerge: replace_by_key\n*/\n"
        "-- View delta_market_features: input row versions of this run.\n"
        "SELECT symbol, second, mid, spread, spread_bps, vwap, volume, arrival_ts\n"
        "FROM delta_market_features\n"
        f"WHERE symbol LIKE '{letter}%'\n"
    )


def _raw_letter(letter: str, raw: str, noun: str, rules: str, aggregates: str) -> str:
    """Per event second, partial aggregates of one raw table's rows of the symbols that
    start with `letter` (`rules`: the declaration's column rules; `aggregates`: the
    SELECT's columns for them)."""
    second = "CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP)"
    return (
        _header(
            f"Per event second, the {noun} of the symbols starting with {letter}.",
            "wide_raw_letters",
            raw,
            "second, letter",
            "second",
        )
        + f"{HOUR_PARTITION}\nmerge: partial_aggregates\ncolumns:\n{rules}*/\n"
        f"-- View delta_{raw}: the {raw} rows of this run.\n"
        "SELECT\n"
        "  substr(symbol, 1, 1) AS letter,\n"
        f"  {second} AS second,\n"
        f"{aggregates}"
        "  max(arrival_ts) AS arrival_ts\n"
        f"FROM delta_{raw}\n"
        f"WHERE symbol LIKE '{letter}%'\n"
        f"GROUP BY substr(symbol, 1, 1), {second}\n"
    )


def letter_trades(letter: str) -> str:
    return _raw_letter(
        letter,
        "trade_raw",
        "trades",
        "  volume: sum\n"
        "  trade_count: count\n"
        "  notional: sum\n"
        '  vwap: {derived: "CAST(notional AS DOUBLE) / volume"}\n',
        "  sum(size) AS volume,\n"
        "  count(*) AS trade_count,\n"
        "  CAST(sum(CAST(price AS DECIMAL(18, 2)) * size) AS DECIMAL(38, 2)) AS notional,\n",
    )


def letter_quotes(letter: str) -> str:
    return _raw_letter(
        letter,
        "price_raw",
        "quotes",
        "  high_quote: max\n  low_quote: min\n  update_count: count\n",
        "  max(CAST(price AS DECIMAL(18, 2))) AS high_quote,\n"
        "  min(CAST(price AS DECIMAL(18, 2))) AS low_quote,\n"
        "  count(*) AS update_count,\n",
    )


WidePlan = list[tuple[str, str, tuple]]  # (table, template, the template's arguments)


def _minutes_below(
    plan: WidePlan, rng: random.Random, names: list[str], count: int, column: str
) -> None:
    """Per-minute rollups below `count` of the tables `names` (drawn from `rng`)."""
    for name in sorted(rng.sample(names, count)):
        plan.append((f"{name}_minute", "minute_rollup", (name, column)))


def wide_plan(seed: int, shape: WideShape = WideShape()) -> WidePlan:
    """The wide jobs a seed draws (the bundled six not among them), each (table, template,
    the template's arguments): what `wide_declarations` writes and `plain_wide_spec` tells
    the plain peer."""
    rng = random.Random(seed)
    plan: WidePlan = []
    sectors = sorted(rng.sample(SECTORS, shape.sectors))
    for sector in sectors:
        plan.append((f"sector_{slug(sector)}", "sector_activity", (sector,)))
    names = [f"sector_{slug(sector)}" for sector in sectors]
    _minutes_below(plan, rng, names, shape.sector_minutes, "sector")
    for seconds in shape.industry_windows:
        plan.append((f"industry_window_{seconds}s", "trailing_window", ("industry", seconds)))
    for seconds in sorted(rng.sample(range(10, 61, 5), shape.symbol_windows)):
        plan.append((f"symbol_window_{seconds}s", "trailing_window", ("symbol", seconds)))
    for letter in sorted(rng.sample(LETTERS, shape.letters)):
        plan.append((f"letter_{letter.lower()}", "letter_slice", (letter,)))
    trades = sorted(rng.sample(LETTERS, shape.trade_letters))
    for letter in trades:
        plan.append((f"trades_{letter.lower()}", "letter_trades", (letter,)))
    names = [f"trades_{letter.lower()}" for letter in trades]
    _minutes_below(plan, rng, names, shape.trade_minutes, "letter")
    for letter in sorted(rng.sample(LETTERS, shape.quote_letters)):
        plan.append((f"quotes_{letter.lower()}", "letter_quotes", (letter,)))
    if shape.view_minutes:
        plan.append(("sector_vwap_minute", "minute_rollup", ("sector_vwap", "sector")))
        plan.append(("industry_spike_minute", "minute_rollup", ("industry_spike", "industry")))
    return plan


_GROUPS = {"sector": "wide_sectors", "letter": "wide_raw_letters"}
_WINDOW_GROUPS = {"industry": "wide_windows", "symbol": "wide_heavy"}


def _declaration(name: str, template: str, args: tuple) -> str:
    if template == "sector_activity":
        return sector_activity(*args)
    if template == "minute_rollup":
        source, column = args
        group = "wide_views" if source in ("sector_vwap", "industry_spike") else _GROUPS[column]
        return minute_rollup(source, column, f"{source} per minute.", group)
    if template == "trailing_window":
        column, seconds = args
        return trailing_window(column, seconds, _WINDOW_GROUPS[column])
    if template == "letter_slice":
        return letter_slice(*args)
    if template == "letter_trades":
        return letter_trades(*args)
    if template == "letter_quotes":
        return letter_quotes(*args)
    raise ValueError(f"{name}: no template {template!r}")


def wide_declarations(seed: int, shape: WideShape = WideShape()) -> dict[str, str]:
    """File name -> declaration text of the wide jobs a seed draws (the bundled six not
    among them)."""
    return {
        f"{name}.sql": _declaration(name, template, args)
        for name, template, args in wide_plan(seed, shape)
    }


def plain_wide_spec(seed: int, shape: WideShape = WideShape()) -> list[dict]:
    """The seed's wide tables as the plain Dagster peer takes them (its own JSON: which
    sectors, letters and windows; it writes each table's SQL itself)."""
    return [
        {"name": name, "template": template, "args": list(args)}
        for name, template, args in wide_plan(seed, shape)
    ]


def write_wide(folder: Path, seed: int, shape: WideShape = WideShape()) -> list[Path]:
    """Writes the seed's declarations into `folder` (emptied of .sql files first)."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.sql"):
        old.unlink()
    paths = []
    for name, text in wide_declarations(seed, shape).items():
        path = folder / name
        path.write_text(text)
        paths.append(path)
    return paths


def wide_jobs(folder: Path) -> dict[str, JobSpec]:
    """The bundled jobs and the wide ones in `folder`, in dependency order."""
    return load_jobs(BUNDLED_JOBS_DIR, folder)


def depth(jobs: Mapping[str, JobSpec], raw: frozenset[str]) -> dict[str, int]:
    """Each job's steps from the raw tables (a job over raw tables only is 1)."""
    found: dict[str, int] = {}
    for name, spec in jobs.items():  # dependency order: inputs first
        found[name] = 1 + max((found.get(t, 0) for t in spec.inputs if t not in raw), default=0)
    return found


def describe(jobs: Mapping[str, JobSpec], raw: frozenset[str]) -> str:
    """A Markdown table of the lakehouse: job, group, inputs, kind, depth."""
    depths = depth(jobs, raw)
    lines = ["| job | group | inputs | kind | window | depth |", "|---|---|---|---|---|---|"]
    for name, spec in jobs.items():
        window = f"{spec.window_s} s" if spec.window_s else "-"
        lines.append(
            f"| {name} | {spec.group_name} | {', '.join(spec.inputs)} | {spec.kind} | "
            f"{window} | {depths[name]} |"
        )
    return "\n".join(lines)
