"""What the chaos report makes of the oracle's findings, a table no reader can open
included (pure: pandas frames stand in for the tables' rows)."""

from __future__ import annotations

import pandas as pd

from freshness_pipeline.lab.reliability.chaos import ChaosResult, oracle_findings, report_markdown


def _rows(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "second": pd.date_range("2026-11-27 10:00", periods=n, freq="s", tz="UTC"),
            "symbol": ["AB"] * n,
            "volume": list(range(n)),
        }
    )


def _unreadable(name: str) -> pd.DataFrame:
    if name == "trade_aggr":
        raise OSError("Could not load Hoodie properties from .hoodie/hoodie.properties\nat ...")
    return _rows(3)


def test_an_unreadable_table_counts_its_rows_as_lost_and_keeps_the_reason():
    found = oracle_findings({"price_aggr": _rows(3), "trade_aggr": _rows(5)}, _unreadable)
    assert found["price_aggr"] == {"missing": 0, "extra": 0, "mismatched": 0, "examples": []}
    assert found["trade_aggr"]["missing"] == 5
    assert found["trade_aggr"]["unreadable"] == (
        "OSError: Could not load Hoodie properties from .hoodie/hoodie.properties"
    )


def test_the_report_names_the_unreadable_table_and_fails_even_without_rows():
    result = ChaosResult(config={"faults": 1}, drained=True)
    result.oracle = oracle_findings({"price_aggr": _rows(3), "trade_aggr": _rows(0)}, _unreadable)
    assert result.rows_lost == 0  # an empty recomputation: nothing to lose, still a failure
    assert not result.survived
    report = report_markdown(result, "test")
    assert "| verdict | FAILED |" in report
    assert "- trade_aggr: OSError: Could not load Hoodie properties" in report
