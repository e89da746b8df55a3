"""Parsing and validation of landed stream records (pure Python, no Spark).

A record either becomes a typed row or a `Reject` with a reason; nothing is dropped
silently and one bad record never stops the batch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Set
from dataclasses import dataclass, field
from typing import Any

# (field, accepted python types) per stream; bool is excluded explicitly below.
_INT = (int,)
_NUM = (int, float)
SCHEMAS: dict[str, tuple[tuple[str, tuple[type, ...]], ...]] = {
    "price": (
        ("symbol", (str,)),
        ("side", (str,)),
        ("price", _NUM),
        ("size", _INT),
        ("event_ts", _INT),
        ("arrival_ts", _INT),
    ),
    "trade": (
        ("symbol", (str,)),
        ("price", _NUM),
        ("size", _INT),
        ("trade_id", _INT),
        ("event_ts", _INT),
        ("arrival_ts", _INT),
    ),
}
_POSITIVE = ("price", "size", "event_ts", "arrival_ts")
# Bounds that keep every value exact downstream: prices become DECIMAL(18,2) (a larger one
# would turn into a NULL there), sizes are summed as 64-bit integers.
MAX_PRICE = 1e9
MAX_SIZE = 1_000_000_000
# Timestamps (epoch microseconds): nothing before 2000 or after 2100, and no arrival later
# than an hour past the moment the file landed.
MIN_TS_US = 946_684_800_000_000
MAX_TS_US = 4_102_444_800_000_000
ARRIVAL_SLACK_US = 3_600_000_000
MAX_LINE_BYTES = 64 * 1024  # a record is ~150 bytes; a longer line is not one
RAW_LINE_KEEP = 2048  # how much of a rejected line raw_rejects keeps


@dataclass(frozen=True)
class Reject:
    stream: str
    landing_file: str
    line_no: int
    reason: str  # one of REJECT_REASONS
    detail: str
    raw_line: str
    landed_us: int
    # Where a Kafka message came from (None for a landed line).
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None

    @property
    def reject_id(self) -> str:
        # The landing position (or the Kafka topic, partition and offset) identifies a
        # record across retries, so re-ingesting it after a crash upserts the same reject
        # instead of adding another.
        if self.topic is not None:
            return f"{self.stream}:kafka:{self.topic}:{self.partition}:{self.offset}"
        return f"{self.stream}:{self.landing_file}:{self.line_no}"


@dataclass
class ValidatedBatch:
    stream: str
    rows: dict[str, list[Any]]
    rejects: list[Reject] = field(default_factory=list)

    @property
    def row_count(self) -> int:
        return len(self.rows["event_id"])


REJECT_REASONS = (
    "bad_encoding", "oversized", "bad_json", "missing_field", "extra_field", "wrong_type",
    "non_finite", "negative_value", "out_of_range", "unknown_symbol", "duplicate_id",
)  # fmt: skip


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number")


def validate_record(
    stream: str,
    raw_line: str,
    symbols: Set[str],
    landed_us: int | None = None,
    arrival_us: int | None = None,
) -> tuple[dict | None, str]:
    """Returns (record, "") when valid, else (None, "<reason>: <detail>") where reason is
    one of REJECT_REASONS. With `arrival_us` (the Kafka source: the moment ingestion
    accepted the record) that is the record's arrival_ts, whatever the message says."""
    try:
        record = json.loads(raw_line, parse_constant=_reject_constant)
    except ValueError as exc:
        if "is not a number" in str(exc):
            return None, f"non_finite: {exc}"
        return None, f"bad_json: {getattr(exc, 'msg', exc)} at char {getattr(exc, 'pos', '?')}"
    if not isinstance(record, dict):
        return None, f"bad_json: expected an object, got {type(record).__name__}"
    if arrival_us is not None:
        record["arrival_ts"] = arrival_us
    for name, types in SCHEMAS[stream]:
        if name not in record or record[name] is None:
            return None, f"missing_field: {name}"
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, types):
            return None, f"wrong_type: {name} is {type(value).__name__}"
    extra = sorted(set(record) - {name for name, _ in SCHEMAS[stream]})
    if extra:
        return None, f"extra_field: {', '.join(extra)[:200]}"
    return _check_values(stream, record, symbols, landed_us)


