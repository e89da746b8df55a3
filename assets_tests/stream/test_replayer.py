from __future__ import annotations

import json
from pathlib import Path

import pytest

from freshness_pipeline.ingestion.validate import REJECT_REASONS, validate_record
from freshness_pipeline.stream.generator import StreamConfig
from freshness_pipeline.stream.landing import list_landed, remove_ingested
from freshness_pipeline.stream.replayer import (
    MALFORMED_KINDS,
    ReplayConfig,
    VirtualClock,
    generated_batches,
    record_stream,
    recorded_batches,
    replay,
)
from freshness_pipeline.stream.universe import company_universe


def FakeClock() -> VirtualClock:  # noqa: N802 - reads as the clock it makes
    return VirtualClock(1_800_000_000.0)


def read_landed(landing: Path, stream: str) -> list[str]:
    return [line for f in list_landed(landing, stream) for line in f.path.read_text().splitlines()]


def test_event_time_pacing_and_arrival_stamps(tmp_path: Path):
    clock = FakeClock()
    config = ReplayConfig(speedup=2.0, flush_interval_s=1.0, duration_s=10)
    landed = replay(
        generated_batches(StreamConfig(rate=200)), tmp_path, config, clock=clock, sleep=clock.sleep
    )
    # 10 s of event time at 2x takes 5 s of wall time
    assert clock.slept == pytest.approx(5.0, abs=0.6)
    files = list_landed(tmp_path, "price")
    assert [f.seq for f in files] == list(range(len(files)))
    assert len(files) >= 4
    lines = [json.loads(x) for x in read_landed(tmp_path, "price")]
    assert len(lines) == landed["price"]
    arrivals = [x["arrival_ts"] for x in lines]
    assert arrivals == sorted(arrivals)
    assert arrivals[0] >= 1_800_000_000 * 1_000_000
    # arrival is stamped at enqueue: every event arrives after its file's previous one
    assert all(f.landed_us > 0 for f in files)


def test_sequence_continues_after_ingestion_deleted_files(tmp_path: Path):
    clock = FakeClock()
    config = ReplayConfig(speedup=100.0, duration_s=3)
    replay(
        generated_batches(StreamConfig(rate=100)), tmp_path, config, clock=clock, sleep=clock.sleep
    )
    last = list_landed(tmp_path, "trade")[-1].seq
    remove_ingested(tmp_path, "trade", last)
    assert list_landed(tmp_path, "trade") == []
    replay(
        generated_batches(StreamConfig(rate=100)), tmp_path, config, clock=clock, sleep=clock.sleep
    )
    assert list_landed(tmp_path, "trade")[0].seq == last + 1


def test_malformed_injection_covers_every_kind(tmp_path: Path):
    clock = FakeClock()
    config = ReplayConfig(speedup=1000.0, duration_s=5, malformed_rate=0.05)
    replay(
        generated_batches(StreamConfig(rate=400)), tmp_path, config, clock=clock, sleep=clock.sleep
    )
    symbols = {c.symbol for c in company_universe()}
    reasons = set()
    total = 0
    for stream in ("price", "trade"):
        for line in read_landed(tmp_path, stream):
            total += 1
            record, reason = validate_record(stream, line, symbols)
            if record is None:
                reasons.add(reason.split(":")[0])
    assert reasons == set(MALFORMED_KINDS) and reasons <= set(REJECT_REASONS)


def test_recorded_stream_replays_identically(tmp_path: Path):
    config = StreamConfig(seed=11, rate=300)
    out = tmp_path / "stream.jsonl.gz"
    count = record_stream(config, 4, out)
    from_file = list(recorded_batches(out))
    generated = []
    gen = generated_batches(config)
    for _ in range(4):
        generated.append(next(gen))
    assert sum(len(b.prices) + len(b.trades) for b in from_file) == count
    assert [b.prices for b in from_file] == [b.prices for b in generated]
    assert [b.trades for b in from_file] == [b.trades for b in generated]


@pytest.mark.parametrize("bad", [{"speedup": 0}, {"flush_interval_s": -1}, {"malformed_rate": 1.0}])
def test_bad_replay_config_refused(bad):
    with pytest.raises(ValueError):
        ReplayConfig(**bad)


def test_a_stream_on_the_wall_clock_moves_event_time_by_whole_seconds():
    from freshness_pipeline.stream.replayer import on_wall_clock

    config = StreamConfig(seed=4, rate=50, universe_size=20)
    original = [b for _, b in zip(range(3), generated_batches(config), strict=False)]
    moved = list(on_wall_clock(iter(original), 1_800_000_123))
    assert [b.second for b in moved] == [1_800_000_123 + i for i in range(3)]
    offset_us = (1_800_000_123 - original[0].second) * 1_000_000
    for before, after in zip(original, moved, strict=True):
        for old, new in ((before.prices, after.prices), (before.trades, after.trades)):
            assert [e["event_ts"] - offset_us for e in new] == [e["event_ts"] for e in old]
            assert [{**e, "event_ts": 0} for e in new] == [{**e, "event_ts": 0} for e in old]
