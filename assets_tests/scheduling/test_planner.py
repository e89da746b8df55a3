"""The pure planner against METHOD section 3, including the published trade_aggr decision."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from freshness_pipeline.scheduling.planner import (
    MIB,
    POLICIES,
    POLICY_REGISTRY,
    Candidate,
    CostModel,
    Downstream,
    JobChoice,
    JobState,
    PendingInput,
    PlanRequest,
    SchedulingPolicy,
    Skip,
    choose,
    get_policy,
    plan,
    retry_backoff_s,
    unlocked_s,
)


def at(hms: str) -> int:
    h, m, s = (int(x) for x in hms.split(":"))
    return int(datetime(2024, 1, 2, h, m, s, tzinfo=UTC).timestamp() * 1_000_000)


# METHOD section 4: (u, cumulative scan MiB, published eta)
PUBLISHED = [
    ("22:35:00", 1.06, 0.119),
    ("22:35:16", 1.98, 0.204),
    ("22:35:30", 2.84, 0.278),
    ("22:35:43", 3.79, 0.345),
    ("22:35:56", 4.62, 0.412),
    ("22:36:12", 5.54, 0.494),
    ("22:36:23", 6.30, 0.549),
    ("22:36:35", 7.28, 0.608),
    ("22:36:50", 75.13, 0.481),
    ("22:37:16", 136.30, 0.454),
    ("22:37:49", 179.18, 0.478),
    ("22:38:21", 208.21, 0.514),
    ("22:38:42", 249.26, 0.505),
    ("22:42:22", 249.26, 0.552),
]
# E = a + b * scan. METHOD gives "about 183.6 s and about 1.204 s/MiB"; the published E
# column carries rounding (its rows deviate from any one line by up to 0.3 s), and
# a = 183.755 s, b = 1.2031 s/MiB is a pair within that "about" that reproduces every
# published eta to three decimals.
PUBLISHED_COST = CostModel(a_s=183.755, b_s_per_byte=1.2031 / MIB)


def published_state() -> JobState:
    """Files such that C(u_k) is exactly the first k files, as in the published table; the
    last candidate's file adds no bytes (13 and 14 scan the same 249.26 MiB)."""
    files = []
    previous_mib, previous_u = 0.0, at("22:34:38")
    for u, mib, _ in PUBLISHED:
        size = round((mib - previous_mib) * MIB)
        files.append(PendingInput(f"trade_raw/f{len(files) + 1}", size, previous_u + 1, at(u)))
        previous_mib, previous_u = mib, at(u)
    # The last row's G is 267 s, not 22:42:22 - t_done = 464 s: its cutoff is capped at the
    # upstream watermark (METHOD 5.3), t_done + 267 s = 22:39:05.
    cap = at("22:39:05")
    return JobState("trade_aggr", at("22:34:38"), cap, tuple(files), PUBLISHED_COST)


def test_published_trade_aggr_decision():
    choice = choose(published_state(), "pmb")
    assert not isinstance(choice, Skip)
    assert [round(c.eta, 3) for c in choice.candidates] == [eta for *_, eta in PUBLISHED]
    assert [round(c.gain_s) for c in choice.candidates][:3] == [22, 38, 52]
    assert choice.cutoff_us == at("22:36:35")  # u8
    assert len(choice.files) == 8 and choice.is_subset
    assert round(choice.eta, 3) == 0.608
    assert round(choice.scan_bytes / MIB, 2) == 7.28
    full = choice.candidates[-1]
    assert round(full.eta, 3) == 0.552 and full.cutoff_us == at("22:39:05")
    assert full.file_count == 14
    # "cut the scan by 97 % and raised eta by 10 %"
    assert round(1 - choice.scan_bytes / full.scan_bytes, 2) == 0.97
    assert round(choice.eta / full.eta - 1, 2) == 0.10


def test_published_tick_launches_trade_aggr_first():
    """Same tick: price_aggr 0.564 (21 of 21 files), enriched_features 0.579 (3 of 3)."""

    def whole(job: str, eta: float, files: int, mib: float) -> JobState:
        cost = CostModel(a_s=100.0, b_s_per_byte=0.0)
        t_done = at("22:30:00")
        u = t_done + int(eta * 100.0 * 1e6)
        pending = tuple(
            PendingInput(f"{job}/{i}", round(mib * MIB / files), t_done + 1, u)
            for i in range(files)
        )
        return JobState(job, t_done, u, pending, cost)

    jobs = [
        whole("price_aggr", 0.564, 21, 3522.42),
        whole("enriched_features", 0.579, 3, 529.76),
        published_state(),
        JobState("market_features", at("22:30:00"), at("22:30:00"), (), PUBLISHED_COST),
    ]
    result = plan(PlanRequest(jobs, k=3, now_us=at("22:42:30")))
    assert [c.job for c in result.launches] == ["trade_aggr", "enriched_features", "price_aggr"]
    assert {s.job: s.reason for s in result.skipped} == {"market_features": "no pending data"}


