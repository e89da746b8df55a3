"""Which writer archives a raw table's timeline (pure: the options of an ingestion commit).

A clustering's file groups read the commit metadata of every instant of the timeline it
loaded at its start; an ingestion commit that archived meanwhile failed it (soak of
2026-11-25, docs/RELIABILITY.md). So a clustered raw table is archived by its clustering
runs, and ingestion keeps only a far backstop horizon."""

from __future__ import annotations

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
