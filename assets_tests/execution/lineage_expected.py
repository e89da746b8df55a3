"""Hand-labelled column lineage of the six jobs, written by reading jobs_sql/*.sql (not by
running lineage.py), by RELATED.md A's rules: an output column depends on every input column
its expressions reference on the way from the inputs (CASE/IF conditions included; WHERE,
join and GROUP BY predicates add nothing; `count(*)` names no column). Edges from the
target's own current rows (`existing`) are not upstream and are left out.

Each entry keeps the SHA-256 of the SQL file it was labelled from: when the SQL changes,
test_lineage fails until the file is read again and this entry (edges, types, hash) updated.
"""

from __future__ import annotations

# asset -> sql_sha256, output columns in table order: (name, Spark type, {input table.column})
EXPECTED: dict[str, dict[str, object]] = {
    "trade_aggr": {
        "sql_sha256": "c1ff777d47837332c8792549adda056e0d7f07cbb0ac0affeb0489ad3ad17e37",
        "columns": [
            ("symbol", "string", {"trade_raw.symbol"}),
            ("second", "timestamp", {"trade_raw.event_ts"}),
            # min_by(price, struct(event_ts, trade_id)), merged by open_at (same struct)
            (
                "open",
                "decimal(18,2)",
                {"trade_raw.price", "trade_raw.event_ts", "trade_raw.trade_id"},
            ),
            ("high", "decimal(18,2)", {"trade_raw.price"}),
            ("low", "decimal(18,2)", {"trade_raw.price"}),
            (
                "close",
                "decimal(18,2)",
                {"trade_raw.price", "trade_raw.event_ts", "trade_raw.trade_id"},
            ),
            ("volume", "bigint", {"trade_raw.size"}),
            ("trade_count", "bigint", set()),  # count(*)
            ("notional", "decimal(38,2)", {"trade_raw.price", "trade_raw.size"}),
            ("vwap", "double", {"trade_raw.price", "trade_raw.size"}),
            (
                "open_at",
                "struct<event_ts:timestamp,trade_id:bigint>",
                {"trade_raw.event_ts", "trade_raw.trade_id"},
            ),
            (
                "close_at",
                "struct<event_ts:timestamp,trade_id:bigint>",
                {"trade_raw.event_ts", "trade_raw.trade_id"},
            ),
            ("arrival_ts", "timestamp", {"trade_raw.arrival_ts"}),
            ("event_hour", "string", {"trade_raw.event_ts"}),
        ],
    },
    "price_aggr": {
        "sql_sha256": "c535fb00fb8ac84629acd33716b4903295fed2ad9658ca2b2088b223341ca16c",
        "columns": [
            ("symbol", "string", {"price_raw.symbol"}),
            ("second", "timestamp", {"price_raw.event_ts"}),
            # max(CASE WHEN side = 'B' THEN price END)
            ("best_bid", "decimal(18,2)", {"price_raw.side", "price_raw.price"}),
            # sum(CASE WHEN side = 'B' AND price = best_bid THEN size END)
            ("best_bid_size", "bigint", {"price_raw.side", "price_raw.price", "price_raw.size"}),
            ("best_ask", "decimal(18,2)", {"price_raw.side", "price_raw.price"}),
            ("best_ask_size", "bigint", {"price_raw.side", "price_raw.price", "price_raw.size"}),
            ("update_count", "bigint", set()),  # count(*)
            ("arrival_ts", "timestamp", {"price_raw.arrival_ts"}),
            ("event_hour", "string", {"price_raw.event_ts"}),
        ],
    },
    "market_features": {
        "sql_sha256": "03d82651e9cc790ce8449e285135e9c711f0ad8c79217c12ce816e13392c44fe",
        # Each side's column is taken IF(has_price/has_trade, ...), and has_price is
        # `p.symbol IS NOT NULL`: the side's symbol is a (conditional) input of its columns.
        "columns": [
            ("symbol", "string", {"price_aggr.symbol", "trade_aggr.symbol"}),
            ("second", "timestamp", {"price_aggr.second", "trade_aggr.second"}),
            ("best_bid", "decimal(18,2)", {"price_aggr.best_bid", "price_aggr.symbol"}),
            ("best_bid_size", "bigint", {"price_aggr.best_bid_size", "price_aggr.symbol"}),
            ("best_ask", "decimal(18,2)", {"price_aggr.best_ask", "price_aggr.symbol"}),
            ("best_ask_size", "bigint", {"price_aggr.best_ask_size", "price_aggr.symbol"}),
            ("update_count", "bigint", {"price_aggr.update_count", "price_aggr.symbol"}),
            ("open", "decimal(18,2)", {"trade_aggr.open", "trade_aggr.symbol"}),
            ("high", "decimal(18,2)", {"trade_aggr.high", "trade_aggr.symbol"}),
            ("low", "decimal(18,2)", {"trade_aggr.low", "trade_aggr.symbol"}),
            ("close", "decimal(18,2)", {"trade_aggr.close", "trade_aggr.symbol"}),
            ("volume", "bigint", {"trade_aggr.volume", "trade_aggr.symbol"}),
            ("trade_count", "bigint", {"trade_aggr.trade_count", "trade_aggr.symbol"}),
            ("notional", "decimal(38,2)", {"trade_aggr.notional", "trade_aggr.symbol"}),
            ("vwap", "double", {"trade_aggr.vwap", "trade_aggr.symbol"}),
            ("mid", "double", {"price_aggr.best_bid", "price_aggr.best_ask", "price_aggr.symbol"}),
            (
                "spread",
                "double",
                {"price_aggr.best_bid", "price_aggr.best_ask", "price_aggr.symbol"},
            ),
            (
                "spread_bps",
                "double",
                {"price_aggr.best_bid", "price_aggr.best_ask", "price_aggr.symbol"},
            ),
            (
                "order_imbalance",
                "double",
                {"price_aggr.best_bid_size", "price_aggr.best_ask_size", "price_aggr.symbol"},
            ),
            (
                "vwap_vs_mid_bps",
                "double",
                {
                    "trade_aggr.vwap",
                    "trade_aggr.symbol",
                    "price_aggr.best_bid",
                    "price_aggr.best_ask",
                    "price_aggr.symbol",
                },
            ),
            ("price_arrival_ts", "timestamp", {"price_aggr.arrival_ts", "price_aggr.symbol"}),
            ("trade_arrival_ts", "timestamp", {"trade_aggr.arrival_ts", "trade_aggr.symbol"}),
            (
                "arrival_ts",
                "timestamp",
                {
                    "price_aggr.arrival_ts",
                    "price_aggr.symbol",
                    "trade_aggr.arrival_ts",
                    "trade_aggr.symbol",
                },
            ),
            ("event_hour", "string", {"price_aggr.second", "trade_aggr.second"}),
        ],
    },
    "enriched_features": {
        "sql_sha256": "b79f6b6f4c1e44a4e035712f2906cdbbab51e5ddce26f47e362dbec5c6c2fc5a",
        # company_master.symbol is only the join key: no edge (Join rule).
        "columns": [
            ("symbol", "string", {"market_features.symbol"}),
            ("second", "timestamp", {"market_features.second"}),
            ("sector", "string", {"company_master.sector"}),
            ("industry", "string", {"company_master.industry"}),
            ("best_bid", "decimal(18,2)", {"market_features.best_bid"}),
            ("best_bid_size", "bigint", {"market_features.best_bid_size"}),
            ("best_ask", "decimal(18,2)", {"market_features.best_ask"}),
            ("best_ask_size", "bigint", {"market_features.best_ask_size"}),
            ("update_count", "bigint", {"market_features.update_count"}),
            ("open", "decimal(18,2)", {"market_features.open"}),
            ("high", "decimal(18,2)", {"market_features.high"}),
            ("low", "decimal(18,2)", {"market_features.low"}),
            ("close", "decimal(18,2)", {"market_features.close"}),
            ("volume", "bigint", {"market_features.volume"}),
            ("trade_count", "bigint", {"market_features.trade_count"}),
            ("notional", "decimal(38,2)", {"market_features.notional"}),
            ("vwap", "double", {"market_features.vwap"}),
            ("mid", "double", {"market_features.mid"}),
            ("spread", "double", {"market_features.spread"}),
            ("spread_bps", "double", {"market_features.spread_bps"}),
            ("order_imbalance", "double", {"market_features.order_imbalance"}),
            ("vwap_vs_mid_bps", "double", {"market_features.vwap_vs_mid_bps"}),
            ("arrival_ts", "timestamp", {"market_features.arrival_ts"}),
            ("event_hour", "string", {"market_features.second"}),
        ],
    },
    "sector_vwap": {
        "sql_sha256": "a4580490968dcce5996be05257448101167f331eedef208fcff02699d518b9f9",
        "columns": [
            ("sector", "string", {"enriched_features.sector"}),
            ("second", "timestamp", {"enriched_features.second"}),
            ("volume", "bigint", {"enriched_features.volume"}),
            ("trade_count", "bigint", {"enriched_features.trade_count"}),
            ("notional", "decimal(38,2)", {"enriched_features.notional"}),
            ("vwap", "double", {"enriched_features.notional", "enriched_features.volume"}),
            # count(DISTINCT CASE WHEN volume > 0 THEN symbol END)
            ("active_symbols", "bigint", {"enriched_features.volume", "enriched_features.symbol"}),
            (
                "quoted_symbols",
                "bigint",
                {
                    "enriched_features.best_bid",
                    "enriched_features.best_ask",
                    "enriched_features.symbol",
                },
            ),
            ("arrival_ts", "timestamp", {"enriched_features.arrival_ts"}),
            ("event_hour", "string", {"enriched_features.second"}),
        ],
    },
    "industry_spike": {
        "sql_sha256": "bf05ddd88ad0f7eda0d2b6cd7a62a1166305353ac3149bd3f83dce4b4e792251",
        # The window join (`affected`, `w`) and the anti join only choose rows; the trailing
        # sums read w.volume, which is partial's sum(volume) again.
        "columns": [
            ("industry", "string", {"enriched_features.industry"}),
            ("second", "timestamp", {"enriched_features.second"}),
            ("volume", "bigint", {"enriched_features.volume"}),
            ("trade_count", "bigint", {"enriched_features.trade_count"}),
            ("trailing_volume_avg", "double", {"enriched_features.volume"}),
            ("spike_ratio", "double", {"enriched_features.volume"}),
            ("group_arrival_ts", "timestamp", {"enriched_features.arrival_ts"}),
            ("arrival_ts", "timestamp", {"enriched_features.arrival_ts"}),
            ("event_hour", "string", {"enriched_features.second"}),
        ],
    },
}

