"""The machine as the budget (METHOD 10): the processor-sharing forecast, the launch rule it
decides, and the chain planner holding a run back with the tick's reason."""

from __future__ import annotations

import pytest

from freshness_pipeline.scheduling.budget import (
    MachineBudget,
    Work,
    beside_each,
    fit_capacity,
    forecast,
    judge,
    slowdown,
    step_left_s,
    weighted_commits,
)
from freshness_pipeline.scheduling.chains import plan_chains
from freshness_pipeline.scheduling.planner import (
    CostModel,
    JobState,
    PendingInput,
    PlanRequest,
    plan,
)

S = 1_000_000
NOW = 10_000 * S


def test_a_run_alone_commits_each_step_after_its_own_work():
    run = Work(((4.0, 10.0), (6.0, 5.0)), starts_in_s=2.0)
    assert forecast([run], capacity=1.0) == [[pytest.approx(6.0), pytest.approx(12.0)]]
    assert weighted_commits([run], 1.0) == pytest.approx(10 * 6 + 5 * 12)


def test_runs_beyond_the_capacity_share_it_and_runs_within_it_do_not():
    a, b = Work(((4.0, 1.0),)), Work(((8.0, 1.0),))
    # one run's worth of speed: both at half speed until a ends at 8, then b alone
    assert forecast([a, b], 1.0) == [[pytest.approx(8.0)], [pytest.approx(12.0)]]
    # two runs' worth: each at its own speed
    assert forecast([a, b], 2.0) == [[pytest.approx(4.0)], [pytest.approx(8.0)]]
    # a run that has not started yet takes no share: b alone until 4, then both share
    late = Work(((4.0, 1.0),), starts_in_s=4.0)
    assert forecast([late, b], 1.0) == [[pytest.approx(12.0)], [pytest.approx(12.0)]]


def test_an_idle_machine_or_one_with_room_launches():
    candidate = Work(((10.0, 100.0),))
    assert judge(candidate, [], 1.0).launch
    verdict = judge(candidate, [Work(((10.0, 100.0),))], capacity=2.0)
    assert verdict.launch and verdict.reason == ""
    assert verdict.now_s < verdict.later_s  # it commits sooner and slows nobody


def test_a_run_as_long_as_the_one_saturating_the_machine_waits_for_it():
    """Sharing delays the run in flight by the whole candidate and brings the candidate
    forward by nothing: under processor sharing waiting always wins then."""
    in_flight = Work(((10.0, 100.0),))
    verdict = judge(Work(((10.0, 100.0),)), [in_flight], capacity=1.0)
    assert not verdict.launch
    assert verdict.wait_s == pytest.approx(10.0)
    assert verdict.now_s - verdict.later_s == pytest.approx(100 * 10)
    assert verdict.reason.startswith("held for the machine: beside 1 run(s) in flight")


def test_a_short_run_that_removes_much_goes_beside_a_long_one_that_removes_little():
    long_run = Work(((60.0, 20.0),))
    short = Work(((5.0, 200.0),))
    assert judge(short, [long_run], 1.0).launch
    # the other way round, the long run waits for the short one
    assert not judge(long_run, [short], 1.0).launch


def test_the_budget_counts_runs_chosen_earlier_in_the_tick():
    budget = MachineBudget(1.0)
    first = Work(((10.0, 100.0),))
    assert budget.judge(first).launch
    assert not budget.judge(Work(((10.0, 100.0),)), chosen=[first]).launch


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="capacity"):
        MachineBudget(0.0)
    with pytest.raises(ValueError, match="capacity"):
        forecast([Work(((1.0, 1.0),))], -1.0)
    with pytest.raises(ValueError, match="negative"):
        Work(((-1.0, 1.0),))
    with pytest.raises(ValueError, match="starts_in_s"):
        Work(((1.0, 1.0),), starts_in_s=-2.0)


def test_work_left_of_a_working_step():
    assert step_left_s(10.0, elapsed_s=4.0) == pytest.approx(6.0)
    # at twice the load it did half as much
    assert step_left_s(10.0, elapsed_s=4.0, slowdown=2.0) == pytest.approx(8.0)
    # past its estimate: a tenth left, not zero
    assert step_left_s(10.0, elapsed_s=30.0) == pytest.approx(1.0)


