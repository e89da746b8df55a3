"""A write killed in a table's first commit, not yet rolled back (Hudi rolls failed writes
back lazily under optimistic concurrency): Hudi's Spark reader counts its files as
committed ("before the timeline starts"); the runs, hudi-rs and the batch oracle do not.
Found by the short chaos test (a killed first ingestion commit's events counted twice by
the batch oracle alone)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from freshness_pipeline.execution.batch_oracle import read_table
from freshness_pipeline.hudi.metadata import HudiTableMetadata

pytestmark = pytest.mark.spark

OPTIONS = {
    "hoodie.table.name": "killed_first",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "",
    "hoodie.datasource.write.precombine.field": "id",
    "hoodie.datasource.write.keygenerator.class": (
        "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
    ),
    "hoodie.metadata.enable": "false",
}


def _fake_failed_first_write(table: Path) -> str:
    """A copy of a committed base file under a new file group and an instant older than
    every completed one, with that instant requested and inflight: what a killed first
    commit leaves once a later write has completed."""
    timeline = table / ".hoodie" / "timeline"
    first = sorted(p.name for p in timeline.glob("*.commit"))[0].split("_")[0]
    failed = str(int(first) - 1000)
    base = sorted(table.glob("*.parquet"))[0]
    shutil.copy(base, table / f"aaaaaaaa-1111-2222-3333-444444444444-0_0-1-1_{failed}.parquet")
    for suffix in ("commit.requested", "inflight"):
        shutil.copy(timeline / f"{first}.{suffix}", timeline / f"{failed}.{suffix}")
    return failed


def test_the_oracle_reads_no_row_of_a_failed_first_write(spark, tmp_path):
    uri = str(tmp_path / "t")
    for rows in ([(1, "a"), (2, "b")], [(3, "c")]):
        frame = spark.createDataFrame(rows, "id int, v string")
        frame.write.format("hudi").options(**OPTIONS).mode("append").save(uri)
    failed = _fake_failed_first_write(tmp_path / "t")
    meta = HudiTableMetadata(uri)
    assert meta.uncompleted_instants() == [failed]
    assert spark.read.format("hudi").load(uri).count() > 3  # Hudi's reader: its rows too
    assert sorted(r.id for r in read_table(spark, uri, meta.uncompleted_instants()).collect()) == [
        1,
        2,
        3,
    ]
    # the runs' view of the table: completed commits only
    assert {p.slice.base_instant for p in meta.pending_files(None)} <= {
        c.instant for c in meta.commits()
    }