def _check_values(
    stream: str, record: dict, symbols: Set[str], landed_us: int | None
) -> tuple[dict | None, str]:
    if isinstance(record["price"], float) and not math.isfinite(record["price"]):
        return None, f"non_finite: price={record['price']}"  # 1e999 parses as inf
    for name in _POSITIVE:
        if record[name] <= 0:
            return None, f"negative_value: {name}={record[name]}"
    if record["price"] > MAX_PRICE or record["size"] > MAX_SIZE:
        return None, f"out_of_range: price={record['price']} size={record['size']}"
    latest_arrival = MAX_TS_US if landed_us is None else landed_us + ARRIVAL_SLACK_US
    for name, high in (("event_ts", MAX_TS_US), ("arrival_ts", latest_arrival)):
        if not MIN_TS_US <= record[name] <= high:
            return None, f"out_of_range: {name}={record[name]} outside [{MIN_TS_US}, {high}]"
    if stream == "trade" and record["trade_id"] > 2**63 - 1:
        return None, f"out_of_range: trade_id={record['trade_id']}"
    if stream == "price" and record["side"] not in ("B", "S"):
        return None, f"wrong_type: side must be 'B' or 'S', got {record['side']!r}"
    if record["symbol"] not in symbols:
        return None, f"unknown_symbol: {record['symbol'][:64]}"
    return record, ""


def decode_line(raw: bytes) -> tuple[str, str]:
    """(text, "") or (a printable form of the bytes, "<reason>: <detail>")."""
    if len(raw) > MAX_LINE_BYTES:
        return raw[:RAW_LINE_KEEP].decode("utf-8", "replace"), (
            f"oversized: {len(raw)} bytes (at most {MAX_LINE_BYTES})"
        )
    try:
        return raw.decode("utf-8"), ""
    except UnicodeDecodeError as exc:
        return raw.decode("utf-8", "replace"), f"bad_encoding: {exc.reason} at byte {exc.start}"


def refuse_repeated_trade(
    stream: str, record: dict | None, reason: str, seen_trade_ids: set[tuple[str, int]]
) -> tuple[dict | None, str]:
    """The same trade twice in one batch would be counted twice: the second one is
    quarantined as `duplicate_id` (the landing and the Kafka path alike)."""
    if record is not None and stream == "trade":
        trade = (record["symbol"], record["trade_id"])
        if trade in seen_trade_ids:
            record, reason = None, f"duplicate_id: trade_id {trade[1]} of {trade[0]}"
        seen_trade_ids.add(trade)
    return record, reason


def validate_lines(
    stream: str,
    landing_file: str,
    landed_us: int,
    lines: Iterable[str | bytes],
    symbols: Set[str],
) -> ValidatedBatch:
    """Splits one landed file's lines (text, or raw bytes as read from the file) into
    typed rows and rejects."""
    names = ["event_id"] + [name for name, _ in SCHEMAS[stream]] + ["symbol_prefix"]
    batch = ValidatedBatch(stream, {name: [] for name in names})
    rows = batch.rows
    seen_trade_ids: set[tuple[str, int]] = set()
    for line_no, line in enumerate(lines):
        raw_line, reason = decode_line(line) if isinstance(line, bytes) else (line, "")
        raw_line = raw_line.rstrip("\r\n")
        if not reason and not raw_line.strip():
            continue
        record = None
        if not reason:
            record, reason = validate_record(stream, raw_line, symbols, landed_us)
        record, reason = refuse_repeated_trade(stream, record, reason, seen_trade_ids)
        if record is None:
            kind, _, detail = reason.partition(": ")
            batch.rejects.append(
                Reject(
                    stream,
                    landing_file,
                    line_no,
                    kind,
                    detail[:500],
                    raw_line[:RAW_LINE_KEEP],
                    landed_us,
                )
            )
            continue
        rows["event_id"].append(f"{landing_file}:{line_no}")
        for name, _ in SCHEMAS[stream]:
            rows[name].append(float(record[name]) if name == "price" else record[name])
        rows["symbol_prefix"].append(record["symbol"][0])
    return batch
