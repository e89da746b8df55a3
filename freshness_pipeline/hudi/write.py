"""How our writers talk to Hudi: one place for table layout and write options.

Every write carries the `freshness.*` keys into the commit's extra metadata through
Hudi's commit-metadata key prefix, so the data and its watermark land in one commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from freshness_pipeline.hudi.commit_keys import META_PREFIX
from freshness_pipeline.hudi.streamer_checkpoint import STREAMER_CHECKPOINT_KEY


@dataclass(frozen=True)
class TableLayout:
    name: str
    record_key: str
    precombine: str | None
    partition_by: str | None  # None = unpartitioned
    # Raw tables take only new rows per commit: with small-file packing off, an insert
    # writes fresh files instead of rewriting old ones (measured: 6.5 s instead of 9.8 s
    # per 75k-event cycle on 2 cores), and each raw file then holds one commit's arrivals.
    pack_small_files: bool = True


RAW_LAYOUTS = {
    "price_raw": TableLayout("price_raw", "event_id", "arrival_ts", "symbol_prefix", False),
    "trade_raw": TableLayout("trade_raw", "event_id", "arrival_ts", "symbol_prefix", False),
    "company_master": TableLayout("company_master", "symbol", None, None),
    "raw_rejects": TableLayout("raw_rejects", "reject_id", "landed_ts", None),
}


def raw_layout(table: str, packing: bool = False) -> TableLayout:
    """A raw table's layout as ingestion writes it: with `packing` (FRESHNESS_RAW_PACKING),
    Hudi packs each commit's rows into the partition's small files, rewriting them, as in
    the published experiment; otherwise each commit writes files of its own."""
    layout = RAW_LAYOUTS[table]
    return replace(layout, pack_small_files=True) if packing else layout


# Cleaning and archival horizons: a writer's commit cleans file versions older than the
# last CLEAN_RETAINED_COMMITS commits and, once the active timeline holds more than
# ARCHIVE_KEEP_MAX_COMMITS commits, archives it down to ARCHIVE_KEEP_MIN_COMMITS.
CLEAN_RETAINED_COMMITS = 30
ARCHIVE_KEEP_MIN_COMMITS = 100
ARCHIVE_KEEP_MAX_COMMITS = 120

# A clustered raw table is archived by its clustering runs only (clustering_exec.archive_
# timeline, one run at a time per table), not by ingestion: a clustering's file groups each
# read the commit metadata of every instant of the timeline loaded when it started (Hudi
# 1.1 TableSchemaResolver.getTableInternalSchemaFromCommitMetadata), and an ingestion
# commit that archived meanwhile made it fail with "Could not read commit details"
# (2 of 30 clustering runs in a 40-minute soak, docs/RELIABILITY.md). Ingestion keeps a
# far horizon of its own as a backstop, so a table whose clustering stopped (its sensor
# switched off, or failing) still has a bounded timeline.
INGEST_BACKSTOP_KEEP_MIN_COMMITS = 400
INGEST_BACKSTOP_KEEP_MAX_COMMITS = 500


def ingestion_archival_options(clustered: bool) -> dict[str, str]:
    """Archival of an ingestion write: a clustered raw table's commits are archived by its
    clustering runs, so ingestion's own horizon moves out to the backstop."""
    if not clustered:
        return {}
    return {
        "hoodie.keep.min.commits": str(INGEST_BACKSTOP_KEEP_MIN_COMMITS),
        "hoodie.keep.max.commits": str(INGEST_BACKSTOP_KEEP_MAX_COMMITS),
    }


BOOKKEEPING_PARALLELISM = 2
# Hudi 1.1's own values of what SHARED_OPTIONS narrows to BOOKKEEPING_PARALLELISM (0: Hudi
# derives it from the input, one task per file or partition)
HUDI_BOOKKEEPING_DEFAULTS = {
    "hoodie.markers.delete.parallelism": "100",
    "hoodie.finalize.write.parallelism": "200",
    "hoodie.simple.index.parallelism": "0",
    "hoodie.bloom.index.parallelism": "0",
    "hoodie.rollback.parallelism": "100",
    "hoodie.archive.delete.parallelism": "100",
}

