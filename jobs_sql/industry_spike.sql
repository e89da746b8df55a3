/* freshness
description: >-
  Per industry per event second: volume against its trailing 60 s average, and the
  spike ratio.
group: views
inputs: [enriched_features]
key: [second, industry]
event_time: second
partition: {column: event_hour, from: "date_format(second, 'yyyyMMddHH')"}
layouts:
  published: {}  # unpartitioned
merge: recompute_touched_groups
window:
  seconds: 60
  group_arrival: group_arrival_ts
  columns:
    trailing_volume_avg: "CAST(coalesce(sum(w.volume), 0) AS DOUBLE) / 60"
    spike_ratio: "g.volume / (CAST(coalesce(sum(w.volume), 0) AS DOUBLE) / 60)"
*/
-- industry_spike: enriched_features per industry per event second: volume against its
-- trailing window (the 60 seconds before), and a spike ratio. Key (second, industry);
-- partitioned by event hour. A changed industry-second is recomputed from its current rows, then only
-- the windows it falls into (the next 60 seconds of that industry) are recomputed.

-- View group_rows: the current enriched_features rows of the touched groups.
SELECT
  industry,
  second,
  coalesce(sum(volume), 0) AS volume,
  coalesce(sum(trade_count), 0) AS trade_count,
  max(arrival_ts) AS group_arrival_ts
FROM group_rows
GROUP BY industry, second
