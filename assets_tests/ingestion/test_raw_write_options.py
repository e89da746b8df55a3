"""The options of an ingestion commit (pure): which writer archives a raw table's timeline,
which commits clean, and the fence on the checkpoint.

A clustering's file groups read the commit metadata of every instant of the timeline it
loaded at its start; an ingestion commit that archived meanwhile failed it (soak of
2026-11-25, docs/RELIABILITY.md). So a clustered raw table is archived by its clustering
runs, and ingestion keeps only a far backstop horizon."""

from __future__ import annotations

import pytest

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.write import (
    ARCHIVE_KEEP_MAX_COMMITS,
    ARCHIVE_KEEP_MIN_COMMITS,
    CLEAN_RETAINED_COMMITS,
    INGEST_BACKSTOP_KEEP_MAX_COMMITS,
    INGEST_BACKSTOP_KEEP_MIN_COMMITS,
)
from freshness_pipeline.ingestion.ingest import raw_write_options

METADATA = {"freshness.watermark_us": 1}


def test_a_clustered_raw_table_leaves_archival_to_its_clustering():
    settings = load_settings({"FRESHNESS_CLUSTERING_TABLES": "price_raw"})
    clustered = raw_write_options(settings, "price_raw", METADATA)
    assert clustered["hoodie.keep.min.commits"] == str(INGEST_BACKSTOP_KEEP_MIN_COMMITS)
    assert clustered["hoodie.keep.max.commits"] == str(INGEST_BACKSTOP_KEEP_MAX_COMMITS)
    # The backstop lies beyond the horizon the clustering archives to, so while clustering
    # runs, ingestion never archives; and the cleaner's horizon is the same for both.
    assert INGEST_BACKSTOP_KEEP_MIN_COMMITS > ARCHIVE_KEEP_MAX_COMMITS
    assert clustered["hoodie.clean.commits.retained"] == str(CLEAN_RETAINED_COMMITS)

    not_clustered = raw_write_options(settings, "trade_raw", METADATA)
    assert not_clustered["hoodie.keep.min.commits"] == str(ARCHIVE_KEEP_MIN_COMMITS)
    assert not_clustered["hoodie.keep.max.commits"] == str(ARCHIVE_KEEP_MAX_COMMITS)


def test_without_clustering_ingestion_archives_as_every_writer_does():
    settings = load_settings({"FRESHNESS_CLUSTERING_TABLES": "none"})
    for table in ("price_raw", "trade_raw"):
        options = raw_write_options(settings, table, METADATA)
        assert options["hoodie.keep.max.commits"] == str(ARCHIVE_KEEP_MAX_COMMITS)
        assert options["hoodie.allow.empty.commit"] == "true"
        assert options["hoodie.write.concurrency.mode"] == "optimistic_concurrency_control"


def test_a_commit_between_cleans_leaves_cleaning_to_a_later_one():
    settings = load_settings({"FRESHNESS_CLUSTERING_TABLES": "none"})
    cleaning = raw_write_options(settings, "price_raw", METADATA)
    assert cleaning["hoodie.clean.automatic"] == "true"
    between = raw_write_options(settings, "price_raw", METADATA, clean=False)
    assert between["hoodie.clean.automatic"] == "false"
    # the same horizon either way: a later clean keeps as many file versions
    assert between["hoodie.clean.commits.retained"] == cleaning["hoodie.clean.commits.retained"]
    assert {k: v for k, v in between.items() if k != "hoodie.clean.automatic"} == {
        k: v for k, v in cleaning.items() if k != "hoodie.clean.automatic"
    }


def test_an_ingestion_commit_is_fenced_by_its_checkpoint():
    from freshness_pipeline.hudi.write import (
        STALE_CHECKPOINT_STRATEGY,
        STALE_PLAN_STRATEGY,
        concurrent_writer_options,
    )

    settings = load_settings({"FRESHNESS_CLUSTERING_TABLES": "none"})
    options = raw_write_options(settings, "trade_raw", METADATA)
    assert options["hoodie.write.lock.conflict.resolution.strategy"] == STALE_CHECKPOINT_STRATEGY
    with pytest.raises(ValueError, match="either"):
        concurrent_writer_options(None, guard=True, checkpoint_fence=True)
    assert concurrent_writer_options(None)["hoodie.write.lock.conflict.resolution.strategy"] == (
        STALE_PLAN_STRATEGY
    )


def test_a_bulk_insert_commit_writes_new_files_one_per_partition():
    settings = load_settings({"FRESHNESS_CLUSTERING_TABLES": "none"})  # the default
    bulk = raw_write_options(settings, "price_raw", METADATA)
    assert bulk["hoodie.datasource.write.operation"] == "bulk_insert"
    # all of a partition's rows reach one Spark task: one new file per partition a commit
    assert bulk["hoodie.bulkinsert.sort.mode"] == "PARTITION_PATH_REPARTITION"
    assert bulk["hoodie.parquet.small.file.limit"] == "0"
    # the fence and the empty commit as for an insert
    insert = raw_write_options(
        load_settings({"FRESHNESS_INGEST_WRITE": "insert", "FRESHNESS_CLUSTERING_TABLES": "none"}),
        "price_raw",
        METADATA,
    )
    assert insert["hoodie.datasource.write.operation"] == "insert"
    assert "hoodie.bulkinsert.sort.mode" not in insert
    same = {k for k in insert if k != "hoodie.datasource.write.operation"}
    assert {k: bulk[k] for k in same} == {k: insert[k] for k in same}


def test_packing_small_files_keeps_the_insert_that_rewrites_them():
    settings = load_settings(
        {
            "FRESHNESS_RAW_PACKING": "true",
            "FRESHNESS_CLUSTERING_TABLES": "none",
        }
    )
    packed = raw_write_options(settings, "trade_raw", METADATA)
    assert packed["hoodie.datasource.write.operation"] == "insert"
    assert "hoodie.bulkinsert.sort.mode" not in packed
    assert "hoodie.parquet.small.file.limit" not in packed
    with pytest.raises(ValueError, match="FRESHNESS_INGEST_WRITE"):
        load_settings({"FRESHNESS_INGEST_WRITE": "upsert"})
