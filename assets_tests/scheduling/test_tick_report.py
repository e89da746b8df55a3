"""What a tick says: every job's decision in words (launching or not), the tables past
their staleness target, a one-line summary, and when a table's staleness is recorded."""

from __future__ import annotations

from freshness_pipeline.scheduling.planner import (
    MIB,
    CostModel,
    JobState,
    PendingInput,
    PlanRequest,
    plan,
)
from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.tick_report import describe_tick, input_lag_s, observations_due
from freshness_pipeline.scheduling.units import US_PER_S

T0 = 1_700_000_000 * US_PER_S
TARGET = StalenessTarget(fail_s=300, warn_fraction=0.5)
JOBS = ["trade_aggr", "price_aggr", "market_features"]


def state(job: str, files: int) -> JobState:
    pending = tuple(
        PendingInput(
            f"/lake/{job}/f{i}.parquet", MIB, T0 + i * US_PER_S + 1, T0 + (i + 1) * US_PER_S
        )
        for i in range(files)
    )
    return JobState(job, T0, T0 + files * US_PER_S, pending, CostModel(2.0, 0.5 / MIB))


def test_a_launching_tick_says_why_the_others_were_left_out():
    states = [state("trade_aggr", 4), state("price_aggr", 2), state("market_features", 0)]
    result = plan(PlanRequest(states, k=1, now_us=T0 + 10 * US_PER_S))
    staleness = {"trade_aggr": 400.0, "price_aggr": 160.0, "market_features": None}
    report = describe_tick(result, staleness, TARGET, JOBS)
    trade, price, features = report.lines
    assert trade.startswith("trade_aggr: launch: 4 of 4 files up to 2023-11-14 22:13:24.000 UTC")
    assert "1st of 2 runnable" in trade
    assert trade.endswith("staleness 400 s, PAST its 300 s target")
    assert price.startswith("price_aggr: waits: no free slot (K=1, 0 running), eta ")
    assert "ranks 2nd" in price and price.endswith("past the 150 s warning")
    assert features == (
        "market_features: waits: no pending data; no watermark yet (never refreshed)"
    )
    assert report.past_target == ("trade_aggr 400 s",)
    assert report.summary == (
        "launch trade_aggr; past target: trade_aggr 400 s; 1 no free slot, 1 no pending data"
    )


def test_an_idle_tick_says_every_reason_in_its_skip_reason():
    result = plan(PlanRequest([state(job, 0) for job in JOBS], k=3, now_us=T0))
    report = describe_tick(result, dict.fromkeys(JOBS, 10.0), TARGET, JOBS)
    assert report.summary == "idle; 3 no pending data"
    assert report.skip_reason() == (
        "Nothing launched (3 free slots). No table past its staleness target. "
        "trade_aggr: waits: no pending data; staleness 10 s. "
        "price_aggr: waits: no pending data; staleness 10 s. "
        "market_features: waits: no pending data; staleness 10 s."
    )


def test_staleness_is_recorded_every_minute_of_the_clock():
    staleness = {"trade_aggr": 10.0, "price_aggr": 20.0, "market_features": None}
    minute = 60 * US_PER_S
    start = T0 - T0 % minute  # a minute boundary
    # The sensor's first tick, and the first tick past each minute boundary: every table
    # with a watermark (the one without has no staleness to record).
    assert observations_due(start + 5 * US_PER_S, None, staleness, TARGET) == [
        "trade_aggr",
        "price_aggr",
    ]
    assert observations_due(start + 2 * US_PER_S, start - 9 * US_PER_S, staleness, TARGET) == [
        "trade_aggr",
        "price_aggr",
    ]
    # Later ticks in the same minute: nothing (no line crossed).
    assert observations_due(start + 22 * US_PER_S, start + 11 * US_PER_S, staleness, TARGET) == []


def test_a_table_crossing_its_warn_or_fail_line_is_recorded_at_once():
    minute = 60 * US_PER_S
    start = T0 - T0 % minute
    now, previous = start + 30 * US_PER_S, start + 20 * US_PER_S  # 10 s apart, same minute
    staleness = {
        "trade_aggr": 155.0,  # was 145 s at the previous tick: crossed the 150 s warning
        "price_aggr": 140.0,  # still below it
        "market_features": 305.0,  # was 295 s: crossed the 300 s target
        "sector_vwap": 400.0,  # long past both: nothing new
    }
    assert observations_due(now, previous, staleness, TARGET) == [
        "trade_aggr",
        "market_features",
    ]
    no_warning = StalenessTarget(fail_s=300, warn_fraction=0)
    assert observations_due(now, previous, staleness, no_warning) == ["market_features"]


def test_a_table_that_reflects_all_its_inputs_hold_reads_as_caught_up_not_past_target():
    """An input that stopped changing leaves its reader's staleness growing for ever
    (METHOD 1 is now minus the newest arrival it reflects); its lag behind the inputs is 0,
    and the tick says caught up instead of PAST its target, and does not count it late."""
    result = plan(PlanRequest([state(job, 0) for job in JOBS], k=3, now_us=T0))
    staleness = {"trade_aggr": 23_018_156.0, "price_aggr": 400.0, "market_features": 200.0}
    lag = {
        "trade_aggr": input_lag_s(T0, T0),  # caught up
        "price_aggr": input_lag_s(T0, T0 + 90 * US_PER_S),  # 90 s behind
        "market_features": None,  # its inputs not read this tick
    }
    report = describe_tick(result, staleness, TARGET, JOBS, lag)
    trade, price, features = report.lines
    assert trade.endswith(
        "staleness 23018156 s, caught up with its inputs (nothing newer has arrived in them)"
    )
    assert price.endswith("staleness 400 s, PAST its 300 s target, 90 s behind its inputs")
    assert features.endswith("staleness 200 s, past the 150 s warning")
    assert report.past_target == ("price_aggr 400 s",)
    assert TARGET.state(23_018_156.0, 0.0) == "caught up"
    assert TARGET.state(10.0, 0.0) == "pass"  # fresh is fresh, caught up or not
    assert TARGET.state(400.0, 1.0) == "fail"
    assert input_lag_s(T0 + US_PER_S, T0) == 0.0  # never negative
    assert input_lag_s(None, T0) is None
