"""The metadata module without Spark: instant times, what kind of write a commit was, and
the error for a missing table."""

from __future__ import annotations

import pytest

from freshness_pipeline.hudi.commit_keys import SOURCE_COMPLETION, SOURCE_FOOTER, SOURCE_KEYS
from freshness_pipeline.hudi.metadata import (
    ArrivalRange,
    ArrivalRegression,
    HudiTableMetadata,
    TableNotFound,
    arrival_regressions,
)
from freshness_pipeline.hudi.timeline import Commit, WrittenFile, instant_to_us, us_to_instant


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
    # a merge-on-read compaction folds logs into a base file: a rewrite, no arrival
    assert commit("commit", "COMPACT", {}).is_compaction
    assert commit("commit", "COMPACT", {}).is_rewrite
    assert commit("replacecommit", "CLUSTER", {}).is_rewrite
    assert not commit("deltacommit", "UPSERT", {}).is_rewrite


def test_missing_table_says_which(tmp_path):
    with pytest.raises(TableNotFound, match="nowhere"):
        HudiTableMetadata(str(tmp_path / "nowhere"))


def test_a_decreasing_arrival_column_is_found():
    """Footer ranges in completion order: a commit that starts below what earlier commits
    reached is named; touching ranges, our keys and completion times are not compared."""
    ranges = [
        ("1", ArrivalRange(100, 200, SOURCE_FOOTER)),
        ("2", ArrivalRange(200, 300, SOURCE_FOOTER)),  # touches: fine
        ("3", ArrivalRange(None, 50, SOURCE_COMPLETION)),  # another clock
        ("4", ArrivalRange(10, 20, SOURCE_KEYS)),  # ours never decrease
        ("5", ArrivalRange(250, 400, SOURCE_FOOTER)),  # starts below 300
        ("6", ArrivalRange(350, 500, SOURCE_FOOTER)),  # below 400
        ("7", ArrivalRange(500, 600, SOURCE_FOOTER)),
    ]
    assert arrival_regressions(ranges) == [
        ArrivalRegression("5", 250, 300),
        ArrivalRegression("6", 350, 400),
    ]
    assert arrival_regressions(ranges[:3]) == []
    text = ArrivalRegression("5", 250, 300).describe("price_raw", "ingested_at")
    assert "price_raw: commit 5 wrote ingested_at from 1970-01-01" in text


@pytest.mark.parametrize("unit", ["ms", "us", "ns"])
def test_arrival_ranges_are_read_without_pandas(tmp_path, unit: str):
    """A file's range from its footer, and one commit's own rows in a file a copy-on-write
    merge rewrote (it also holds older rows), in epoch micros whatever the file's unit.
    Read in the code server every tick, so neither may make pyarrow import pandas (it does
    for a UTC timestamp's statistics or a Python value in a compute call: a ~60 MiB step in
    a soak's code server)."""
    import subprocess
    import sys

    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "merged.parquet"
    per_ms = {"ms": 1, "us": 1000, "ns": 1_000_000}[unit]
    pq.write_table(
        pa.table(
            {
                "_hoodie_commit_time": ["20261123100000000", "20261123110000000"] * 2,
                "arrival_ts": pa.array(
                    [x * per_ms for x in (5, 70, 9, 40)], pa.timestamp(unit, "UTC")
                ),
            }
        ),
        path,
    )
    probe = (
        "import sys\n"
        "from freshness_pipeline.hudi.metadata import footer_arrival_range as f\n"
        "from freshness_pipeline.hudi.metadata import own_rows_arrival_range as r\n"
        f"print(tuple(f({str(path)!r}, 'arrival_ts')))\n"
        f"print(tuple(r({str(path)!r}, 'arrival_ts', '20261123110000000')))\n"
        f"print(tuple(r({str(path)!r}, 'arrival_ts', '20261123120000000')))\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[:4] == ["(5000, 70000)", "(40000, 70000)", "(None, None)", "False"]
