/* freshness
description: >-
  price_aggr full-outer-joined with trade_aggr on (second, symbol): mid, spread, spread
  in bps, order imbalance, VWAP against mid.
group: features
inputs: [price_aggr, trade_aggr]
key: [second, symbol]
event_time: second
partition: {column: event_hour, from: "date_format(second, 'yyyyMMddHH')"}
layouts:
  published: {partition: {column: symbol_prefix, from: "substr(symbol, 1, 1)"}}
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
-- and market features. Key (second, symbol); partitioned by event hour.
-- A full outer join: a row exists where either side has the key. Each side is stored with
-- its own arrival, so a change on one side updates that side and keeps the other (the
-- join updates the side that changed; no lookup into the other input is needed).

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
