/* freshness
description: "Per symbol per event second: best bid and best ask of price_raw with their sizes."
group: aggregates
inputs: [price_raw]
key: [second, symbol]
event_time: second
partition: {column: event_hour, from: "date_format(second, 'yyyyMMddHH')"}
layouts:
  published: {partition: {column: symbol_prefix, from: "substr(symbol, 1, 1)"}}
merge: partial_aggregates
columns:
  best_bid: max
  best_bid_size: {sum_at_max: best_bid}
  best_ask: min
  best_ask_size: {sum_at_min: best_ask}
  update_count: count
*/
-- price_aggr: price_raw per symbol per event second: best bid and ask with their sizes.
-- Key (second, symbol); partitioned by event hour.
-- best_bid is the highest bid price updated in the second and best_bid_size the summed
-- size of the updates at that price (best_ask: lowest ask price); both merge exactly.

-- View delta_price_raw: the price_raw rows of this run (t_done < arrival_ts <= cutoff_u).
WITH typed AS (
  SELECT symbol, side, CAST(price AS DECIMAL(18, 2)) AS price, size, arrival_ts,
         CAST(date_trunc('SECOND', event_ts) AS TIMESTAMP) AS second
  FROM delta_price_raw
),
best AS (
  SELECT symbol, second,
         max(CASE WHEN side = 'B' THEN price END) AS best_bid,
         min(CASE WHEN side = 'S' THEN price END) AS best_ask,
         count(*) AS update_count,
         max(arrival_ts) AS arrival_ts
  FROM typed GROUP BY symbol, second
)
SELECT b.symbol, b.second, b.best_bid,
       sum(CASE WHEN t.side = 'B' AND t.price = b.best_bid THEN t.size END) AS best_bid_size,
       b.best_ask,
       sum(CASE WHEN t.side = 'S' AND t.price = b.best_ask THEN t.size END) AS best_ask_size,
       b.update_count, b.arrival_ts
FROM best b JOIN typed t ON t.symbol = b.symbol AND t.second = b.second
GROUP BY b.symbol, b.second, b.best_bid, b.best_ask, b.update_count, b.arrival_ts