# A few edges' kinds, also read off the SQL: (input table.column, output table.column) -> kinds.
EXPECTED_KINDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("trade_raw.symbol", "trade_aggr.symbol"): ("identity",),
    ("trade_raw.event_ts", "trade_aggr.second"): ("transform",),
    ("trade_raw.size", "trade_aggr.volume"): ("aggregate",),
    ("price_raw.side", "price_aggr.best_bid"): ("condition",),
    ("price_aggr.symbol", "market_features.best_bid"): ("condition",),
    ("price_aggr.best_bid", "market_features.best_bid"): ("transform",),
    ("company_master.sector", "enriched_features.sector"): ("transform",),
    ("market_features.mid", "enriched_features.mid"): ("identity",),
    ("enriched_features.volume", "sector_vwap.active_symbols"): ("condition",),
    ("enriched_features.symbol", "sector_vwap.active_symbols"): ("aggregate",),
    ("enriched_features.volume", "industry_spike.spike_ratio"): ("aggregate",),
}

# Input columns that choose rows, per asset (dataset-level INDIRECT lineage): join and
# filter predicates and grouping keys read off the SQL, through CTEs and `partial`, plus
# the runner's views: every `delta_<input>` keeps t_done < arrival_ts <= u (filter), and
# `group_rows` is the input semi-joined with the touched (group column, second) (join).
EXPECTED_INDIRECT: dict[str, dict[str, set[str]]] = {
    "trade_aggr": {
        "trade_raw.arrival_ts": {"filter"},
        # GROUP BY symbol, CAST(date_trunc(event_ts)); merge joins existing on both
        "trade_raw.symbol": {"group_by", "join"},
        "trade_raw.event_ts": {"group_by", "join"},
    },
    "price_aggr": {
        # the final GROUP BY b.* includes b.arrival_ts = max(arrival_ts) and b.best_bid/ask
        "price_raw.arrival_ts": {"filter", "group_by"},
        "price_raw.symbol": {"group_by", "join"},
        "price_raw.event_ts": {"group_by", "join"},
        "price_raw.side": {"group_by"},
        "price_raw.price": {"group_by"},
    },
    "market_features": {
        "price_aggr.arrival_ts": {"filter"},
        "trade_aggr.arrival_ts": {"filter"},
        "price_aggr.symbol": {"join"},
        "price_aggr.second": {"join"},
        "trade_aggr.symbol": {"join"},
        "trade_aggr.second": {"join"},
    },
    "enriched_features": {
        "market_features.arrival_ts": {"filter"},
        # replace by key keeps one row per key (row_number over the key, newest arrival)
        "market_features.symbol": {"join", "filter"},
        "market_features.second": {"filter"},
        "company_master.symbol": {"join"},
    },
    "sector_vwap": {
        "enriched_features.arrival_ts": {"filter"},
        "enriched_features.sector": {"group_by", "join"},
        "enriched_features.second": {"group_by", "join"},
    },
    "industry_spike": {
        # the merge's GROUP BY g.industry, g.second, g.volume, g.trade_count, g.group_arrival_ts
        "enriched_features.arrival_ts": {"filter", "group_by"},
        "enriched_features.industry": {"group_by", "join"},
        "enriched_features.second": {"group_by", "join"},
        "enriched_features.volume": {"group_by"},
        "enriched_features.trade_count": {"group_by"},
    },
}
