"""The machine's budget as the sensor reads it from the instance (orchestration/
machine_budget.py): the steps' loads and capacity from their materializations, the runs in
flight from their plans, and a tick under FRESHNESS_LAUNCH_RULE=budget holding a run back
with its reason."""

from __future__ import annotations

from types import SimpleNamespace

import dagster as dg
import pytest
from dagster._core.test_utils import create_run_for_test

from assets_tests.orchestration.test_sensor import T0, raw_lake, tick
from freshness_pipeline.config.scheduler_settings import SchedulerSettings
from freshness_pipeline.orchestration.machine_budget import in_flight, machine_words, step_loads
from freshness_pipeline.orchestration.sensor import plan_tick
from freshness_pipeline.scheduling.budget import slowdown
from freshness_pipeline.scheduling.run_plan import ASSET_TAG
from freshness_pipeline.scheduling.units import US_PER_S


def _record(storage_id: int, end_s: float, duration_s: float, run_id: str = "r"):
    """A materialization record as history.materializations gives it."""
    metadata = {"duration_s": SimpleNamespace(value=duration_s)}
    return SimpleNamespace(
        storage_id=storage_id,
        timestamp=end_s,
        run_id=run_id,
        asset_materialization=SimpleNamespace(metadata=metadata),
    )


def test_the_steps_loads_and_the_capacity_they_show():
    # job a alone takes 4 s; beside one other step 8 s: one run's worth of speed
    records = {"a": [], "b": []}
    clock, sid = 0.0, 0
    for _ in range(3):
        sid += 1
        records["a"].append(_record(sid, clock + 4.0, 4.0))  # alone
        clock += 10.0
        sid += 2
        records["a"].append(_record(sid - 1, clock + 8.0, 8.0))  # beside b, same span
        records["b"].append(_record(sid, clock + 8.0, 8.0))
        clock += 20.0
    loads = step_loads(records)
    assert loads.beside[1] == 0.0 and loads.beside[2] == pytest.approx(1.0)
    assert loads.capacity == pytest.approx(1.0)
    assert loads.fit.samples == 9
    assert machine_words(loads, 2) == (
        "machine's budget: 1.00 runs' worth of work at once (fitted from 9 recent steps, "
        "spread 0.00 in log seconds); 2 run(s) in flight"
    )
    # without steps at two loads: the default
    alone = step_loads({"a": [_record(1, 5.0, 5.0)]})
    assert alone.fit.capacity is None and alone.capacity == 1.0
    assert "the default: 1 recent steps, too few at two loads" in machine_words(alone, 0)


def _run_record(run, start_time: float | None):
    return SimpleNamespace(dagster_run=run, start_time=start_time)


def test_runs_in_flight_as_the_forecast_sees_them():
    with dg.instance_for_test() as instance:
        _, requests = tick(raw_lake(), instance, chains="planned")
    (request,) = requests  # one chained run: both aggregates and the four tables below
    run = SimpleNamespace(run_id="r1", tags=request.tags, run_config=request.run_config)
    queued = in_flight([_run_record(run, None)], {}, now_s=100.0, run_cost_s=3.0, capacity=1.0)
    (work,) = queued
    assert work.starts_in_s == 3.0 and len(work.steps) == 6
    # started 10 s ago, L 3 s, its first step committed 2 s ago: the second under way
    first = request.tags[ASSET_TAG]
    committed = {first: [SimpleNamespace(run_id="r1", timestamp=98.0)]}
    (work,) = in_flight([_run_record(run, 90.0)], committed, 100.0, 3.0, 1.0)
    assert work.starts_in_s == 0.0 and len(work.steps) == 5
    # a run the sensor did not plan: one step of L, no gain
    hand = SimpleNamespace(run_id="h", tags={}, run_config={})
    (work,) = in_flight([_run_record(hand, None)], {}, 100.0, 3.0, 1.0)
    assert work.steps == ((3.0, 0.0),)


# Without aging: both aggregates are first materializations, which aging would launch
# whatever the machine (test_budget.py checks that).
BUDGET = {"launch_rule": "budget", "first_runs_first": False, "max_wait_s": None}


def test_a_budget_tick_holds_the_second_run_and_says_why():
    with dg.instance_for_test() as instance:
        _, slots = tick(raw_lake(), instance)
        result, requests = tick(raw_lake(), instance, **BUDGET)
        assert len(slots) == 2 and len(requests) == 1
        outcome = plan_tick(raw_lake(), instance, SchedulerSettings(chains="off", **BUDGET), NOW)
        assert outcome.machine_text.startswith("machine's budget: 1.00 runs' worth")
        assert tick_outcome_without_budget(instance).machine_text == ""
        reasons = {s.job: s.reason for s in result.skipped}
        (held,) = {"trade_aggr", "price_aggr"} - {requests[0].tags[ASSET_TAG]}
        assert reasons[held].startswith("held for the machine: beside 1 run(s) in flight")
        # the launched run in flight, the other aggregate is held beside it
        create_run_for_test(
            instance,
            job_name="x",
            status=dg.DagsterRunStatus.STARTED,
            tags=requests[0].tags,
            run_config=requests[0].run_config,
        )
        result, again = tick(raw_lake(), instance, **BUDGET)
        assert again == []
        assert {s.job: s.reason for s in result.skipped}[held].startswith("held for the machine")
        # the counts and the budget take the runs in flight from one query
        reads = _ReadsCounted(instance)
        plan_tick(raw_lake(), reads, SchedulerSettings(chains="off", **BUDGET), NOW)
        assert reads.active == 1


class _ReadsCounted:
    """An instance that counts its queries for the runs queued or running."""

    def __init__(self, instance) -> None:
        self._instance = instance
        self.active = 0

    def __getattr__(self, name: str):
        found = getattr(self._instance, name)
        if name not in ("get_runs", "get_run_records"):
            return found

        def read(*args, **kwargs):
            filters = kwargs.get("filters", args[0] if args else None)
            statuses = filters.statuses if filters is not None else None
            self.active += bool(statuses and dg.DagsterRunStatus.STARTED in statuses)
            return found(*args, **kwargs)

        return read


NOW = T0 + 61 * US_PER_S


def tick_outcome_without_budget(instance):
    return plan_tick(raw_lake(), instance, SchedulerSettings(chains="off"), NOW)


def test_a_step_beside_others_counts_as_its_work_alone():
    assert slowdown(0.0, 1.0) == 1.0 and slowdown(1.0, 1.0) == 2.0 and slowdown(1.0, 2.0) == 1.0
