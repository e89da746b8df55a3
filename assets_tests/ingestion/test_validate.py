from __future__ import annotations

import json

import pytest

from freshness_pipeline.ingestion.validate import REJECT_REASONS, validate_lines, validate_record

SYMBOLS = frozenset({"AAPL", "MSFT"})
T0 = 1_767_364_200_000_000  # 2026-01-02 14:30 UTC, epoch microseconds
PRICE = {
    "symbol": "AAPL",
    "side": "B",
    "price": 190.12,
    "size": 100,
    "event_ts": T0 + 1,
    "arrival_ts": T0 + 2,
}
TRADE = {
    "symbol": "MSFT",
    "price": 410.5,
    "size": 37,
    "trade_id": 9,
    "event_ts": T0 + 1,
    "arrival_ts": T0 + 2,
}


def line(record: dict, **change) -> str:
    data = {**record, **change}
    return json.dumps({k: v for k, v in data.items() if v is not ...})


@pytest.mark.parametrize(
    ("stream", "raw", "reason"),
    [
        ("price", '{"symbol": "AAPL", "side": "B", "price": 1.0', "bad_json"),
        ("price", "[1, 2, 3]", "bad_json"),
        ("price", "not json at all", "bad_json"),
        ("price", line(PRICE, price=...), "missing_field"),
        ("trade", line(TRADE, trade_id=...), "missing_field"),
        ("trade", line(TRADE, size=None), "missing_field"),
        ("price", line(PRICE, size="100"), "wrong_type"),
        ("price", line(PRICE, size=True), "wrong_type"),
        ("trade", line(TRADE, price="410.5"), "wrong_type"),
        ("price", line(PRICE, side="X"), "wrong_type"),
        ("price", line(PRICE, price=-1.5), "negative_value"),
        ("trade", line(TRADE, size=-100), "negative_value"),
        ("trade", line(TRADE, size=0), "negative_value"),
        ("price", line(PRICE, symbol="ZZZZ9"), "unknown_symbol"),
        ("price", line(PRICE, extra=1), "extra_field"),
        ("price", line(PRICE).replace("190.12", "NaN"), "non_finite"),
        ("price", line(PRICE).replace("190.12", "-Infinity"), "non_finite"),
        ("trade", line(TRADE).replace("410.5", "1e999"), "non_finite"),
        ("trade", line(TRADE, price=2e9), "out_of_range"),
        ("trade", line(TRADE, size=10**12), "out_of_range"),
        ("trade", line(TRADE, event_ts=5), "out_of_range"),
        ("trade", line(TRADE, event_ts=9 * 10**18), "out_of_range"),
        ("trade", line(TRADE, trade_id=2**70), "out_of_range"),
    ],
)
def test_each_kind_of_bad_record_gets_its_reason(stream, raw, reason):
    record, why = validate_record(stream, raw, SYMBOLS)
    assert record is None
    assert why.split(":")[0] == reason
    assert reason in REJECT_REASONS


@pytest.mark.parametrize(("stream", "record"), [("price", PRICE), ("trade", TRADE)])
def test_good_records_pass(stream, record):
    parsed, why = validate_record(stream, json.dumps(record), SYMBOLS)
    assert why == "" and parsed == record


def test_batch_keeps_good_rows_and_quarantines_the_rest():
    lines = [line(PRICE), "garbage", line(PRICE, price=200), "", line(PRICE, symbol="NOPE")]
    batch = validate_lines("price", "000000000007", T0 + 123, lines, SYMBOLS)
    assert batch.row_count == 2
    assert batch.rows["event_id"] == ["000000000007:0", "000000000007:2"]
    assert batch.rows["symbol_prefix"] == ["A", "A"]
    assert [(r.line_no, r.reason) for r in batch.rejects] == [
        (1, "bad_json"),
        (4, "unknown_symbol"),
    ]
    assert batch.rejects[0].raw_line == "garbage"
    assert batch.rejects[1].reject_id == "price:000000000007:4"
    assert batch.rejects[1].landed_us == T0 + 123