# What every writer of a table sets alike, table services (clustering) included: a
# clustering's own clean must keep as many file versions as the writers' cleans do.
SHARED_OPTIONS = {
    # The metadata table roughly doubles commit time on a 2-core machine and a local
    # or HDFS listing is cheap; enable it per deployment for object stores. A clustering
    # without it set would build one, then conflict with a concurrent writer.
    "hoodie.metadata.enable": "false",
    # Hudi sizes each file's footer bloom filter for 60,000 keys by default: 431 KB in
    # every file, even a one-row file of a raw commit, and every reader (Spark, our
    # footer cache, the index lookup) pays for it per file. A dynamic filter that
    # starts at 1,000 keys is 5 KB and still grows with the file.
    "hoodie.index.bloom.num_entries": "1000",
    "hoodie.bloom.index.filter.type": "DYNAMIC_V0",
    # Keep the file versions of the last 30 commits, so a planned file list stays
    # readable while its run waits in the queue; older versions are cleaned.
    "hoodie.clean.automatic": "true",
    "hoodie.clean.commits.retained": str(CLEAN_RETAINED_COMMITS),
    "hoodie.keep.min.commits": str(ARCHIVE_KEEP_MIN_COMMITS),
    "hoodie.keep.max.commits": str(ARCHIVE_KEEP_MAX_COMMITS),
    # One marker file per data file, created before it and never rewritten. Hudi's
    # default for Spark (timeline-server markers) keeps a few MARKERS files that every
    # flush truncates and rewrites whole: a writer killed with -9 mid-flush loses the
    # markers of files it already wrote, its rollback then leaves those files behind, and
    # once archival moves the timeline's start past the failed instant Hudi reads them as
    # committed (chaos run 6: 1,322 price_raw rows twice, from one orphan file).
    "hoodie.write.markers.type": "DIRECT",
    # Hudi spreads each piece of a commit's bookkeeping over one Spark task per partition:
    # listing and deleting the markers, finalizing, reading the keys of each base file for
    # the index. A task ships the table's Hadoop configuration (about a thousand entries,
    # each decompressed on arrival), so on a 26-partition table a commit of a few thousand
    # rows ran 200-600 tasks whose work was a few file listings. Two tasks each (the
    # machine's cores) do the same work.
    **{key: str(BOOKKEEPING_PARALLELISM) for key in HUDI_BOOKKEEPING_DEFAULTS},
}


def write_options(
    layout: TableLayout,
    operation: str,
    commit_metadata: Mapping[str, object] | None = None,
    parallelism: int = 2,
) -> dict[str, str]:
    options = {
        "hoodie.table.name": layout.name,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.operation": operation,
        "hoodie.datasource.write.recordkey.field": layout.record_key,
        "hoodie.datasource.write.hive_style_partitioning": "false",
        "hoodie.table.timeline.timezone": "UTC",
        "hoodie.datasource.write.commitmeta.key.prefix": META_PREFIX,
        **SHARED_OPTIONS,
        "hoodie.insert.shuffle.parallelism": str(parallelism),
        "hoodie.upsert.shuffle.parallelism": str(parallelism),
        "hoodie.bulkinsert.shuffle.parallelism": str(parallelism),
    }
    if not layout.pack_small_files:
        options["hoodie.parquet.small.file.limit"] = "0"
    if operation == "bulk_insert":
        # all of a partition's rows reach one Spark task: one new file per partition a
        # write, as an insert writes (Hudi's default sort leaves one per input partition)
        options["hoodie.bulkinsert.sort.mode"] = "PARTITION_PATH_REPARTITION"
    if layout.precombine:
        options["hoodie.datasource.write.precombine.field"] = layout.precombine
    if layout.partition_by:
        options["hoodie.datasource.write.partitionpath.field"] = layout.partition_by
        options["hoodie.datasource.write.keygenerator.class"] = (
            "org.apache.hudi.keygen.SimpleKeyGenerator"
        )
    else:
        options["hoodie.datasource.write.partitionpath.field"] = ""
        options["hoodie.datasource.write.keygenerator.class"] = (
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
        )
    for key, value in (commit_metadata or {}).items():
        if not key.startswith(META_PREFIX) and key != STREAMER_CHECKPOINT_KEY:
            raise ValueError(
                f"commit metadata key {key!r} must start with {META_PREFIX!r} or be "
                f"{STREAMER_CHECKPOINT_KEY!r}"
            )
        options[key] = str(value)
    if STREAMER_CHECKPOINT_KEY in (commit_metadata or {}):
        # Hudi's Spark writer copies into the commit's extra metadata only the options whose
        # key starts with the prefix, and Streamer's key shares no prefix with ours: the
        # empty prefix copies every option of this write (its Hudi config, a few KB) along
        # with the checkpoint, in the same commit. Readers look up their own keys only.
        options["hoodie.datasource.write.commitmeta.key.prefix"] = ""
    return options


