"""The independent oracle (pandas, from the column definitions) on hand-computed rows, and
its comparison catching a doubled window and a rounded double."""

from __future__ import annotations

import math
from decimal import Decimal

import pandas as pd
import pytest

from freshness_pipeline.execution import oracle

T0 = pd.Timestamp("2026-01-02 10:00:00", tz="UTC")


def ts(seconds: float) -> pd.Timestamp:
    return T0 + pd.Timedelta(seconds=seconds)


def trade_frame(rows) -> pd.DataFrame:
    """rows: (symbol, price, size, trade_id, event s, arrival s)."""
    names = ("symbol", "price", "size", "trade_id", "event_ts", "arrival_ts")
    return pd.DataFrame(
        [dict(zip(names, (s, p, n, i, ts(e), ts(a)), strict=True)) for s, p, n, i, e, a in rows]
    )


def trades() -> pd.DataFrame:
    rows = [  # symbol, price, size, trade_id, event s, arrival s
        ("AAA", 10.00, 100, 2, 0.5, 1.0),
        ("AAA", 10.05, 50, 1, 0.5, 1.2),
        ("AAA", 9.99, 10, 3, 0.9, 2.0),
        ("BBB", 20.00, 5, 7, 61.2, 62.0),
    ]
    return trade_frame(rows)


def prices() -> pd.DataFrame:
    rows = [  # symbol, side, price, size, event s, arrival s
        ("AAA", "B", 9.98, 100, 0.1, 0.5),
        ("AAA", "B", 9.99, 30, 0.2, 0.6),
        ("AAA", "B", 9.99, 20, 0.7, 0.8),
        ("AAA", "S", 10.01, 40, 0.3, 0.7),
        ("AAA", "S", 10.02, 60, 0.4, 3.0),
    ]
    return pd.DataFrame(
        [
            {"symbol": s, "side": d, "price": p, "size": n, "event_ts": ts(e), "arrival_ts": ts(a)}
            for s, d, p, n, e, a in rows
        ]
    )


def master() -> pd.DataFrame:
    return pd.DataFrame([{"symbol": "AAA", "name": "A", "sector": "Tech", "industry": "Chips"}])


def test_trade_aggr_opens_and_closes_by_event_time_then_trade_id():
    row = oracle.trade_aggr(trades()).set_index("symbol").loc["AAA"]
    assert (row["open"], row["close"], row["high"], row["low"]) == (1005, 999, 1005, 999)
    assert (row["volume"], row["trade_count"], row["notional"]) == (160, 3, 160240)
    assert row["vwap"] == pytest.approx(1602.40 / 160, rel=1e-15)
    assert row["arrival_ts"] == ts(2.0)


def test_price_aggr_sums_the_sizes_at_the_best_price():
    row = oracle.price_aggr(prices()).set_index("symbol").loc["AAA"]
    assert (row["best_bid"], row["best_bid_size"]) == (999, 50)
    assert (row["best_ask"], row["best_ask_size"]) == (1001, 40)
    assert row["update_count"] == 5 and row["arrival_ts"] == ts(3.0)


def test_features_sectors_and_spikes():
    tables = oracle.recompute(prices(), trades(), master())
    market = tables["market_features"].set_index("symbol")
    aaa = market.loc["AAA"]
    assert aaa["mid"] == (999 + 1001) / 200 and aaa["spread"] == pytest.approx(0.02)
    assert aaa["spread_bps"] == pytest.approx(0.02 / 10.0 * 10000, rel=1e-12)
    assert aaa["order_imbalance"] == pytest.approx((50 - 40) / 90)
    assert aaa["arrival_ts"] == ts(3.0)
    assert math.isnan(market.loc["BBB"]["mid"])  # trades only: a full outer join
    enriched = tables["enriched_features"].set_index("symbol")
    assert enriched.loc["BBB"]["sector"] == "Unknown"
    sectors = tables["sector_vwap"].set_index("sector")
    assert sectors.loc["Tech"]["active_symbols"] == 1
    assert sectors.loc["Tech"]["vwap"] == pytest.approx(10.015)
    spikes = tables["industry_spike"].set_index("industry")
    assert spikes.loc["Chips"]["trailing_volume_avg"] == 0.0
    assert math.isnan(spikes.loc["Chips"]["spike_ratio"])
    # BBB's second (61 s) has AAA-free "Unknown" industry with nothing 60 s before it.
    assert spikes.loc["Unknown"]["volume"] == 5


def test_window_is_the_sixty_seconds_before():
    rows = [("AAA", 10.0, 60, i, s, s + 0.5) for i, s in enumerate([0.1, 30.2, 60.3, 61.1])]
    frame = trade_frame(rows)
    spikes = oracle.recompute(prices().iloc[0:0], frame, master())["industry_spike"]
    by_second = spikes.set_index("second")["trailing_volume_avg"]
    # second 60 sees seconds 0 and 30; second 61 sees 30 and 60 (0 is 61 s before it).
    assert by_second[ts(60)] == 120 / 60 and by_second[ts(61)] == 120 / 60


def as_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame as the Hudi table holds it: money as DECIMALs, not cents."""
    table = frame.copy()
    for column in oracle.MONEY & set(table.columns):
        table[column] = [None if pd.isna(v) else Decimal(int(v)).scaleb(-2) for v in table[column]]
    return table


def test_compare_catches_a_doubled_window_and_a_rounded_double():
    expected = oracle.trade_aggr(trades())
    assert oracle.compare("trade_aggr", expected, as_table(expected)).equal
    doubled = expected.copy()
    doubled.loc[0, "volume"] *= 2
    doubled.loc[0, "notional"] *= 2
    diff = oracle.compare("trade_aggr", expected, as_table(doubled))
    assert not diff.equal and diff.mismatched == {"volume": 1, "notional": 1}
    rounded = expected.copy()
    rounded["vwap"] = rounded["vwap"].round(2)
    assert oracle.compare("trade_aggr", expected, as_table(rounded)).mismatched == {"vwap": 1}
    fewer = as_table(expected.iloc[1:])
    assert oracle.compare("trade_aggr", expected, fewer).missing == 1
    twice = as_table(pd.concat([expected, expected.iloc[:1]], ignore_index=True))
    diff = oracle.compare("trade_aggr", expected, twice)  # one key in two file groups
    assert (diff.missing, diff.extra, diff.mismatched) == (0, 1, {})