def _two_independent_jobs(waited: tuple[int, int] = (0, 0)) -> list[JobState]:
    """Two jobs on raw tables of their own, each 100 s behind, each step 10 s."""
    cost = CostModel(a_s=10.0, b_s_per_byte=0.0)
    states = []
    for (job, raw), since in zip((("a", "raw_a"), ("b", "raw_b")), waited, strict=True):
        pending = (PendingInput(f"{job}/f", 1000, NOW - 100 * S, NOW - S),)
        states.append(
            JobState(
                job,
                NOW - 100 * S,
                NOW - S,
                pending,
                cost,
                inputs=((raw, NOW - S),),
                pending_since_us=NOW - since * S,
            )
        )
    return states


def test_the_planner_holds_a_run_the_machine_cannot_afford_and_says_why():
    states = _two_independent_jobs()
    # one slot free of K, one run in flight saturating the machine for 10 s more
    busy = MachineBudget(1.0, (Work(((10.0, 500.0),)),))
    request = PlanRequest(states, 3, NOW, run_cost_s=0.0, job_runs=1, machine=busy)
    result = plan_chains(request)
    assert result.launches == ()
    reasons = {skip.job: skip.reason for skip in result.skipped}
    assert reasons["a"].startswith("held for the machine")
    assert reasons["b"].startswith("held for the machine")
    # the published rule fills the free slots
    filled = plan_chains(PlanRequest(states, 3, NOW, run_cost_s=0.0, job_runs=1))
    assert {c.job for c in filled.launches} == {"a", "b"}
    # with room on the machine only the second of the two waits (it would share with the first)
    idle = plan_chains(PlanRequest(states, 3, NOW, run_cost_s=0.0, machine=MachineBudget(1.0)))
    assert len(idle.launches) == 1
    waiting = {skip.job: skip.reason for skip in idle.skipped}
    (other,) = {"a", "b"} - {idle.launches[0].job}
    assert waiting[other].startswith("held for the machine")


def test_a_run_past_the_aging_bound_launches_whatever_the_machine():
    states = _two_independent_jobs(waited=(0, 400))
    busy = MachineBudget(1.0, (Work(((10.0, 500.0),)),))
    request = PlanRequest(
        states, 3, NOW, run_cost_s=0.0, job_runs=1, machine=busy, max_wait_s=120.0
    )
    result = plan_chains(request)
    # b, second in eta's order (a tie, by name), waited past the bound: it launches
    assert [c.job for c in result.launches] == ["b"]
    assert "past the 120 s bound" in result.launches[0].aged
    assert {s.job: s.reason for s in result.skipped}["a"].startswith("held for the machine")


def _steps(capacity: float, alone: dict[str, float], loads=(0, 1, 2, 3)) -> dict:
    return {
        job: [(seconds * slowdown(beside, capacity), float(beside)) for beside in loads] * 2
        for job, seconds in alone.items()
    }


@pytest.mark.parametrize("capacity", [1.0, 1.5, 2.0, 3.0])
def test_the_capacity_the_steps_stretched_by_is_found(capacity):
    fit = fit_capacity(_steps(capacity, {"a": 4.0, "b": 10.0}))
    assert fit.capacity == pytest.approx(capacity)
    assert fit.samples == 16 and fit.spread == pytest.approx(0.0, abs=1e-9)


def test_no_capacity_from_too_few_steps_or_one_load():
    assert fit_capacity(_steps(2.0, {"a": 4.0}, loads=(0, 1))).capacity is None  # 4 steps
    assert fit_capacity({"a": [(5.0, 1.0)] * 10}).capacity is None  # one load only


def test_steps_that_never_stretched_give_the_smallest_capacity_they_allow():
    # up to two beside, never slower: at least 3 runs' worth, and no more is assumed
    fit = fit_capacity({"a": [(5.0, 0.0), (5.0, 1.0), (5.0, 2.0)] * 3})
    assert fit.capacity == pytest.approx(3.0)


def test_the_steps_beside_each_step():
    # a: 0-10, b: 5-15 (half of a, half of b), c: 20-30 alone, d: 0-0 (no length)
    found = beside_each([(0.0, 10.0), (5.0, 15.0), (20.0, 30.0), (0.0, 0.0)])
    assert found == [pytest.approx(0.5), pytest.approx(0.5), 0.0, 0.0]
    # a long step with two short ones inside it, one after the other
    assert beside_each([(0.0, 100.0), (10.0, 20.0), (30.0, 40.0)]) == [
        pytest.approx(0.2),
        pytest.approx(1.0),
        pytest.approx(1.0),
    ]