UNIT_COST = CostModel(1.0, 0.0)


def state(job="j", t_done=0, cap=10_000_000, files=(), cost=UNIT_COST, running=False):
    return JobState(job, t_done, cap, tuple(files), cost, running)


def f(path, size, tmin, tmax):
    return PendingInput(path, size, tmin, tmax)


def test_empty_inputs_and_running_are_explicit_skips():
    caught_up = state(t_done=10_000_000, cap=10_000_000)
    result = plan(PlanRequest([caught_up, state("r", running=True, files=[f("x", 1, 1, 2)])], 3, 0))
    assert result.nothing_to_do
    assert {s.reason for s in result.skipped} == {"no pending data", "already running"}


def test_inputs_moved_without_rows_gives_a_watermark_only_run():
    choice = choose(state(t_done=4_000_000, cap=10_000_000), "pmb")
    assert choice.files == () and choice.cutoff_us == 10_000_000
    assert choice.gain_s == pytest.approx(6.0) and choice.scan_bytes == 0


def test_zero_benefit_and_waiting_for_upstream():
    # everything pending lies at or below t_done after the cap: nothing past t_done
    capped = state(t_done=5_000_000, cap=5_000_000, files=[f("x", 1, 5_000_001, 9_000_000)])
    assert choose(capped, "pmb") == Skip(
        "j", "waiting for upstream: inputs hold nothing past t_done"
    )
    no_cap = state(cap=None, files=[f("x", 1, 1, 2)])
    assert "waiting for upstream" in choose(no_cap, "pmb").reason
    # a never-run job whose only pending arrival is a single instant gains nothing yet
    instant = state(t_done=None, files=[f("x", 1, 3_000_000, 3_000_000)])
    assert choose(instant, "pmb") == Skip("j", "zero benefit")


def test_upstream_cap_limits_the_cutoff():
    files = [f("a", 10, 1_000_000, 2_000_000), f("b", 10, 2_500_000, 9_000_000)]
    choice = choose(state(cap=4_000_000, files=files), "pmb")
    assert max(c.cutoff_us for c in choice.candidates) == 4_000_000
    assert all(c.cutoff_us <= 4_000_000 for c in choice.candidates)


def test_ties_prefer_the_later_cutoff():
    # eta equal for both cutoffs when cost grows in proportion to the gain
    cost = CostModel(0.0, 1.0 / 1e6)
    files = [f("a", 1_000_000, 1, 1_000_000), f("b", 1_000_000, 1_000_001, 2_000_000)]
    choice = choose(state(t_done=0, files=files, cost=cost), "pmb")
    assert choice.candidates[0].eta == pytest.approx(choice.candidates[1].eta)
    assert choice.cutoff_us == 2_000_000


def test_k_exhausted_and_ranking():
    files = [f("a", 1, 1, 5_000_000)]
    jobs = [
        state("slow", files=files, cost=CostModel(10.0, 0.0)),
        state("fast", files=files, cost=CostModel(1.0, 0.0)),
        state("busy", files=files, running=True),
    ]
    result = plan(PlanRequest(jobs, k=2, now_us=0))
    assert [c.job for c in result.launches] == ["fast"]
    assert Skip("slow", "no free slot (K=2, 1 running)") in result.skipped
    assert plan(PlanRequest(jobs, k=1, now_us=0)).launches == ()


def test_max_benefit_takes_everything_and_random_is_seeded():
    files = [f("a", 100, 1, 1_000_000), f("b", 10_000_000, 1_000_001, 2_000_000)]
    cost = CostModel(1.0, 1e-6)
    mb = choose(state(files=files, cost=cost), "max_benefit")
    pmb = choose(state(files=files, cost=cost), "pmb")
    assert mb.files == ("a", "b") and not mb.is_subset
    assert pmb.files == ("a",) and pmb.eta > mb.eta
    jobs = [state(str(i), files=files, cost=cost) for i in range(6)]
    one = plan(PlanRequest(jobs, 2, now_us=7, policy="random", seed=1))
    two = plan(PlanRequest(jobs, 2, now_us=7, policy="random", seed=1))
    assert one.launches == two.launches
    orders = {
        tuple(c.job for c in plan(PlanRequest(jobs, 6, now_us=t, policy="random")).launches)
        for t in range(8)
    }
    assert len(orders) > 1


