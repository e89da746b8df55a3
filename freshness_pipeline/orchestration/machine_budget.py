"""The machine's budget as a tick reads it from the Dagster instance (scheduling/budget.py,
METHOD 10): how much the recent steps stretched beside each other (the machine's capacity,
and each step's work alone for the cost model), and the runs in flight with the steps
their plans have not committed yet.

A step's materialization says when it committed (its timestamp) and how long it took
(`duration_s`), so the steps' intervals, and how many worked beside each, come from the
records the tick reads anyway: no query of its own but the runs in flight.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from freshness_pipeline.scheduling.budget import (
    DEFAULT_CAPACITY,
    CapacityFit,
    MachineBudget,
    Work,
    beside_each,
    fit_capacity,
    slowdown,
    step_left_s,
)
from freshness_pipeline.scheduling.run_plan import planned_steps


@dataclass(frozen=True)
class StepLoads:
    """The steps in the records a tick read: how many others worked beside each (by the
    record's storage id) and the capacity fitted from how they stretched."""

    beside: Mapping[int, float]
    fit: CapacityFit

    @property
    def capacity(self) -> float:
        return DEFAULT_CAPACITY if self.fit.capacity is None else self.fit.capacity


def _duration(record) -> float | None:
    materialization = record.asset_materialization
    meta = materialization.metadata if materialization else {}
    value = meta.get("duration_s")
    return None if value is None else float(value.value)


def step_loads(materialized: Mapping[str, list]) -> StepLoads:
    """Every job's recent steps (the records `history.materializations` gave), each with
    the steps beside it, and the machine's capacity fitted from them."""
    ids: list[int] = []
    jobs: list[str] = []
    intervals: list[tuple[float, float]] = []
    for job, records in materialized.items():
        for record in records:
            took = _duration(record)
            if took is None or took <= 0:
                continue
            ids.append(record.storage_id)
            jobs.append(job)
            intervals.append((record.timestamp - took, record.timestamp))
    beside = beside_each(intervals)
    steps: dict[str, list[tuple[float, float]]] = {}
    for job, (start, end), load in zip(jobs, intervals, beside, strict=True):
        steps.setdefault(job, []).append((end - start, load))
    return StepLoads(dict(zip(ids, beside, strict=True)), fit_capacity(steps))


def in_flight(
    runs: Iterable,
    materialized: Mapping[str, list],
    now_s: float,
    run_cost_s: float,
    capacity: float,
) -> tuple[Work, ...]:
    """The jobs' runs in flight (run records: queued, starting or running) as the forecast
    sees them: each plan's steps not yet committed; the one under way with its work left
    from the time since the run's last commit (or its start and L) at today's sharing; a
    queued run starting after L. A run the sensor did not plan (by hand, a peer) counts
    as one step of L's length and no gain: it takes a share of the machine all the same."""
    records = list(runs)
    committed: dict[str, dict[str, float]] = {}  # run id -> job -> when it committed
    for job, found in materialized.items():
        for record in found:
            committed.setdefault(record.run_id, {})[job] = record.timestamp
    working = sum(1 for r in records if r.start_time is not None)
    stretch = slowdown(working - 1, capacity)
    works = []
    for record in records:
        run = record.dagster_run
        steps = planned_steps(run.tags, run.run_config)
        if not steps:
            steps = (("", run_cost_s, 0.0),)
        done = committed.get(run.run_id, {})
        left = [(cost, gain) for job, cost, gain in steps if job not in done]
        if not left:
            continue
        if record.start_time is None:
            works.append(Work(tuple(left), starts_in_s=run_cost_s))
            continue
        since = max(done.values(), default=record.start_time + run_cost_s)
        first_cost, first_gain = left[0]
        current = step_left_s(first_cost, max(0.0, now_s - since), stretch)
        works.append(Work(((current, first_gain), *left[1:])))
    return tuple(works)


def machine_budget(
    records: Iterable,
    materialized: Mapping[str, list],
    loads: StepLoads,
    now_s: float,
    run_cost_s: float,
    batch: bool = False,
) -> MachineBudget:
    """The budget a tick plans with: the fitted capacity and every run in flight (a
    clustering's or a hand run takes a share of the machine too), from the tick's records
    of the runs queued or running; with `batch`, counting the larger batch a run that
    waits takes."""
    capacity = loads.capacity
    runs = in_flight(records, materialized, now_s, run_cost_s, capacity)
    return MachineBudget(capacity, runs, batch=batch)


def machine_words(loads: StepLoads, in_flight: int) -> str:
    """What a tick under the budget planned with, for its log: the capacity and where it
    came from, and the runs in flight."""
    fit = loads.fit
    if fit.capacity is None:
        source = f"the default: {fit.samples} recent steps, too few at two loads to fit one"
    else:
        source = f"fitted from {fit.samples} recent steps, spread {fit.spread:.2f} in log seconds"
    return (
        f"machine's budget: {loads.capacity:.2f} runs' worth of work at once ({source}); "
        f"{in_flight} run(s) in flight"
    )
