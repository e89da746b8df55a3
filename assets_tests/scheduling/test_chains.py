"""Chains in the pure planner (METHOD 8): when one run over a root and its descendants
beats single runs, when it does not, and the rules that keep chains apart."""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshness_pipeline.scheduling.chains import MAX_CUTOFFS, Graph, plan_chains
from freshness_pipeline.scheduling.planner import (
    CostModel,
    JobState,
    PendingInput,
    PlanRequest,
    age,
    plan,
)

S = 1_000_000
NOW = 10_000 * S
CHEAP = CostModel(a_s=2.0, b_s_per_byte=0.0, c_s_per_file=0.0)
# The six market jobs' inputs (catalog/jobs.py), as the sensor fills JobState.inputs.
INPUTS = {
    "trade_aggr": ("trade_raw",),
    "price_aggr": ("price_raw",),
    "market_features": ("price_aggr", "trade_aggr"),
    "enriched_features": ("market_features",),
    "sector_vwap": ("enriched_features",),
    "industry_spike": ("enriched_features",),
}


def pipeline(
    marks: dict[str, int | None],
    cost: dict[str, CostModel] | None = None,
    pending: dict[str, tuple[PendingInput, ...]] | None = None,
) -> list[JobState]:
    """The six jobs at the given watermarks (raw tables included), each with its cost."""
    states = []
    for job, inputs in INPUTS.items():
        held = tuple((t, marks[t]) for t in inputs)
        known = [m for _, m in held if m is not None]
        cap = min(known) if len(known) == len(held) else None
        files = (pending or {}).get(job)
        if files is None and cap is not None and (marks[job] is None or cap > marks[job]):
            files = (PendingInput(f"{job}/in", 1000, (marks[job] or 0) + 1, cap),)
        states.append(
            JobState(
                job,
                marks[job],
                cap,
                files or (),
                (cost or {}).get(job, CHEAP),
                inputs=held,
            )
        )
    return states


def steady(lag_s: int = 20) -> dict[str, int | None]:
    """Raw tables at NOW - 5 s, every job `lag_s` behind them."""
    marks: dict[str, int | None] = {"trade_raw": NOW - 5 * S, "price_raw": NOW - 5 * S}
    return marks | {job: NOW - (5 + lag_s) * S for job in INPUTS}


def test_a_chain_beats_single_runs_when_the_launch_dominates():
    states = pipeline(steady())
    result = plan_chains(PlanRequest(states, 1, NOW, run_cost_s=5.0))
    (run,) = result.launches
    # one run: an aggregate as root, the other as co-root (market_features reads both, so
    # only with both can it move to the raw watermark), then everything below them
    assert set(run.jobs) == set(INPUTS)
    assert set(run.jobs[:2]) == {"trade_aggr", "price_aggr"}
    assert run.jobs[-2:] == ("sector_vwap", "industry_spike")
    assert run.run_cost_s == 5.0
    # G = the staleness every step removes; E = L once plus each step's own estimate
    assert run.gain_s == pytest.approx(sum(s.gain_s for s in run.chain)) == 6 * 20
    assert run.cost_s == pytest.approx(5.0 + sum(s.cost_s for s in run.chain)) == 5 + 6 * 2
    assert run.eta == pytest.approx(run.gain_s / run.cost_s)
    # six single runs would pay L six times: a lower eta for every one of them
    assert all(run.eta > step.gain_s / (5.0 + step.cost_s) for step in run.chain)
    # each descendant up to the smallest watermark its inputs will hold on its turn
    steps = {s.job: s for s in run.chain}
    mf = steps["market_features"]
    assert mf.cutoff_us == NOW - 5 * S  # both aggregates at the raw watermark
    assert set(mf.after) == {"trade_aggr", "price_aggr"}
    assert steps["enriched_features"].cutoff_us == mf.cutoff_us
    assert steps["enriched_features"].after == ("market_features",)
    assert steps["sector_vwap"].after == ("enriched_features",)
    # the roots carry their chosen files; the descendants read what their parents wrote
    assert steps["trade_aggr"].paths == ("trade_aggr/in",)
    assert steps["sector_vwap"].paths == ()
    # every other job says which run refreshes it (not "no pending data": it had none
    # before its parents' steps)
    reasons = {s.job: s.reason for s in result.skipped}
    assert reasons == {job: f"refreshed in the chain of {run.job}" for job in run.jobs[1:]}


def test_a_chain_is_not_chosen_where_a_descendant_costs_more_than_it_removes():
    costly = CostModel(a_s=400.0, b_s_per_byte=0.0)
    states = pipeline(steady(), cost={"market_features": costly})
    result = plan_chains(PlanRequest(states, 3, NOW, run_cost_s=1.0))
    (run,) = result.launches
    # market_features would remove 20 s in 400 s: the two aggregates share one launch and
    # stop there (and nothing below market_features can move without it)
    assert set(run.jobs) == {"trade_aggr", "price_aggr"}
    assert run.eta == pytest.approx(40 / (1.0 + 2 + 2))
    assert len(result.launches) == 1  # nothing else is worth a run


