/* freshness
description: >-
  Per sector per event second: VWAP, volume, trade count, active and quoted symbols.
group: views
inputs: [enriched_features]
key: [second, sector]
event_time: second
partition: {column: event_hour, from: "date_format(second, 'yyyyMMddHH')"}
layouts:
  published: {}  # unpartitioned
merge: recompute_touched_groups
*/
-- sector_vwap: enriched_features per sector per event second: volume-weighted average
-- price and trading activity. Key (second, sector); partitioned by event hour.
-- Rows of enriched_features change after they were counted, so a sector-second is
-- recomputed from the current rows of that group (the changed row's old version is
-- retracted by construction; nothing is added twice).

-- View group_rows: the current enriched_features rows of the touched groups.
SELECT
  sector,
  second,
  coalesce(sum(volume), 0) AS volume,
  coalesce(sum(trade_count), 0) AS trade_count,
  CAST(coalesce(sum(notional), 0) AS DECIMAL(38, 2)) AS notional,
  CAST(sum(notional) AS DOUBLE) / sum(volume) AS vwap,
  count(DISTINCT CASE WHEN volume > 0 THEN symbol END) AS active_symbols,
  count(DISTINCT CASE WHEN best_bid IS NOT NULL OR best_ask IS NOT NULL THEN symbol END)
    AS quoted_symbols,
  max(arrival_ts) AS arrival_ts
FROM group_rows
GROUP BY sector, second