def test_never_run_job_counts_staleness_from_oldest_pending():
    files = [f("a", 1, 3_000_000, 4_000_000)]
    choice = choose(state(t_done=None, files=files), "pmb")
    assert choice.gain_s == pytest.approx(1.0)


def test_bad_arguments_refused():
    with pytest.raises(ValueError, match="unknown policy"):
        plan(PlanRequest([], 3, 0, policy="greedy"))
    with pytest.raises(ValueError, match="K must be"):
        plan(PlanRequest([], 0, 0))
    # choose() used to treat an unknown name as PMB; now it refuses it as plan() does.
    with pytest.raises(ValueError, match="unknown policy"):
        choose(state(files=[f("a", 1, 1, 2)]), "greedy")


def test_pipeline_aware_benefit_counts_the_children_it_unblocks():
    files = [f("a", 1, 1, 5_000_000)]
    # Two equally fast upstream jobs; only "parent" has a child waiting on it.
    waiting = Downstream("child", t_done_us=0, other_inputs_cap_us=None)
    parent = replace(state("parent", files=files, cost=CostModel(2.0, 0.0)), downstream=(waiting,))
    loner = state("loner", files=files, cost=CostModel(1.9, 0.0))
    assert unlocked_s(parent, 5_000_000) == pytest.approx(5.0)
    assert [c.job for c in plan(PlanRequest([parent, loner], 1, 0, "pmb")).launches] == ["loner"]
    pipeline = plan(PlanRequest([parent, loner], 1, 0, "pmb_pipeline")).launches[0]
    assert pipeline.job == "parent" and pipeline.gain_s == pytest.approx(10.0)
    # A child held back by another input gains only up to that input's watermark, and
    # one that is already past this cutoff gains nothing.
    held = Downstream("child", t_done_us=0, other_inputs_cap_us=2_000_000)
    ahead = Downstream("other", t_done_us=9_000_000, other_inputs_cap_us=None)
    assert unlocked_s(replace(parent, downstream=(held, ahead)), 5_000_000) == pytest.approx(2.0)


def test_fixed_order_isolates_subset_choice_from_ordering():
    files = [f("a", 100, 1, 1_000_000), f("b", 10_000_000, 1_000_001, 2_000_000)]
    cost = CostModel(1.0, 1e-6)
    jobs = [
        replace(state("late", files=files, cost=CostModel(0.1, 0.0)), order=2),
        replace(state("first", files=files, cost=cost), order=0),
        replace(state("second", files=files, cost=cost), order=1),
    ]
    by_pmb = plan(PlanRequest(jobs, 2, 0, "pmb")).launches
    subsets = plan(PlanRequest(jobs, 2, 0, "fixed_order_pmb")).launches
    full = plan(PlanRequest(jobs, 2, 0, "fixed_order_full")).launches
    assert by_pmb[0].job == "late"  # eta decides under PMB
    assert [c.job for c in subsets] == [c.job for c in full] == ["first", "second"]
    assert all(c.files == ("a",) for c in subsets)
    assert all(c.files == ("a", "b") for c in full)


@pytest.mark.parametrize("policy", ["fixed_order_pmb", "fixed_order_full"])
def test_fixed_order_is_round_robin_so_no_job_starves(policy):
    """With every job runnable, each tick's K launches go to the jobs refreshed least
    recently (never refreshed first, in pipeline order): the end of the pipeline gets
    its turn even though the first K jobs are always runnable."""
    files = [f("a", 100, 1, 1_000_000)]
    jobs = [replace(state(f"j{i}", files=files), order=i) for i in range(5)]
    launched = []
    for tick in range(4):
        chosen = plan(PlanRequest(jobs, 2, tick, policy)).launches
        launched.append([c.job for c in chosen])
        # the chosen jobs refresh at this tick, so they go to the back of the line
        jobs = [replace(j, last_refresh_us=tick) if j.job in launched[-1] else j for j in jobs]
    assert launched == [["j0", "j1"], ["j2", "j3"], ["j4", "j0"], ["j1", "j2"]]