def test_without_chains_each_run_is_one_table_as_published():
    states = pipeline(steady())
    published = plan(PlanRequest(states, 3, NOW))
    assert all(c.jobs == (c.job,) and not c.chain for c in published.launches)


def test_chosen_chains_share_no_table_and_k_bounds_the_runs():
    marks = steady() | dict.fromkeys(
        ("enriched_features", "sector_vwap", "industry_spike"), NOW - 45 * S
    )
    costly = CostModel(a_s=400.0, b_s_per_byte=0.0)
    states = pipeline(marks, cost={"market_features": costly})
    result = plan_chains(PlanRequest(states, 3, NOW, run_cost_s=1.0))
    held = [job for c in result.launches for job in c.jobs]
    assert len(held) == len(set(held)), result.launches
    runs = {frozenset(c.jobs) for c in result.launches}
    assert runs == {
        frozenset({"trade_aggr", "price_aggr"}),
        frozenset({"enriched_features", "sector_vwap", "industry_spike"}),
    }
    # K bounds the runs: with one slot, only the better of the two
    one = plan_chains(PlanRequest(states, 1, NOW, run_cost_s=1.0))
    assert len(one.launches) == 1
    # and with one run in flight that holds nothing of these (job_runs), one slot is gone
    two = plan_chains(PlanRequest(states, 2, NOW, run_cost_s=1.0, job_runs=1))
    assert len(two.launches) == 1


def test_a_child_in_a_running_chain_is_not_launched_on_its_parents_old_commit():
    marks = steady() | {"trade_aggr": NOW - 15 * S, "price_aggr": NOW - 15 * S}
    states = pipeline(marks)
    # one run holds trade_aggr and then market_features and everything below it
    in_run = {"trade_aggr", "market_features", "enriched_features"}
    in_run |= {"sector_vwap", "industry_spike"}
    states = [replace(s, running=s.job in in_run) for s in states]
    result = plan_chains(PlanRequest(states, 3, NOW, run_cost_s=5.0, job_runs=1))
    # price_aggr runs alone: everything below it is the running run's to refresh
    assert [c.jobs for c in result.launches] == [("price_aggr",)]
    reasons = {s.job: s.reason for s in result.skipped}
    assert reasons["market_features"].startswith("already running"), reasons


def test_a_child_moves_on_a_parents_current_commit_when_no_run_refreshes_both():
    # trade_aggr is mid-run alone; market_features lags both aggregates' current commits
    marks = steady() | {"trade_aggr": NOW - 15 * S, "price_aggr": NOW - 15 * S}
    states = pipeline(marks)
    states = [replace(s, running=s.job == "trade_aggr") for s in states]
    result = plan_chains(PlanRequest(states, 3, NOW, run_cost_s=5.0))
    (run,) = result.launches  # the rest is below it or running
    assert run.job == "price_aggr" and "market_features" in run.jobs
    step = next(s for s in run.chain if s.job == "market_features")
    # up to the smaller input: trade_aggr's commit now, not what its run will write
    assert step.cutoff_us == NOW - 15 * S
    # and waiting for trade_aggr's run instead starves the tables below when the raw
    # tables commit apart: with K = 1 the old rule launched the aggregates alone in turn


def test_a_failing_descendant_is_left_out_and_its_sibling_still_chained():
    states = pipeline(steady())
    states = [
        replace(s, failed_runs=2, retry_after_us=NOW + 30 * S) if s.job == "sector_vwap" else s
        for s in states
    ]
    result = plan_chains(PlanRequest(states, 1, NOW, run_cost_s=5.0))
    (run,) = result.launches
    assert "sector_vwap" not in run.jobs and "industry_spike" in run.jobs
    reasons = {s.job: s.reason for s in result.skipped}
    assert reasons["sector_vwap"].startswith("backing off")


def test_a_descendant_whose_other_input_lags_runs_up_to_that_input():
    # price_aggr is up to date with its raw table at NOW - 15 s: nothing to run there
    marks = steady() | {"price_raw": NOW - 15 * S, "price_aggr": NOW - 15 * S}
    states = pipeline(marks)
    result = plan_chains(PlanRequest(states, 1, NOW, run_cost_s=5.0))
    (run,) = result.launches
    assert run.job == "trade_aggr" and "price_aggr" not in run.jobs
    mf = next(s for s in run.chain if s.job == "market_features")
    assert mf.cutoff_us == NOW - 15 * S  # min(trade_aggr's new u, price_aggr's mark)
    # while price_aggr is running in a run of its own, market_features still moves in
    # trade_aggr's run, as far as price_aggr's current commit
    busy = [replace(s, running=True) if s.job == "price_aggr" else s for s in states]
    (run,) = plan_chains(PlanRequest(busy, 2, NOW, run_cost_s=5.0)).launches
    assert "market_features" in run.jobs and "price_aggr" not in run.jobs
    mf = next(s for s in run.chain if s.job == "market_features")
    assert mf.cutoff_us == NOW - 15 * S


