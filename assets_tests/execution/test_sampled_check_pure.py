"""The sampled exactness check's verdicts and SQL, without Spark."""

from __future__ import annotations

from decimal import Decimal

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.execution.sampled_check import (
    ExactnessResult,
    KeyVerdict,
    ancestry,
    filtered_below,
    judge,
    key_filter,
    values_equal,
)

COLUMNS = ("volume", "vwap")


def test_values_equal_is_exact_but_for_doubles():
    assert values_equal(1.0, 1.0 + 1e-13)
    assert not values_equal(1.0, 1.0 + 1e-6)
    assert not values_equal(Decimal("1.00"), Decimal("1.01"))
    assert not values_equal(1, 2)
    assert values_equal(None, None) and not values_equal(None, 0)
    assert values_equal(float("nan"), float("nan"))


def test_judge_settled_keys_and_keys_in_flight():
    row = {"volume": 10, "vwap": 2.5}
    moved = {"volume": 11, "vwap": 2.5}
    keys = [("a",), ("b",), ("c",), ("d",), ("e",), ("f",)]
    stored = {("a",): row, ("b",): moved, ("c",): row, ("e",): row}
    capped = {("a",): row, ("b",): row, ("c",): row, ("d",): row}
    whole = {("a",): row, ("b",): row, ("c",): moved, ("d",): row, ("f",): row}
    verdicts = {v.key[0]: v for v in judge(keys, COLUMNS, stored, capped, whole)}
    assert verdicts["a"].state == "equal"
    assert (verdicts["b"].state, verdicts["b"].columns) == ("differs", ("volume",))
    assert verdicts["c"].state == "in_flight"  # a row arrived after the watermark
    assert verdicts["d"].state == "missing"
    assert verdicts["e"].state == "unexpected"
    assert verdicts["f"].state == "in_flight"  # only rows after the watermark


def test_a_failure_names_the_table_the_key_and_the_columns():
    result = ExactnessResult(
        "trade_aggr",
        7,
        ("second", "symbol"),
        (KeyVerdict((1, "AB"), "differs", ("volume",)), KeyVerdict((2, "C"), "in_flight")),
    )
    assert not result.passed and result.judged == 1 and result.in_flight == 1
    text = result.describe()
    assert "trade_aggr" in text and "second=1, symbol=AB" in text and "volume" in text
    timed = ExactnessResult(
        "t", 7, ("second",), (KeyVerdict((1_000_000,), "missing"),), timestamp_columns=("second",)
    )
    assert "(second=1970-01-01T00:00:01.000000+00:00): row missing" in timed.describe()
    ok = ExactnessResult("t", 7, ("k",), (KeyVerdict((1,), "equal"),))
    assert ok.passed and "equals the batch oracle" in ok.describe()


def test_key_filter_literals_by_type():
    sql = key_filter(
        ("second", "symbol"), {"second": "timestamp", "symbol": "string"}, [(5, "O'K"), (6, None)]
    )
    assert sql == (
        "(`second` = timestamp_micros(5) AND `symbol` = CAST('O\\'K' AS string)) OR "
        "(`second` = timestamp_micros(6) AND `symbol` IS NULL)"
    )
    assert key_filter(("k",), {"k": "int"}, []) == "false"


def test_ancestry_is_the_tables_chain_in_order():
    assert ancestry(JOBS, "trade_aggr") == ["trade_aggr"]
    chain = ancestry(JOBS, "sector_vwap")
    assert chain[-1] == "sector_vwap" and "industry_spike" not in chain
    assert set(chain) == {
        "trade_aggr",
        "price_aggr",
        "market_features",
        "enriched_features",
        "sector_vwap",
    }
    assert chain.index("market_features") > chain.index("trade_aggr")


def test_the_key_filter_goes_below_a_level_only_where_its_kind_keeps_a_key_to_itself():
    def chain(table):
        return ancestry(JOBS, table)

    def same(level, name):
        return True

    # market_features (per_side_replace): its sides' rows of a key make its row of that key
    assert filtered_below(JOBS, chain("market_features"), same) == ("price_aggr", "trade_aggr")
    # enriched_features (replace_by_key) keeps market_features' key, and on down
    below = filtered_below(JOBS, chain("enriched_features"), same)
    assert below == ("market_features", "price_aggr", "trade_aggr")
    # ... only where its key columns are its input's own (the lineage says identity)
    assert filtered_below(JOBS, chain("enriched_features"), lambda level, name: False) == ()
    # a view keyed by sector: its input has another key; raw inputs are not jobs
    assert filtered_below(JOBS, chain("sector_vwap"), same) == ()
    assert filtered_below(JOBS, chain("trade_aggr"), same) == ()
