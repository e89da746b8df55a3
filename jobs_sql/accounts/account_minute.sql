/* freshness
description: >-
  Per account per minute of transaction time: the summed amount and the number of
  transactions, from account_txns (a merge-on-read table someone else writes, with
  updates).
group: accounts
inputs: [account_txns]
key: [minute, account_id]
event_time: minute
merge: recompute_touched_groups
# A transaction can change after it was counted (an amount corrected), so each minute of
# an account a run touches is recomputed from that account-minute's current rows.
groups: {minute: "CAST(date_trunc('MINUTE', txn_ts) AS TIMESTAMP)"}
*/

-- View group_rows: the current account_txns rows of the account-minutes this run touches.
SELECT
  account_id,
  CAST(date_trunc('MINUTE', txn_ts) AS TIMESTAMP) AS minute,
  max(region) AS region,
  CAST(sum(amount) AS DECIMAL(38, 2)) AS amount,
  count(*) AS txns,
  max(arrival_ts) AS arrival_ts
FROM group_rows
GROUP BY account_id, CAST(date_trunc('MINUTE', txn_ts) AS TIMESTAMP)
