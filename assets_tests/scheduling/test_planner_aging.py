"""Aging in the planner: no runnable job waits without bound, and where
nobody waits past the bound the plan is PMB's, to the choice."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assets_tests.scheduling.test_planner import at, published_state
from freshness_pipeline.scheduling.cost_model import FittedCost
from freshness_pipeline.scheduling.planner import (
    CostModel,
    JobState,
    PendingInput,
    Plan,
    PlanRequest,
    plan,
    waited_s,
)
from freshness_pipeline.scheduling.run_plan import AGING_TAG, VISIBLE_TAGS, RunPlan, plan_tags
from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.tick_report import describe_tick
from freshness_pipeline.scheduling.units import US_PER_S

T0 = 1_800_000_000 * US_PER_S
UPSTREAM = ("trade_aggr", "price_aggr", "market_features", "enriched_features")
DOWNSTREAM = "sector_vwap"
FAST = CostModel(a_s=1.0, b_s_per_byte=0.0)  # upstream: eta in the hundreds
SLOW = CostModel(a_s=100.0, b_s_per_byte=0.0)  # downstream: eta well below 1
PRIOR = FittedCost(SLOW, "three_term", "prior", 0, None)


def job(
    name: str,
    t_done_us: int | None,
    cap_us: int,
    cost: CostModel = FAST,
    *,
    running: bool = False,
    last_refresh_us: int | None = None,
    pending_since_us: int | None = None,
) -> JobState:
    """A job with one pending file covering (t_done, cap]."""
    low = (t_done_us if t_done_us is not None else cap_us - 10 * US_PER_S) + 1
    pending = (PendingInput(f"/lake/{name}/f.parquet", 1000, low, cap_us),)
    return JobState(
        name,
        t_done_us,
        cap_us,
        pending,
        cost,
        running,
        last_refresh_us=last_refresh_us,
        pending_since_us=pending_since_us,
    )


def starving_machine(
    max_wait_s: float | None, run_s: int = 60, tick_s: int = 10, horizon_s: int = 3600
) -> list[float]:
    """The demo's situation, closed loop: four upstream jobs always have pending work with a
    far larger eta than the downstream job, K = 3, every run takes `run_s`. The downstream
    job's input committed at T0 (its pending work appeared then) and its cap never moves.
    Returns the downstream job's wait at each of its launches within `horizon_s`."""
    ends: dict[str, int] = {
        name: T0 + (i + 1) * 20 * US_PER_S for i, name in enumerate(UPSTREAM[:3])
    }
    last_refresh: dict[str, int] = {name: T0 for name in (*UPSTREAM, DOWNSTREAM)}
    waits: list[float] = []
    for now in range(T0, T0 + horizon_s * US_PER_S, tick_s * US_PER_S):
        for name, end in list(ends.items()):
            if end <= now:
                del ends[name]
                last_refresh[name] = end
        states = [
            job(
                name,
                now - 200 * US_PER_S,
                now,
                running=name in ends,
                last_refresh_us=last_refresh[name],
                pending_since_us=now - 200 * US_PER_S,
            )
            for name in UPSTREAM
        ]
        states.append(
            job(
                DOWNSTREAM,
                T0 - 60 * US_PER_S,  # materialized once before: not a first materialization
                T0 - 50 * US_PER_S,
                SLOW,
                running=DOWNSTREAM in ends,
                last_refresh_us=last_refresh[DOWNSTREAM],
                pending_since_us=T0,
            )
        )
        result = plan(PlanRequest(states, k=3, now_us=now, max_wait_s=max_wait_s))
        for choice in result.launches:
            if choice.job == DOWNSTREAM:
                waits.append(choice.waited_s)
            ends[choice.job] = now + run_s * US_PER_S
    return waits


def test_without_aging_the_downstream_job_waits_for_ever():
    assert starving_machine(max_wait_s=None) == []


@pytest.mark.parametrize(("max_wait_s", "run_s"), [(60, 60), (120, 60), (120, 190), (300, 120)])
def test_with_aging_it_runs_within_the_bound_plus_a_run(max_wait_s, run_s):
    """Each time its wait passes the bound, the downstream job takes the next slot that
    frees: after at most one more run (and a tick), and again after every later bound."""
    waits = starving_machine(max_wait_s=max_wait_s, run_s=run_s)
    assert waits, "the downstream job never ran"
    assert all(max_wait_s < w <= max_wait_s + run_s + 10 for w in waits)
    # It runs again and again, not once: the hour holds a launch per bound-plus-run or so.
    assert len(waits) >= 3600 // (max_wait_s + 2 * run_s + 10)


