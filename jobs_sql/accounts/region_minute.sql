/* freshness
description: Per region per minute, the summed amount, transactions and active accounts.
group: accounts
inputs: [account_minute]
key: [minute, region]
event_time: minute
merge: recompute_touched_groups
*/

-- View group_rows: the current account_minute rows of the region-minutes this run touches.
SELECT
  region,
  minute,
  CAST(sum(amount) AS DECIMAL(38, 2)) AS amount,
  sum(txns) AS txns,
  count(DISTINCT account_id) AS accounts,
  max(arrival_ts) AS arrival_ts
FROM group_rows
GROUP BY region, minute