def test_one_table_a_run_holds_and_ages_the_same_way():
    busy = MachineBudget(1.0, (Work(((10.0, 500.0),)),))
    states = _two_independent_jobs(waited=(400, 0))
    # a, first in eta's order (a tie, by name) and past the bound, launches whatever the
    # machine; its launch says no aging (the policy's order gave it the slot anyway)
    request = PlanRequest(states, 3, NOW, job_runs=1, machine=busy, max_wait_s=120.0)
    result = plan(request)
    assert [c.job for c in result.launches] == ["a"] and result.launches[0].aged == ""
    assert {s.job: s.reason for s in result.skipped}["b"].startswith("held for the machine")
    # without the bound both wait for the machine
    held = plan(PlanRequest(states, 3, NOW, job_runs=1, machine=busy))
    assert held.launches == ()


def test_a_run_that_waits_takes_the_data_meanwhile_and_pays_its_fixed_work_once():
    run = Work(((6.0, 200.0), (2.0, 0.0)), starts_in_s=1.0, fixed_s=(4.0, 2.0))
    # 2 s of variable work for 200 s of gain: 0.01 s a second of gain
    grown = run.grown(10.0)
    assert grown.steps == (pytest.approx((6.1, 210.0)), (2.0, 0.0))
    assert grown.starts_in_s == pytest.approx(11.0)
    follow = run.follow_up(10.0, starts_in_s=20.0)
    assert follow.steps == (pytest.approx((4.1, 10.0)), (0.0, 0.0))
    assert follow.starts_in_s == 20.0
    with pytest.raises(ValueError, match="one value a step"):
        Work(((1.0, 1.0),), fixed_s=(1.0, 1.0))
    with pytest.raises(ValueError, match="fixed work"):
        Work(((1.0, 1.0),), fixed_s=(-1.0,))


def test_the_larger_batch_holds_a_run_whose_work_is_mostly_fixed():
    """Beside a run that ends in 10 s, a short run launched now gains more than it costs
    that run, but it leaves the data of those 10 s to a second run that pays its fixed
    work again: counting that, one larger run after the first is better."""
    in_flight = [Work(((10.0, 100.0),))]
    fixed = Work(((4.0, 100.0),), fixed_s=(4.0,))
    assert judge(fixed, in_flight, 1.0).launch
    held = judge(fixed, in_flight, 1.0, batch=True)
    assert not held.launch and held.wait_s == pytest.approx(10.0)
    assert "with its next run for the data meanwhile" in held.reason
    assert "than one larger run starting in 10 s" in held.reason
    # mostly variable work: the second run costs little more than its data, so it launches
    variable = Work(((4.0, 100.0),), fixed_s=(0.2,))
    assert judge(variable, in_flight, 1.0, batch=True).launch
    # an idle machine, or a run with no fixed work known: as without the batch
    assert judge(fixed, [], 1.0, batch=True).launch
    unknown = Work(((4.0, 100.0),))
    assert judge(unknown, in_flight, 1.0, batch=True) == judge(unknown, in_flight, 1.0)
    assert MachineBudget(1.0, tuple(in_flight), batch=True).judge(fixed).reason == held.reason


def test_the_planner_gives_the_larger_batch_each_jobs_fixed_work():
    states = [
        JobState(
            "a",
            NOW - 100 * S,
            NOW,
            (PendingInput("a1", 1, NOW - 100 * S, NOW - 10 * S),),
            CostModel(a_s=4.0, b_s_per_byte=0.0),
        )
    ]
    busy = (Work(((10.0, 100.0),)),)
    budget = plan(PlanRequest(states, 3, NOW, chains=False, machine=MachineBudget(1.0, busy)))
    assert [c.job for c in budget.launches] == ["a"]
    batch = MachineBudget(1.0, busy, batch=True)
    held = plan(PlanRequest(states, 3, NOW, chains=False, machine=batch))
    assert held.launches == ()
    assert "one larger run" in next(s.reason for s in held.skipped if s.job == "a")
