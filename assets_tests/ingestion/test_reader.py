"""The read-ahead reader gives every commit exactly the rows a plain read would give."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from freshness_pipeline.ingestion.reader import LandedBatchReader, ReadBatch
from freshness_pipeline.stream.landing import write_landed

SYMBOLS = frozenset({"AAPL", "MSFT"})
T0 = 1_767_364_200_000_000  # 2026-01-02 14:30 UTC, epoch microseconds


def price_lines(seq: int, count: int = 3) -> list[str]:
    lines = [
        json.dumps(
            {
                "symbol": "AAPL",
                "side": "B",
                "price": 100.0 + seq,
                "size": 10 + n,
                "event_ts": T0 + 1_000 + seq,
                "arrival_ts": T0 + 2_000 + seq,
            }
        )
        for n in range(count)
    ]
    return lines + ['{"symbol": "NOPE"']  # one bad record per file, to carry rejects


def land(landing: Path, seqs: range) -> None:
    for seq in seqs:
        write_landed(landing, "price", seq, T0 + 5_000 + seq, price_lines(seq))


def plain_read(landing: Path, after_seq: int, max_files: int = 10) -> ReadBatch:
    return LandedBatchReader(landing, SYMBOLS, max_files).read("price", after_seq)


def same(a: ReadBatch, b: ReadBatch) -> bool:
    return (
        a.landed == b.landed
        and a.batch.rows == b.batch.rows
        and [(r.landing_file, r.line_no) for r in a.batch.rejects]
        == [(r.landing_file, r.line_no) for r in b.batch.rejects]
    )


def test_plain_read_takes_the_first_files_after_the_checkpoint(tmp_path: Path):
    land(tmp_path, range(6))
    read = plain_read(tmp_path, after_seq=1, max_files=3)
    assert [f.seq for f in read.landed] == [2, 3, 4]
    assert read.batch.row_count == 9 and len(read.batch.rejects) == 3
    assert read.batch.rows["event_id"][0] == "000000000002:0"
    assert read.batch.rows["price"][::3] == [102.0, 103.0, 104.0]


def test_read_ahead_is_reused_and_topped_up_with_files_landed_since(tmp_path: Path):
    land(tmp_path, range(3))
    reader = LandedBatchReader(tmp_path, SYMBOLS, max_files=10)
    reader.read_ahead("price", lambda: -1)
    reader._ahead["price"].result()  # the head start has finished reading files 0-2
    land(tmp_path, range(3, 5))
    read = reader.read("price", after_seq=-1)
    assert reader.reused_files["price"] == 3
    assert [f.seq for f in read.landed] == [0, 1, 2, 3, 4]
    assert same(read, plain_read(tmp_path, -1))
    reader.close()


def test_read_ahead_from_an_older_checkpoint_is_discarded(tmp_path: Path):
    land(tmp_path, range(4))
    reader = LandedBatchReader(tmp_path, SYMBOLS, max_files=10)
    reader.read_ahead("price", lambda: -1)
    read = reader.read("price", after_seq=1)  # a commit moved the checkpoint since
    assert reader.reused_files["price"] == 0
    assert same(read, plain_read(tmp_path, 1))
    reader.close()


def test_read_ahead_whose_files_changed_is_discarded(tmp_path: Path):
    land(tmp_path, range(3))
    reader = LandedBatchReader(tmp_path, SYMBOLS, max_files=10)
    reader.read_ahead("price", lambda: -1)
    reader._ahead["price"].result()
    next(tmp_path.joinpath("price").glob("000000000000-*.jsonl")).unlink()
    read = reader.read("price", after_seq=-1)
    assert reader.reused_files["price"] == 0
    assert [f.seq for f in read.landed] == [1, 2]
    assert same(read, plain_read(tmp_path, -1))
    reader.close()


def test_failed_read_ahead_falls_back_to_a_plain_read(tmp_path: Path):
    land(tmp_path, range(2))
    reader = LandedBatchReader(tmp_path, SYMBOLS, max_files=10)

    def broken_checkpoint() -> int:
        raise OSError("table unreadable")

    reader.read_ahead("price", broken_checkpoint)
    read = reader.read("price", after_seq=-1)
    assert reader.reused_files["price"] == 0
    assert same(read, plain_read(tmp_path, -1))
    reader.close()


def test_read_ahead_runs_beside_the_caller(tmp_path: Path):
    """The head start must not block the thread that commits: it runs in its own."""
    land(tmp_path, range(2))
    reader = LandedBatchReader(tmp_path, SYMBOLS, max_files=10)
    release = threading.Event()
    reader.read_ahead("price", lambda: -1 if release.wait(timeout=10) else 0)
    # Returned at once although the checkpoint is still waited for in the background.
    assert not reader._ahead["price"].done()
    release.set()
    assert reader.read("price", after_seq=-1).batch.row_count == 6
    assert reader.reused_files["price"] == 2
    reader.close()


def test_empty_landing_gives_an_empty_batch_with_the_stream_columns(tmp_path: Path):
    read = plain_read(tmp_path, -1)
    assert read.landed == () and read.batch.row_count == 0
    assert list(read.batch.rows) == list(plain_batch_columns(tmp_path))


def plain_batch_columns(tmp_path: Path) -> list[str]:
    land(tmp_path / "other", range(1))
    return list(plain_read(tmp_path / "other", -1).batch.rows)


@pytest.mark.parametrize("max_files", [1, 2, 5])
def test_read_ahead_respects_max_files(tmp_path: Path, max_files: int):
    land(tmp_path, range(6))
    reader = LandedBatchReader(tmp_path, SYMBOLS, max_files=max_files)
    reader.read_ahead("price", lambda: 0)
    read = reader.read("price", after_seq=0)
    assert [f.seq for f in read.landed] == list(range(1, 1 + max_files))
    assert reader.reused_files["price"] == max_files
    assert same(read, plain_read(tmp_path, 0, max_files))
    reader.close()