def test_max_benefit_chains_its_whole_set_and_pmb_may_take_a_subset():
    files = tuple(
        PendingInput(
            f"trade_raw/f{i}", 10 * 1024**2 if i == 3 else 1000, (i * 10) * S, (i * 10 + 9) * S
        )
        for i in range(4)
    )
    marks: dict[str, int | None] = {
        "trade_raw": 39 * S,
        "price_raw": 39 * S,
        **dict.fromkeys(INPUTS, 0),
    }
    marks["price_aggr"] = 39 * S
    costly_bytes = CostModel(a_s=1.0, b_s_per_byte=10.0 / 1024**2)
    states = pipeline(marks, cost={"trade_aggr": costly_bytes}, pending={"trade_aggr": files})
    states = [s for s in states]
    pmb = plan_chains(PlanRequest(states, 1, 40 * S, policy="pmb", run_cost_s=1.0)).launches[0]
    whole = plan_chains(
        PlanRequest(states, 1, 40 * S, policy="max_benefit", run_cost_s=1.0)
    ).launches[0]
    assert whole.job == "trade_aggr" and len(whole.files) == 4
    assert pmb.job == "trade_aggr" and len(pmb.files) == 3  # the big file left for later
    # both chain market_features up to the root's cutoff
    assert next(s for s in pmb.chain if s.job == "market_features").cutoff_us == 29 * S
    assert next(s for s in whole.chain if s.job == "market_features").cutoff_us == 39 * S


def test_the_search_is_bounded_on_a_long_candidate_table():
    files = tuple(PendingInput(f"trade_raw/f{i}", 1000, i * S + 1, (i + 1) * S) for i in range(300))
    marks: dict[str, int | None] = {"trade_raw": 300 * S, "price_raw": 300 * S}
    marks |= dict.fromkeys(INPUTS, 0)
    marks["price_aggr"] = 300 * S
    states = pipeline(marks, pending={"trade_aggr": files})
    run = plan_chains(PlanRequest(states, 1, 301 * S, run_cost_s=3.0)).launches[0]
    assert len(run.candidates) == 300 and MAX_CUTOFFS < 300
    assert run.job == "trade_aggr"


def test_a_cycle_in_the_inputs_is_refused():
    a = JobState("a", 0, 1, (), CHEAP, inputs=(("b", 1),))
    b = JobState("b", 0, 1, (), CHEAP, inputs=(("a", 1),))
    with pytest.raises(ValueError, match="cycle"):
        Graph.of([a, b])


def test_graph_orders_parents_first_and_lists_descendants():
    graph = Graph.of(pipeline(steady()))
    assert graph.descendants("trade_aggr") == (
        "market_features",
        "enriched_features",
        "sector_vwap",
        "industry_spike",
    )
    assert graph.descendants("sector_vwap") == ()
    assert graph.order.index("market_features") > graph.order.index("price_aggr")


def test_with_steps_side_by_side_a_wide_runs_e_counts_each_depth_once_per_lane():
    # Six tables: a run is at most two wide (the aggregates, then sector_vwap and
    # industry_spike), below MIN_WIDTH_AT_ONCE: the same plan with steps side by side.
    states = pipeline(steady())
    serial = plan_chains(PlanRequest(states, 1, NOW, run_cost_s=5.0)).launches[0]
    assert (
        plan_chains(PlanRequest(states, 1, NOW, run_cost_s=5.0, steps_at_once=3)).launches[0]
        == serial
    )
    # Two more views below enriched_features make four at one depth: E counts each depth's
    # work over its lanes: the two aggregates side by side (2 s), market_features and
    # enriched_features alone (2 s each), the four views' 8 s over three lanes.
    wide = {**INPUTS, "view_a": ("enriched_features",), "view_b": ("enriched_features",)}
    marks = steady() | {"view_a": NOW - 25 * S, "view_b": NOW - 25 * S}
    states = [
        JobState(
            job,
            marks[job],
            NOW - 5 * S,
            (PendingInput(f"{job}/in", 1000, 1, NOW),),
            CHEAP,
            inputs=tuple((t, marks[t]) for t in inputs),
        )
        for job, inputs in wide.items()
    ]
    run = plan_chains(PlanRequest(states, 1, NOW, run_cost_s=5.0, steps_at_once=3)).launches[0]
    assert len(run.jobs) == 8
    assert run.cost_s == pytest.approx(5.0 + 4 / 2 + 2 + 2 + 8 / 3)
    with pytest.raises(ValueError, match="steps_at_once"):
        plan_chains(PlanRequest(states, 1, NOW, steps_at_once=0))


