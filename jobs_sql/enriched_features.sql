/* freshness
description: market_features with sector and industry from company_master.
group: features
inputs: [market_features]
dimensions: [company_master]
key: [second, symbol]
event_time: second
partition: {column: event_hour, from: "date_format(second, 'yyyyMMddHH')"}
layouts:
  published: {partition: {column: symbol_prefix, from: "substr(symbol, 1, 1)"}}
merge: replace_by_key
*/
-- enriched_features: market_features joined with company_master on symbol: adds sector and
-- industry. Key (second, symbol); partitioned by event hour. A row is a
-- function of its market_features row alone, so a changed input row replaces its output row.

-- View delta_market_features: input row versions of this run; company_master: the master.
SELECT
  m.symbol, m.second,
  coalesce(c.sector, 'Unknown') AS sector,
  coalesce(c.industry, 'Unknown') AS industry,
  m.best_bid, m.best_bid_size, m.best_ask, m.best_ask_size, m.update_count,
  m.open, m.high, m.low, m.close, m.volume, m.trade_count, m.notional, m.vwap,
  m.mid, m.spread, m.spread_bps, m.order_imbalance, m.vwap_vs_mid_bps,
  m.arrival_ts
FROM delta_market_features m
LEFT JOIN company_master c ON c.symbol = m.symbol
