"""Malformed stream records of every kind, each with the reject reason it must get.

Used by the fuzz tests: at least 10,000 bad records through the ingestion path
must all land in `raw_rejects` with their reason while the valid records of the same
files are ingested. Seeded, so a failure replays.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence

from freshness_pipeline.ingestion.validate import MAX_LINE_BYTES

T0_US = 1_767_364_200_000_000  # 2026-01-02 14:30 UTC


def _price(rng: random.Random, symbol: str, arrival_us: int) -> dict:
    return {
        "symbol": symbol,
        "side": rng.choice("BS"),
        "price": round(rng.uniform(1, 500), 2),
        "size": rng.randint(1, 900),
        "event_ts": arrival_us - rng.randint(1, 10**6),
        "arrival_ts": arrival_us,
    }


def _trade(rng: random.Random, symbol: str, arrival_us: int) -> dict:
    return {
        "symbol": symbol,
        "price": round(rng.uniform(1, 500), 2),
        "size": rng.randint(1, 900),
        "trade_id": rng.randint(1, 2**40),
        "event_ts": arrival_us - rng.randint(1, 10**6),
        "arrival_ts": arrival_us,
    }


def valid_record(rng: random.Random, stream: str, symbols: Sequence[str], arrival_us: int) -> dict:
    make = _price if stream == "price" else _trade
    return make(rng, rng.choice(symbols), arrival_us)


def _dumps(record: dict) -> bytes:
    return json.dumps(record).encode()


Mutation = Callable[[random.Random, str, dict], bytes]


def _drop(rng: random.Random, stream: str, record: dict) -> bytes:
    record.pop(rng.choice(sorted(record)))
    return _dumps(record)


def _null(rng: random.Random, stream: str, record: dict) -> bytes:
    record[rng.choice(sorted(record))] = None
    return _dumps(record)


def _extra(rng: random.Random, stream: str, record: dict) -> bytes:
    record[rng.choice(["venue", "note", "x", "price2"])] = rng.choice([1, "a", None, [1]])
    return _dumps(record)


def _wrong_type(rng: random.Random, stream: str, record: dict) -> bytes:
    name = rng.choice(["size", "price", "event_ts", "arrival_ts", "symbol"])
    record[name] = rng.choice([str(record[name]), True, [record[name]], {"v": 1}])
    if name == "symbol" and isinstance(record[name], str):
        record[name] = 42
    return _dumps(record)


def _non_finite(rng: random.Random, stream: str, record: dict) -> bytes:
    text = _dumps(record).decode()
    bad = rng.choice(["NaN", "Infinity", "-Infinity", "1e999"])
    return text.replace(json.dumps(record["price"]), bad, 1).encode()


def _negative(rng: random.Random, stream: str, record: dict) -> bytes:
    name = rng.choice(["price", "size"])
    record[name] = -abs(record[name]) if rng.random() < 0.8 else 0
    return _dumps(record)


def _absurd(rng: random.Random, stream: str, record: dict) -> bytes:
    choice = rng.randrange(5)
    if choice == 0:
        record["price"] = rng.choice([2e9, 1e15, 9.9e17])
    elif choice == 1:
        record["size"] = rng.choice([10**10, 2**63 - 1])
    elif choice == 2:
        record["event_ts"] = rng.choice([1, 10**12, 9 * 10**18])  # 1970, far future
    elif choice == 3:
        record["arrival_ts"] = record["arrival_ts"] + 10**12  # days after it landed
    else:
        record["event_ts"] = 4_200_000_000_000_000  # after 2100
    return _dumps(record)


def _unknown_symbol(rng: random.Random, stream: str, record: dict) -> bytes:
    record["symbol"] = rng.choice(["ZZZZ9", "", "aapl", "X" * 300, "\u00c9TF"])
    return _dumps(record)


def _invalid_utf8(rng: random.Random, stream: str, record: dict) -> bytes:
    raw = _dumps(record)
    cut = rng.randrange(1, len(raw))
    return raw[:cut] + rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80\x80"]) + raw[cut:]


def _oversized(rng: random.Random, stream: str, record: dict) -> bytes:
    record["symbol"] = "A" * (MAX_LINE_BYTES + rng.randint(1, 4096))
    return _dumps(record)


def _truncated(rng: random.Random, stream: str, record: dict) -> bytes:
    raw = _dumps(record)
    return raw[: rng.randrange(1, len(raw) - 1)]


def _not_an_object(rng: random.Random, stream: str, record: dict) -> bytes:
    return rng.choice([b"[1,2,3]", b"42", b'"text"', b"null", b"{", b"}{", b"\x00\x01"])


MUTATIONS: dict[str, tuple[Mutation, tuple[str, ...]]] = {
    # kind of damage -> (how, the reasons it may legitimately get)
    "missing_field": (_drop, ("missing_field",)),
    "null_field": (_null, ("missing_field",)),
    "extra_field": (_extra, ("extra_field",)),
    "wrong_type": (_wrong_type, ("wrong_type",)),
    "non_finite": (_non_finite, ("non_finite",)),
    "negative": (_negative, ("negative_value",)),
    "absurd": (_absurd, ("out_of_range",)),
    "unknown_symbol": (_unknown_symbol, ("unknown_symbol",)),
    "invalid_utf8": (_invalid_utf8, ("bad_encoding",)),
    "oversized": (_oversized, ("oversized",)),
    "truncated": (_truncated, ("bad_json",)),
    "not_an_object": (_not_an_object, ("bad_json", "bad_encoding")),
}


def fuzz_lines(
    rng: random.Random, stream: str, symbols: Sequence[str], bad: int, good: int, arrival_us: int
) -> list[tuple[bytes, str | None, tuple[str, ...]]]:
    """`bad` malformed and `good` valid lines, shuffled: (line, damage kind or None,
    accepted reasons). Every damage kind appears; a trade duplicate rides along too."""
    kinds = sorted(MUTATIONS)
    out: list[tuple[bytes, str | None, tuple[str, ...]]] = []
    for i in range(bad):
        kind = kinds[i % len(kinds)]
        mutate, reasons = MUTATIONS[kind]
        out.append(
            (mutate(rng, stream, valid_record(rng, stream, symbols, arrival_us)), kind, reasons)
        )
    for _ in range(good):
        out.append((_dumps(valid_record(rng, stream, symbols, arrival_us)), None, ()))
    if stream == "trade" and good:
        twin = json.loads(next(line for line, kind, _ in out if kind is None))
        out.append((_dumps(twin), "duplicate", ("duplicate_id",)))
    rng.shuffle(out)
    return out
