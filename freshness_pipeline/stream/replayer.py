"""Replays the stream into the landing area (or Kafka) at event-time pacing, stamping
arrival_ts.

Events are due at `start_wall + (event_ts - first_event_ts) / speedup`. Every flush
interval the replayer takes the events that are due, stamps each with `arrival_ts`
(UTC microseconds, the moment it is enqueued) and lands one file per stream, or produces
each event to its stream's Kafka topic (stream/kafka_sink.py) with the stamp as the
message timestamp. A share of events can be corrupted on purpose (seeded) to exercise
quarantine; the same seed corrupts the same events whichever the sink.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from freshness_pipeline.catalog.tables import STREAMS
from freshness_pipeline.scheduling.units import US_PER_S
from freshness_pipeline.stream.generator import EventBatch, MarketEventGenerator, StreamConfig
from freshness_pipeline.stream.landing import next_seq, write_landed

# The reject reasons a corrupted text record can show; the byte-level ones (bad_encoding,
# oversized) and duplicate_id come from the fuzzer (ingestion/fuzz.py) instead.
MALFORMED_KINDS = (
    "bad_json",
    "missing_field",
    "wrong_type",
    "negative_value",
    "unknown_symbol",
    "extra_field",
    "non_finite",
    "out_of_range",
)


@dataclass(frozen=True)
class ReplayConfig:
    speedup: float = 1.0
    flush_interval_s: float = 1.0
    malformed_rate: float = 0.0
    malformed_seed: int = 1
    duration_s: float | None = None  # event-time seconds to replay; None = forever

    def __post_init__(self) -> None:
        if self.speedup <= 0:
            raise ValueError(f"speedup must be positive, got {self.speedup}")
        if self.flush_interval_s <= 0:
            raise ValueError(f"flush_interval_s must be positive, got {self.flush_interval_s}")
        if not 0.0 <= self.malformed_rate < 1.0:
            raise ValueError(f"malformed_rate must be in [0, 1), got {self.malformed_rate}")


class VirtualClock:
    """A wall clock that sleeping advances: lands stream time instantly (tests, benchmarks,
    backfills) while arrival stamps still follow event-time pacing."""

    def __init__(self, start: float) -> None:
        self.now = start
        self.slept = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def land_instantly(
    batches: Iterator[EventBatch],
    landing_dir: Path | RecordSink,
    seconds: float,
    clock: VirtualClock,
    malformed_rate: float = 0.0,
) -> dict[str, int]:
    """Lands `seconds` of event time at once, stamping arrivals from the virtual clock."""
    config = ReplayConfig(duration_s=seconds, malformed_rate=malformed_rate)
    return replay(batches, landing_dir, config, clock=clock, sleep=clock.sleep)


def generated_batches(config: StreamConfig) -> Iterator[EventBatch]:
    return iter(MarketEventGenerator(config))


def record_stream(config: StreamConfig, duration_s: int, out: Path) -> int:
    """Writes `duration_s` seconds of the generated stream to a gzipped JSON-lines file."""
    written = 0
    with gzip.open(out, "wt", encoding="utf-8") as sink:
        generator = MarketEventGenerator(config)
        for _ in range(duration_s):
            batch = generator.next_batch()
            for stream, events in (("price", batch.prices), ("trade", batch.trades)):
                for event in events:
                    sink.write(json.dumps({"stream": stream, **event}, separators=(",", ":")))
                    sink.write("\n")
                    written += 1
    return written


def recorded_batches(path: Path) -> Iterator[EventBatch]:
    """Reads a recorded stream file back as one batch per second of event time."""
    opener = gzip.open if path.suffix == ".gz" else open
    current: EventBatch | None = None
    with opener(path, "rt", encoding="utf-8") as source:
        for line in source:
            record = json.loads(line)
            stream = record.pop("stream")
            second = int(record["event_ts"]) // US_PER_S
            if current is None or second != current.second:
                if current is not None:
                    yield current
                current = EventBatch(second=second, prices=[], trades=[])
            (current.prices if stream == "price" else current.trades).append(record)
    if current is not None:
        yield current


def on_wall_clock(batches: Iterator[EventBatch], start_s: int) -> Iterator[EventBatch]:
    """The same events with event time moved by whole seconds so that the first second is
    `start_s`: a recorded stream replayed as live data would arrive, its event time near
    the wall clock (what hourly partitions by the clock, as in the plain Dagster peer,
    need). Whole seconds keep every event in the same second as its neighbours."""
    offset_s: int | None = None
    for batch in batches:
        if offset_s is None:
            offset_s = start_s - batch.second
        shift_us = offset_s * US_PER_S
        yield EventBatch(
            second=batch.second + offset_s,
            prices=[{**e, "event_ts": int(e["event_ts"]) + shift_us} for e in batch.prices],
            trades=[{**e, "event_ts": int(e["event_ts"]) + shift_us} for e in batch.trades],
        )


@dataclass
class Corruptor:
    """Turns a seeded share of events into each kind of malformed record."""

    rate: float
    seed: int
    _rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self._rng = np.random.default_rng(self.seed)

    def serialize(self, event: dict[str, Any]) -> str:
        if self.rate == 0.0 or self._rng.random() >= self.rate:
            return json.dumps(event, separators=(",", ":"))
        kind = MALFORMED_KINDS[int(self._rng.integers(len(MALFORMED_KINDS)))]
        bad = dict(event)
        if kind == "bad_json":
            return json.dumps(bad, separators=(",", ":"))[:-7]
        if kind == "missing_field":
            bad.pop("price")
        elif kind == "wrong_type":
            bad["size"] = "lots"
        elif kind == "negative_value":
            bad["price"] = -abs(bad["price"])
        elif kind == "extra_field":
            bad["venue"] = "XNYS"
        elif kind == "non_finite":
            bad["price"] = float("nan")  # json.dumps writes NaN, which JSON does not allow
        elif kind == "out_of_range":
            bad["size"] = 10**12
        else:
            bad["symbol"] = "ZZZZZ9"
        return json.dumps(bad, separators=(",", ":"))


class RecordSink(Protocol):
    """Where the replayer puts one flush of a stream's events."""

    def write(
        self, stream: str, arrival_us: int, events: list[dict[str, Any]], corruptor: Corruptor
    ) -> int:
        """Writes `events` (serialized through `corruptor`); returns how many."""
        ...

    def close(self) -> None: ...


