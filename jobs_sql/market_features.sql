/* freshness
description: >-
  price_aggr full-outer-joined with trade_aggr on (second, symbol): mid, spread, spread
  in bps, order imbalance, VWAP against mid.
group: features
inputs: [price_aggr, trade_aggr]
key: [second, symbol]
event_time: second
partition: {column: symbol_prefix, from: "substr(symbol, 1, 1)"}
merge: per_side_replace
sides:
  price:
    present: has_price
    arrival: price_arrival_ts
    columns: [best_bid, best_bid_size, best_ask, best_ask_size, update_count]
  trade:
    present: has_trade
    arrival: trade_arrival_ts
    columns: [open, high, low, close, volume, trade_count, notional, vwap]
# In doubles from exact decimal inputs: a DECIMAL quotient would be rounded first.
columns:
  mid: {derived: "CAST((best_bid + best_ask) / 2 AS DOUBLE)"}
  spread: {derived: "CAST(best_ask - best_bid AS DOUBLE)"}
  spread_bps:
    derived: >-
      CAST(best_ask - best_bid AS DOUBLE) / CAST((best_bid + best_ask) / 2 AS DOUBLE) * 10000
  order_imbalance:
    derived: "CAST(best_bid_size - best_ask_size AS DOUBLE) / (best_bid_size + best_ask_size)"
  vwap_vs_mid_bps:
    derived: >-
      (vwap - CAST((best_bid + best_ask) / 2 AS DOUBLE))
      / CAST((best_bid + best_ask) / 2 AS DOUBLE) * 10000
*/
-- market_features: price_aggr joined with trade_aggr on (second, symbol): quotes, trades
-- and market features. Key (second, symbol); partitioned by the symbol's first letter.
-- A full outer join: a row exists where either side has the key. Each side is stored with
-- its own arrival, so a change on one side updates that side and keeps the other (the
-- join updates the side that changed; no lookup into the other input is needed).

-- section: partial
-- Views delta_price_aggr and delta_trade_aggr: input row versions of this run.
SELECT
  coalesce(p.symbol, t.symbol) AS symbol,
  coalesce(p.second, t.second) AS second,
  p.symbol IS NOT NULL AS has_price,
  t.symbol IS NOT NULL AS has_trade,
  p.best_bid, p.best_bid_size, p.best_ask, p.best_ask_size, p.update_count,
  p.arrival_ts AS price_arrival_ts,
  t.open, t.high, t.low, t.close, t.volume, t.trade_count, t.notional, t.vwap,
  t.arrival_ts AS trade_arrival_ts
FROM delta_price_aggr p
FULL OUTER JOIN delta_trade_aggr t ON t.symbol = p.symbol AND t.second = p.second

-- section: merge
-- Views partial (above) and existing (current target rows with the same keys).
WITH sides AS (
  SELECT
    p.symbol, p.second,
    IF(p.has_price, p.best_bid, e.best_bid) AS best_bid,
    IF(p.has_price, p.best_bid_size, e.best_bid_size) AS best_bid_size,
    IF(p.has_price, p.best_ask, e.best_ask) AS best_ask,
    IF(p.has_price, p.best_ask_size, e.best_ask_size) AS best_ask_size,
    IF(p.has_price, p.update_count, e.update_count) AS update_count,
    IF(p.has_price, p.price_arrival_ts, e.price_arrival_ts) AS price_arrival_ts,
    IF(p.has_trade, p.open, e.open) AS open,
    IF(p.has_trade, p.high, e.high) AS high,
    IF(p.has_trade, p.low, e.low) AS low,
    IF(p.has_trade, p.close, e.close) AS close,
    IF(p.has_trade, p.volume, e.volume) AS volume,
    IF(p.has_trade, p.trade_count, e.trade_count) AS trade_count,
    IF(p.has_trade, p.notional, e.notional) AS notional,
    IF(p.has_trade, p.vwap, e.vwap) AS vwap,
    IF(p.has_trade, p.trade_arrival_ts, e.trade_arrival_ts) AS trade_arrival_ts
  FROM partial p
  LEFT JOIN existing e ON e.symbol = p.symbol AND e.second = p.second
)
SELECT
  symbol, second,
  best_bid, best_bid_size, best_ask, best_ask_size, update_count,
  open, high, low, close, volume, trade_count, notional, vwap,
  CAST((best_bid + best_ask) / 2 AS DOUBLE) AS mid,
  CAST(best_ask - best_bid AS DOUBLE) AS spread,
  -- In doubles from exact decimal inputs: a DECIMAL quotient would be rounded first.
  CAST(best_ask - best_bid AS DOUBLE) / CAST((best_bid + best_ask) / 2 AS DOUBLE) * 10000
    AS spread_bps,
  CAST(best_bid_size - best_ask_size AS DOUBLE) / (best_bid_size + best_ask_size)
    AS order_imbalance,
  (vwap - CAST((best_bid + best_ask) / 2 AS DOUBLE))
    / CAST((best_bid + best_ask) / 2 AS DOUBLE) * 10000 AS vwap_vs_mid_bps,
  price_arrival_ts,
  trade_arrival_ts,
  greatest(price_arrival_ts, trade_arrival_ts) AS arrival_ts,
  substr(symbol, 1, 1) AS symbol_prefix
FROM sides