# A job run commits only if its target's watermark is still the t_done it planned from
# (freshness_pipeline/jvm/WatermarkConflictResolutionStrategy.java). Hudi runs the check
# under the table's write lock, between writing the files and completing the commit, so
# two writers cannot both pass it; the loser's write is rolled back and its error names
# STALE_PLAN_MARKER.
STALE_PLAN_STRATEGY = "io.freshness.hudi.WatermarkConflictResolutionStrategy"
STALE_PLAN_MARKER = "STALE_PLAN"
# An ingestion commit commits only if its table's checkpoint is still the one it read its
# batch from (jvm/CheckpointConflictResolutionStrategy.java), the same way: a batch read
# twice (a killed ingestor whose write a shared Spark server finishes, and its restart)
# commits once; the other's error names STALE_CHECKPOINT_MARKER.
STALE_CHECKPOINT_STRATEGY = "io.freshness.hudi.CheckpointConflictResolutionStrategy"
STALE_CHECKPOINT_MARKER = "STALE_CHECKPOINT"


def concurrent_writer_options(
    lock_path: str | None = None, guard: bool = True, checkpoint_fence: bool = False
) -> dict[str, str]:
    """Optimistic concurrency with a lock provider, for every writer of a table that more
    than one process writes: a derived table (its job runs, a clustering) and a raw table
    (ingestion and its clustering). `guard` adds our stale-plan check (job runs),
    `checkpoint_fence` the stale-checkpoint check (ingestion); with neither, Hudi's own
    file-level check decides (a clustering). Both keep Hudi's check too (ingestion's
    inserts write new file groups only, so they never conflict with a clustering of old
    ones).

    The provider takes the lock by creating a file, which must be atomic on its file
    system: Hudi refuses s3a for it. `lock_path` (lakehouse.Lakehouse.lock_path: one folder
    per table, on a file system every writer shares) moves the lock file off the table;
    None keeps it in the table's own `.hoodie` folder (a local lakehouse)."""
    options = {
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": (
            "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
        ),
        # The lock is held for a commit's last seconds; a holder killed with -9 must not
        # block the table for ever, so its lock file expires after a minute.
        "hoodie.write.lock.filesystem.expire": "1",
        # Required by optimistic concurrency: a failed write is rolled back by the cleaner
        # once its heartbeat has expired, not by the next writer (which may be concurrent).
        "hoodie.clean.failed.writes.policy": "LAZY",
    }
    if guard and checkpoint_fence:
        raise ValueError("a commit is either a job run's (guard) or ingestion's (fence)")
    if guard:
        options["hoodie.write.lock.conflict.resolution.strategy"] = STALE_PLAN_STRATEGY
    if checkpoint_fence:
        options["hoodie.write.lock.conflict.resolution.strategy"] = STALE_CHECKPOINT_STRATEGY
    if lock_path is not None:
        # the scheme is explicit: a bare path would resolve against a cluster's fs.defaultFS
        options["hoodie.write.lock.filesystem.path"] = (
            lock_path if "://" in lock_path else f"file://{lock_path}"
        )
    return options


def guarded_writer_options(lock_path: str | None = None) -> dict[str, str]:
    """`concurrent_writer_options` with the stale-plan guard: every job run's commit."""
    return concurrent_writer_options(lock_path, guard=True)
