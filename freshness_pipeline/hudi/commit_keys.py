"""The commit-key protocol: what our writers put into every Hudi commit's extra metadata,
and where a commit's arrival range comes from when a table has none of it (METHOD 5.2, 5.5).

Our own writers write `freshness.watermark_us` (the table's t_latest after the commit),
`freshness.arrival_min_us` and `freshness.arrival_max_us` (the range of arrival_ts among
the rows the commit wrote) and, for ingestion, `freshness.landing_checkpoint`. A table
someone else writes has none of them; its ranges come from the declared arrival column's
footers, else from the commit's completion time (an upper bound: approximate).
"""

from __future__ import annotations

META_PREFIX = "freshness."
# Hudi's own columns in every base file; readers of row data drop them.
HOODIE_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
    # A table that honours deletes carries Hudi's delete marker; false on every stored row.
    "_hoodie_is_deleted",
)
DELETED_COLUMN = "_hoodie_is_deleted"
WATERMARK_KEY = "freshness.watermark_us"
ARRIVAL_MIN_KEY = "freshness.arrival_min_us"
ARRIVAL_MAX_KEY = "freshness.arrival_max_us"
CHECKPOINT_KEY = "freshness.landing_checkpoint"
# An ingestion commit's checkpoint before its batch ("" for none): the stale-checkpoint
# fence (hudi/write.py STALE_CHECKPOINT_STRATEGY) compares it with the table's.
CHECKPOINT_BEFORE_KEY = "freshness.checkpoint_before"
# A job's commits also say the index they were written with (Hudi keeps no record of it,
# and a table's files are laid out for one: a bucket index names its files by bucket).
INDEX_KEY = "freshness.index"
ARRIVAL_COLUMN = "arrival_ts"

# Where a commit's arrival range came from, strongest first (see the module docstring).
SOURCE_KEYS = "freshness_keys"
SOURCE_FOOTER = "arrival_column"
SOURCE_COMPLETION = "completion_time"
ARRIVAL_SOURCES = (SOURCE_KEYS, SOURCE_FOOTER, SOURCE_COMPLETION)
APPROXIMATE_SOURCES = frozenset({SOURCE_COMPLETION})