def test_the_upstream_jobs_keep_their_order_between_aged_launches():
    """Aging hands out a slot only when someone waits past the bound: most launches still
    go to the upstream jobs by eta."""
    aged = len(starving_machine(max_wait_s=300, run_s=60))
    # 3 slots turning over every 60 s for an hour: about 180 launches, a handful aged.
    assert 0 < aged <= 3600 // 300


def published_tick(pending_since_us: int | None) -> list[JobState]:
    """The published tick (test_planner), each job's pending work committed at
    `pending_since_us` and each job refreshed at 22:30 (so it has materialized)."""

    def whole(name: str, eta: float, files: int, mib: float) -> JobState:
        cost = CostModel(a_s=100.0, b_s_per_byte=0.0)
        t_done = at("22:30:00")
        u = t_done + int(eta * 100.0 * 1e6)
        pending = tuple(
            PendingInput(f"{name}/{i}", round(mib * 1024 * 1024 / files), t_done + 1, u)
            for i in range(files)
        )
        return JobState(name, t_done, u, pending, cost)

    jobs = [
        whole("price_aggr", 0.564, 21, 3522.42),
        whole("enriched_features", 0.579, 3, 529.76),
        published_state(),
        JobState("market_features", at("22:30:00"), at("22:30:00"), (), published_state().cost),
    ]
    return [
        replace(j, last_refresh_us=at("22:30:00"), pending_since_us=pending_since_us) for j in jobs
    ]


@pytest.mark.parametrize(
    ("since", "max_wait_s", "k"),
    [
        ("22:41:00", 120, 3),  # committed 90 s before the tick: under the bound
        ("22:41:00", 120, 1),  # the same with one slot: still eta's choice
        (None, 10_000, 2),  # no commit time (the oldest arrival stands in), a long bound
        ("22:30:00", 900, 1),  # waiting 750 s, bound 900 s
    ],
)
def test_aging_changes_nothing_when_nobody_waits_past_the_bound(since, max_wait_s, k):
    jobs = published_tick(None if since is None else at(since))
    now = at("22:42:30")
    published: Plan = plan(PlanRequest(jobs, k=k, now_us=now))
    with_aging = plan(
        PlanRequest(jobs, k=k, now_us=now, max_wait_s=max_wait_s, first_runs_first=True)
    )
    assert with_aging == published
    assert not any(c.aged for c in with_aging.ranked)
    if k == 3:
        assert [c.job for c in with_aging.launches] == [
            "trade_aggr",
            "enriched_features",
            "price_aggr",
        ]


def test_the_bound_counts_from_the_pending_work_not_from_the_start():
    """A downstream job last refreshed long ago whose input committed only now: its wait
    starts at that commit, so it is not aged until the bound has passed since then."""
    commit = T0 + 3600 * US_PER_S
    upstream = [
        job(n, commit - 200 * US_PER_S, commit + 200 * US_PER_S, running=True)
        for n in UPSTREAM[1:3]
    ]
    # trade_aggr's run ended a minute after the commit: it has waited less than the child
    rival = job(
        "trade_aggr",
        commit - 200 * US_PER_S,
        commit + 200 * US_PER_S,
        last_refresh_us=commit + 60 * US_PER_S,
    )

    child = job(
        DOWNSTREAM, T0, T0 + 5 * US_PER_S, SLOW, last_refresh_us=T0, pending_since_us=commit
    )
    early = plan(PlanRequest([*upstream, rival, child], 3, commit + 60 * US_PER_S, max_wait_s=120))
    assert [c.job for c in early.launches] == ["trade_aggr"]
    late = plan(PlanRequest([*upstream, rival, child], 3, commit + 121 * US_PER_S, max_wait_s=120))
    assert [c.job for c in late.launches] == [DOWNSTREAM]
    assert late.launches[0].aged == "waited 121 s, past the 120 s bound"


@pytest.mark.parametrize(
    ("state", "now", "expected"),
    [
        # since its input committed (later than its last run)
        (
            job(
                "a", T0, T0 + 50 * US_PER_S, last_refresh_us=T0, pending_since_us=T0 + 30 * US_PER_S
            ),
            100,
            70,
        ),
        # since its last run ended (its work was pending before and during that run)
        (
            job(
                "a", T0, T0 + 50 * US_PER_S, last_refresh_us=T0 + 40 * US_PER_S, pending_since_us=T0
            ),
            100,
            60,
        ),
        # no commit time: the oldest pending arrival (T0 + 1 us) stands in
        (job("a", T0, T0 + 50 * US_PER_S), 100, 100),
        # a running job does not wait
        (job("a", T0, T0 + 50 * US_PER_S, running=True, pending_since_us=T0), 100, 0),
    ],
)
def test_how_long_a_job_has_waited(state, now, expected):
    assert waited_s(state, T0 + now * US_PER_S) == pytest.approx(expected, abs=1e-3)


