"""Staleness accounting of the experiment (pure): P and the zero-cost floor P0."""

from __future__ import annotations

import pytest

from freshness_pipeline.lab.experiment.staleness import (
    StalenessSampler,
    raw_ancestors,
    sample_tables,
    total_staleness,
)
from freshness_pipeline.scheduling.units import US_PER_S


def test_raw_ancestors_follow_the_lineage():
    assert raw_ancestors("trade_aggr") == ("trade_raw",)
    assert raw_ancestors("market_features") == ("price_raw", "trade_raw")
    assert raw_ancestors("industry_spike") == ("price_raw", "trade_raw")


def test_sample_is_now_minus_watermark_and_the_floor_is_the_raw_lag():
    now, start = 100 * US_PER_S, 10 * US_PER_S
    marks = {
        "trade_raw": 98 * US_PER_S,
        "price_raw": 97 * US_PER_S,
        "trade_aggr": 90 * US_PER_S,
        "market_features": None,
    }
    by_table = {s.table: s for s in sample_tables(now, start, marks)}
    assert by_table["trade_aggr"].staleness_s == pytest.approx(10.0)
    assert by_table["trade_aggr"].floor_s == pytest.approx(2.0)
    # never written: stale since the start; its floor is the older raw table
    assert by_table["market_features"].staleness_s == pytest.approx(90.0)
    assert by_table["market_features"].floor_s == pytest.approx(3.0)
    assert all(s.floor_s <= s.staleness_s for s in by_table.values())


def test_total_staleness_sums_tables_and_samples():
    marks = {"trade_raw": 5 * US_PER_S, "price_raw": 5 * US_PER_S}
    samples = sample_tables(6 * US_PER_S, 0, marks, jobs=["trade_aggr"]) + sample_tables(
        7 * US_PER_S, 0, marks, jobs=["trade_aggr"]
    )
    assert total_staleness(samples) == pytest.approx((6.0 + 7.0, 1.0 + 2.0))


def test_sampler_reads_every_table_each_pass():
    reads = []
    clock = iter(float(t) for t in range(100, 200))
    sampler = StalenessSampler(
        lambda table: reads.append(table) or 99 * US_PER_S, start_us=0, clock=lambda: next(clock)
    )
    taken = sampler.sample_once()
    assert len(taken) == 6 and len(reads) == 8  # six job tables plus the two raw tables
    assert {s.staleness_s for s in taken} == {1.0}