@pytest.mark.parametrize(
    ("failed_runs", "wait_s"), [(0, 0.0), (1, 5.0), (2, 10.0), (3, 20.0), (5, 60.0), (40, 60.0)]
)
def test_retry_backoff_doubles_up_to_a_minute(failed_runs, wait_s):
    assert retry_backoff_s(failed_runs) == wait_s


def test_a_failed_job_waits_out_its_backoff_then_runs_again():
    failed = replace(
        state(t_done=1_000_000, cap=9_000_000, files=[f("x", 1, 1_000_001, 9_000_000)]),
        failed_runs=2,
        retry_after_us=30_000_000,
    )
    waiting = plan(PlanRequest([failed], 3, now_us=20_000_000))
    assert waiting.nothing_to_do
    assert waiting.skipped[0].reason == "backing off after 2 failed run(s): retry in 10 s"
    again = plan(PlanRequest([failed], 3, now_us=30_000_000))
    assert [c.job for c in again.launches] == [failed.job]


def test_the_registry_holds_the_six_experiment_policies_in_order():
    assert (
        POLICIES
        == tuple(POLICY_REGISTRY)
        == (
            "pmb",
            "max_benefit",
            "random",
            "pmb_pipeline",
            "fixed_order_pmb",
            "fixed_order_full",
        )
    )
    assert all(isinstance(p, SchedulingPolicy) for p in POLICY_REGISTRY.values())
    assert all(get_policy(name) is POLICY_REGISTRY[name] for name in POLICIES)
    # Only pmb_pipeline makes the callers read the children's watermarks.
    assert [n for n in POLICIES if get_policy(n).uses_downstream] == ["pmb_pipeline"]


def test_an_unknown_policy_is_refused_with_the_accepted_names():
    with pytest.raises(ValueError, match="unknown policy 'nope'") as refused:
        get_policy("nope")
    assert all(repr(name) in str(refused.value) for name in POLICIES)


@dataclass(frozen=True)
class SmallestCutoffFirst(SchedulingPolicy):
    """A policy no production code knows: the smallest subset, the fewest bytes first,
    with the downstream bonus."""

    uses_downstream: ClassVar[bool] = True

    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        return rows[0]

    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        return sorted(choices, key=lambda c: (c.scan_bytes, c.job))


def test_a_new_policy_is_one_class_and_one_registry_line(monkeypatch):
    monkeypatch.setitem(POLICY_REGISTRY, "smallest_first", SmallestCutoffFirst())
    files = [f("a", 100, 1, 1_000_000), f("b", 10_000_000, 1_000_001, 2_000_000)]
    cost = CostModel(1.0, 1e-6)
    waiting = Downstream("child", t_done_us=0, other_inputs_cap_us=None)
    big = state("big", files=[f("c", 50_000, 1, 5_000_000)], cost=cost)
    small = replace(state("small", files=files, cost=cost), downstream=(waiting,))
    result = plan(PlanRequest([big, small], 1, 0, "smallest_first"))
    assert result.policy == "smallest_first"
    [launch] = result.launches
    # The toy's rank and pick decide: PMB launches "big", whose one file has more eta.
    assert plan(PlanRequest([big, small], 1, 0, "pmb")).launches[0].job == "big"
    assert launch.job == "small" and launch.policy == "smallest_first"
    assert launch.files == ("a",) and launch.cutoff_us == 1_000_000
    # uses_downstream reached candidates(): G is own 1 s plus 1 s unlocked in the child.
    assert launch.gain_s == pytest.approx(2.0)
    assert result.skipped == (Skip("big", "no free slot (K=1, 0 running)"),)


def test_job_runs_count_slots_when_one_run_holds_several_jobs():
    """A chained run holds several running jobs in one run-queue slot."""
    files = [f("a", 1, 1, 5_000_000)]
    jobs = [
        state("fast", files=files, cost=CostModel(1.0, 0.0)),
        state("slow", files=files, cost=CostModel(10.0, 0.0)),
        state("chain_head", files=files, running=True),
        state("chain_tail", files=files, running=True),
    ]
    assert plan(PlanRequest(jobs, k=3, now_us=0)).free_slots == 1  # one slot per running job
    held = plan(PlanRequest(jobs, k=3, now_us=0, job_runs=1))
    assert held.free_slots == 2
    assert [c.job for c in held.launches] == ["fast", "slow"]
    with pytest.raises(ValueError, match="job_runs"):
        plan(PlanRequest(jobs, k=3, now_us=0, job_runs=-1))