def test_a_first_materialization_takes_the_next_slot():
    """With `first_runs_first`, a table that was never materialized goes ahead of eta's
    order at once (every table exists within a few runs of the start), and says so."""
    now = T0 + 100 * US_PER_S
    busy = [job(n, now - 100 * US_PER_S, now, running=True) for n in UPSTREAM[:2]]
    rival = job("market_features", now - 100 * US_PER_S, now, last_refresh_us=now - 5 * US_PER_S)
    child = job(DOWNSTREAM, None, now - 90 * US_PER_S, SLOW, pending_since_us=now - 20 * US_PER_S)
    assert [c.job for c in plan(PlanRequest([*busy, rival, child], 3, now)).launches] == [
        "market_features"
    ]
    # The bound alone leaves it to eta: it has waited only 20 s.
    bound_only = plan(PlanRequest([*busy, rival, child], 3, now, max_wait_s=120))
    assert [c.job for c in bound_only.launches] == ["market_features"]
    aged = plan(PlanRequest([*busy, rival, child], 3, now, max_wait_s=120, first_runs_first=True))
    assert [c.job for c in aged.launches] == [DOWNSTREAM]
    alone = plan(PlanRequest([*busy, rival, child], 3, now, first_runs_first=True))
    assert alone.launches == aged.launches
    assert aged.launches[0].aged == "first materialization, waited 20 s"
    # The rival, left waiting, says how long it has waited (not past the bound).
    report = describe_tick(aged, {}, StalenessTarget(), ["market_features", DOWNSTREAM])
    rival_line, child_line = report.lines
    assert "no free slot (K=3, 2 running), eta " in rival_line
    assert rival_line.endswith("ranks 2nd, waited 5 s; no watermark yet (never refreshed)")
    assert "ahead of eta's order by aging: first materialization, waited 20 s)" in child_line
    assert report.summary.startswith(f"launch {DOWNSTREAM} (aging); ")


def test_an_aged_job_still_waiting_says_it_is_first_in_line():
    now = T0 + 1000 * US_PER_S
    busy = [job(n, now - 100 * US_PER_S, now, running=True) for n in UPSTREAM[:3]]
    child = job(DOWNSTREAM, T0, T0 + 5 * US_PER_S, SLOW, last_refresh_us=T0, pending_since_us=T0)
    result = plan(PlanRequest([*busy, child], 3, now, max_wait_s=120))
    assert result.launches == ()
    (line,) = describe_tick(result, {}, StalenessTarget(), [DOWNSTREAM]).lines
    assert "no free slot (K=3, 3 running)" in line
    assert "ranks 1st, waited 1000 s, past the 120 s bound;" in line


def test_the_run_carries_aging_in_a_tag_and_in_its_decision():
    now = T0 + 1000 * US_PER_S
    busy = [job(n, now - 100 * US_PER_S, now, running=True) for n in UPSTREAM[:2]]
    rival = job("market_features", now - 100 * US_PER_S, now, last_refresh_us=now)
    child = job(DOWNSTREAM, T0, T0 + 5 * US_PER_S, SLOW, last_refresh_us=T0, pending_since_us=T0)
    (choice,) = plan(PlanRequest([*busy, rival, child], 3, now, max_wait_s=120)).launches
    assert choice.job == DOWNSTREAM
    run = RunPlan.from_choice(choice, T0, PRIOR)
    assert AGING_TAG in VISIBLE_TAGS
    assert run.tags()[AGING_TAG] == "waited 1000 s, past the 120 s bound"
    assert run.decision()["waited_s"] == "1000.000"
    assert "by aging: waited 1000 s, past the 120 s bound" in run.describe()
    back = RunPlan.from_tags(run.tags(), run.run_config())
    assert back is not None and back.aged == run.aged and back.waited_s == 1000.0
    assert RunPlan.from_tags(plan_tags(run.tags(), run.run_config())) == replace(back, files=())
    # A run eta's order chose carries no aging tag.
    (plain,) = plan(PlanRequest([*busy, rival], 3, now, max_wait_s=120)).launches
    assert AGING_TAG not in RunPlan.from_choice(plain, T0, PRIOR).tags()


@pytest.mark.parametrize("bad", [0, -5])
def test_a_non_positive_bound_is_refused(bad):
    with pytest.raises(ValueError, match="max_wait_s must be positive"):
        plan(PlanRequest([], 3, T0, max_wait_s=bad))
