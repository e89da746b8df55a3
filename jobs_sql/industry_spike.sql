/* freshness
description: >-
  Per industry per event second: volume against its trailing 60 s average, and the
  spike ratio.
group: views
inputs: [enriched_features]
key: [second, industry]
event_time: second
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
-- unpartitioned. A changed industry-second is recomputed from its current rows, then only
-- the windows it falls into (the next 60 seconds of that industry) are recomputed.

-- section: touched
SELECT DISTINCT industry, second FROM delta_enriched_features

-- section: partial
-- View group_rows: the current enriched_features rows of the touched groups.
SELECT
  industry,
  second,
  coalesce(sum(volume), 0) AS volume,
  coalesce(sum(trade_count), 0) AS trade_count,
  max(arrival_ts) AS group_arrival_ts
FROM group_rows
GROUP BY industry, second

-- section: merge
-- Views partial (recomputed groups) and existing (current target rows of the touched
-- industries within 60 s of a touched second). Rewrites every row whose window holds a
-- touched second.
WITH groups AS (
  SELECT industry, second, volume, trade_count, group_arrival_ts FROM partial
  UNION ALL
  SELECT e.industry, e.second, e.volume, e.trade_count, e.group_arrival_ts
  FROM existing e LEFT ANTI JOIN partial p ON p.industry = e.industry AND p.second = e.second
),
affected AS (
  SELECT DISTINCT g.industry, g.second
  FROM groups g JOIN partial p
    ON p.industry = g.industry
   AND g.second >= p.second AND g.second <= p.second + INTERVAL 60 SECONDS
)
SELECT
  g.industry,
  g.second,
  g.volume,
  g.trade_count,
  CAST(coalesce(sum(w.volume), 0) AS DOUBLE) / 60 AS trailing_volume_avg,
  g.volume / (CAST(coalesce(sum(w.volume), 0) AS DOUBLE) / 60) AS spike_ratio,
  g.group_arrival_ts,
  greatest(g.group_arrival_ts, coalesce(max(w.group_arrival_ts), g.group_arrival_ts))
    AS arrival_ts
FROM affected a
JOIN groups g ON g.industry = a.industry AND g.second = a.second
LEFT JOIN groups w
  ON w.industry = g.industry
 AND w.second >= g.second - INTERVAL 60 SECONDS AND w.second < g.second
GROUP BY g.industry, g.second, g.volume, g.trade_count, g.group_arrival_ts