class LandingSink:
    """One landed JSON-lines file per stream and flush, each record with its arrival_ts."""

    def __init__(self, landing_dir: Path) -> None:
        self.landing_dir = landing_dir
        self.seqs = {stream: next_seq(landing_dir, stream) for stream in STREAMS}

    def write(
        self, stream: str, arrival_us: int, events: list[dict[str, Any]], corruptor: Corruptor
    ) -> int:
        lines = [corruptor.serialize({**event, "arrival_ts": arrival_us}) for event in events]
        write_landed(self.landing_dir, stream, self.seqs[stream], arrival_us, lines)
        self.seqs[stream] += 1
        return len(lines)

    def close(self) -> None:
        pass


def replay(
    batches: Iterator[EventBatch],
    landing_dir: Path | RecordSink,
    config: ReplayConfig,
    *,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    should_stop: Callable[[], bool] = lambda: False,
) -> dict[str, int]:
    """Lands batches at event-time pacing until the stream, the duration or `should_stop` ends.

    Returns the number of records landed per stream.
    """
    corruptor = Corruptor(config.malformed_rate, config.malformed_seed)
    sink = LandingSink(landing_dir) if isinstance(landing_dir, Path) else landing_dir
    landed = dict.fromkeys(STREAMS, 0)
    pending: dict[str, list[dict[str, Any]]] = {s: [] for s in STREAMS}
    start_wall = clock()
    first_event_s: int | None = None
    next_flush = start_wall + config.flush_interval_s
    for batch in batches:
        if first_event_s is None:
            first_event_s = batch.second
        elapsed_event_s = batch.second - first_event_s
        if config.duration_s is not None and elapsed_event_s >= config.duration_s:
            break
        # Approximation: a second of event time is due as a whole once it has elapsed.
        due_wall = start_wall + (elapsed_event_s + 1) / config.speedup
        while (now := clock()) < due_wall:
            if now >= next_flush:
                _flush(pending, sink, landed, corruptor, clock)
                next_flush = now + config.flush_interval_s
            sleep(max(0.0, min(next_flush, due_wall) - now))
            if should_stop():
                break
        pending["price"].extend(batch.prices)
        pending["trade"].extend(batch.trades)
        if clock() >= next_flush:
            _flush(pending, sink, landed, corruptor, clock)
            next_flush = clock() + config.flush_interval_s
        if should_stop():
            break
    _flush(pending, sink, landed, corruptor, clock)
    sink.close()
    return landed


def _flush(
    pending: dict[str, list[dict[str, Any]]],
    sink: RecordSink,
    landed: dict[str, int],
    corruptor: Corruptor,
    clock: Callable[[], float],
) -> None:
    arrival_us = int(clock() * US_PER_S)
    for stream, events in pending.items():
        if not events:
            continue
        landed[stream] += sink.write(stream, arrival_us, events, corruptor)
        events.clear()
