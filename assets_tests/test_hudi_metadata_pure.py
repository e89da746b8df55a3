"""The metadata module without Spark: instant times, what kind of write a commit was, and
the error for a missing table."""

from __future__ import annotations

import pytest

from freshness_pipeline.hudi_metadata import (
    Commit,
    HudiTableMetadata,
    TableNotFound,
    WrittenFile,
    instant_to_us,
    us_to_instant,
)


def test_instant_times_and_write_kinds():
    """Completion instants parse to micros and back; a log write and a clustering are
    told apart from the commit metadata alone."""
    us = instant_to_us("20261123144739244")
    assert us_to_instant(us) == "20261123144739244"
    assert us % 1000 == 0 and instant_to_us("20261123144739245") - us == 1000
    log = WrittenFile("2", "f-0", "2/.f-0_20261123144848488.log.1_2-18-54", 1, 1, 1, 0, "")
    base = WrittenFile("2", "f-0", "2/f-0_2-3-14_20261123144843094.parquet", 1, 1, 1, 0, "")
    assert log.is_log and not base.is_log

    def commit(action: str, operation: str, extra: dict[str, str]) -> Commit:
        return Commit("1", "2", action, operation, (base,), {}, extra)

    assert commit("replacecommit", "CLUSTER", {}).is_clustering
    assert not commit("replacecommit", "INSERT_OVERWRITE", {}).is_clustering
    assert not commit("commit", "UPSERT", {}).is_clustering


def test_missing_table_says_which(tmp_path):
    with pytest.raises(TableNotFound, match="nowhere"):
        HudiTableMetadata(str(tmp_path / "nowhere"))
