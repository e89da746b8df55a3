"""Parsing and validation of landed stream records (pure Python, no Spark).

A record either becomes a typed row or a `Reject` with a reason; nothing is dropped
silently and one bad record never stops the batch.
"""

from __future__ import annotations

import json
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


@dataclass(frozen=True)
class Reject:
    stream: str
    landing_file: str
    line_no: int
    reason: str  # one of REJECT_REASONS
    detail: str
    raw_line: str
    landed_us: int

    @property
    def reject_id(self) -> str:
        # The landing position identifies a record across retries, so re-ingesting the
        # same file after a crash upserts the same reject instead of adding another.
        return f"{self.stream}:{self.landing_file}:{self.line_no}"


@dataclass
class ValidatedBatch:
    stream: str
    rows: dict[str, list[Any]]
    rejects: list[Reject] = field(default_factory=list)

    @property
    def row_count(self) -> int:
        return len(self.rows["event_id"])


REJECT_REASONS = ("bad_json", "missing_field", "wrong_type", "negative_value", "unknown_symbol")


def validate_record(stream: str, raw_line: str, symbols: Set[str]) -> tuple[dict | None, str]:
    """Returns (record, "") when valid, else (None, "<reason>: <detail>") where reason is
    one of REJECT_REASONS."""
    try:
        record = json.loads(raw_line)
    except ValueError as exc:
        return None, f"bad_json: {exc.msg} at char {exc.pos}"
    if not isinstance(record, dict):
        return None, f"bad_json: expected an object, got {type(record).__name__}"
    for name, types in SCHEMAS[stream]:
        if name not in record or record[name] is None:
            return None, f"missing_field: {name}"
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, types):
            return None, f"wrong_type: {name} is {type(value).__name__}"
    for name in _POSITIVE:
        if name in record and record[name] <= 0:
            return None, f"negative_value: {name}={record[name]}"
    if stream == "price" and record["side"] not in ("B", "S"):
        return None, f"wrong_type: side must be 'B' or 'S', got {record['side']!r}"
    if record["symbol"] not in symbols:
        return None, f"unknown_symbol: {record['symbol']}"
    return record, ""


def validate_lines(
    stream: str,
    landing_file: str,
    landed_us: int,
    lines: Iterable[str],
    symbols: Set[str],
) -> ValidatedBatch:
    """Splits one landed file's lines into typed rows and rejects."""
    names = ["event_id"] + [name for name, _ in SCHEMAS[stream]] + ["symbol_prefix"]
    batch = ValidatedBatch(stream, {name: [] for name in names})
    rows = batch.rows
    for line_no, raw_line in enumerate(lines):
        raw_line = raw_line.rstrip("\n")
        if not raw_line.strip():
            continue
        record, reason = validate_record(stream, raw_line, symbols)
        if record is None:
            kind, _, detail = reason.partition(": ")
            batch.rejects.append(
                Reject(stream, landing_file, line_no, kind, detail, raw_line, landed_us)
            )
            continue
        rows["event_id"].append(f"{landing_file}:{line_no}")
        for name, _ in SCHEMAS[stream]:
            rows[name].append(float(record[name]) if name == "price" else record[name])
        rows["symbol_prefix"].append(record["symbol"][0])
    return batch
