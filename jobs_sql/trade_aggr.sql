/* freshness
description: >-
  Per symbol per event second: open, high, low, close (by event time), volume, trade
  count, notional and VWAP of trade_raw.
group: aggregates
inputs: [trade_raw]
key: [second, symbol]
event_time: second
partition: {column: event_hour, from: "date_format(second, 'yyyyMMddHH')"}
layouts:
  published: {partition: {column: symbol_prefix, from: "substr(symbol, 1, 1)"}}
merge: partial_aggregates
columns:
  open: {first_by: open_at}
  high: max
  low: min
  close: {last_by: close_at}
  volume: sum
  trade_count: count
  notional: sum
  # Full double precision: a DECIMAL division would round the quotient to 6 decimals.
  vwap: {derived: "CAST(notional AS DOUBLE) / volume"}
  open_at: min
  close_at: max
*/
-- trade_aggr: trade_raw per symbol per event second.
-- Key (second, symbol); partitioned by event hour.
-- open/close are the first/last trade by (event_ts, trade_id); prices are DECIMAL so that
-- partial aggregates merge exactly (sums add, min/max combine, open/close by event time).

-- View delta_trade_raw: the trade_raw rows of this run (t_done < arrival_ts <= cutoff_u).
SELECT
  symbol,
  CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP) AS second,
  min_by(CAST(price AS DECIMAL(18, 2)), struct(event_ts, trade_id)) AS open,
  max(CAST(price AS DECIMAL(18, 2))) AS high,
  min(CAST(price AS DECIMAL(18, 2))) AS low,
  max_by(CAST(price AS DECIMAL(18, 2)), struct(event_ts, trade_id)) AS close,
  sum(size) AS volume,
  count(*) AS trade_count,
  -- Spark's own type for this sum, said so that the lineage's types agree with it.
  CAST(sum(CAST(price AS DECIMAL(18, 2)) * size) AS DECIMAL(38, 2)) AS notional,
  min(struct(event_ts, trade_id)) AS open_at,
  max(struct(event_ts, trade_id)) AS close_at,
  max(arrival_ts) AS arrival_ts
FROM delta_trade_raw
GROUP BY symbol, CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP)