def test_a_first_run_that_a_run_above_it_refreshes_hands_its_place_to_that_run():
    # The start of the real recovery campaign's seed 1 (pmb): both aggregates had committed
    # once, market_features had never run. first_runs_first put market_features' own run
    # first on those commits, and from then on its runs and the aggregates' alternated,
    # each on the other's old commits.
    marks: dict[str, int | None] = {"trade_raw": NOW - 5 * S, "price_raw": NOW - 5 * S}
    marks |= {"trade_aggr": NOW - 20 * S, "price_aggr": NOW - 20 * S}
    marks |= {j: None for j in INPUTS if j not in marks}
    states = [replace(s, pending_since_us=NOW - 10 * S) for s in pipeline(marks)]
    assert {s.job: s for s in states}["market_features"].pending  # runnable on them
    result = plan_chains(
        PlanRequest(states, 3, NOW, max_wait_s=120, first_runs_first=True, run_cost_s=5.0)
    )
    first = result.launches[0]
    assert first.job in ("trade_aggr", "price_aggr") and "market_features" in first.jobs
    assert first.carried_first_run == "market_features"
    assert first.aged == "first materialization of market_features in it"
    assert all(c.job != "market_features" for c in result.launches)
    # the root that handed its place on is not aged by its own first run
    handed = replace(first, job="market_features", chain=(), hands_wait_on=True)
    handed = replace(handed, carried_first_run="", aged="")
    other = replace(handed, job="trade_aggr", hands_wait_on=False)
    ranked = age([handed, other], states, 120, first_runs_first=True)
    assert [c.job for c in ranked] == ["market_features", "trade_aggr"]
    assert not any(c.aged for c in ranked)
    # without first_runs_first nothing is handed on
    plain = plan_chains(PlanRequest(states, 3, NOW, max_wait_s=120, run_cost_s=5.0)).launches
    assert not any(c.carried_first_run or c.hands_wait_on for c in plain)


def test_a_waiting_root_that_a_run_above_it_refreshes_hands_its_aging_to_that_run():
    # After an outage (the real recovery campaign's seed 1): the aggregates 300 s behind
    # their raw tables with a backlog (dear steps), market_features and the tables below
    # it 20 s behind the aggregates' old commits, all past the aging bound, market_features
    # longest. Aging used to launch market_features first on the old commits, taking it
    # and the tables below it out of the aggregates' runs.
    marks: dict[str, int | None] = {"trade_raw": NOW - 5 * S, "price_raw": NOW - 5 * S}
    marks |= {"trade_aggr": NOW - 300 * S, "price_aggr": NOW - 300 * S}
    marks |= {j: NOW - 320 * S for j in INPUTS if j not in marks}
    dear = CostModel(a_s=30.0, b_s_per_byte=0.0, c_s_per_file=0.0)
    since = {"market_features": NOW - 270 * S}
    states = [
        replace(s, pending_since_us=since.get(s.job, NOW - 150 * S))
        for s in pipeline(marks, {"trade_aggr": dear, "price_aggr": dear})
    ]
    assert {s.job: s for s in states}["market_features"].pending  # runnable on old commits
    first = plan_chains(PlanRequest(states, 3, NOW, max_wait_s=120, run_cost_s=5.0)).launches[0]
    assert first.job in ("trade_aggr", "price_aggr") and "market_features" in first.jobs
    assert (first.carried_from, first.carried_wait_s) == ("market_features", pytest.approx(270))
    # ranked by the wait it carries; the root that handed it on is not aged by its own
    other = replace(first, job="other", chain=(), carried_from="", carried_wait_s=0.0)
    handed = replace(other, job="market_features", waited_s=270.0, hands_wait_on=True)
    ranked = age([handed, other, first], states, 120)
    assert ranked[0] is not other and ranked[0].job == first.job
    assert ranked[0].aged == "market_features in it waited 270 s, past the 120 s bound"
    # then the other run, aged by its own wait; the root that handed its wait on comes last
    assert [c.job for c in ranked[1:]] == ["other", "market_features"]
    assert ranked[1].aged == "waited 150 s, past the 120 s bound" and not ranked[2].aged
    # without aging nothing is handed on
    plain = plan_chains(PlanRequest(states, 3, NOW, run_cost_s=5.0)).launches
    assert not any(c.carried_from or c.hands_wait_on for c in plain)
