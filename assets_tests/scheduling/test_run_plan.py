"""The run plan record: what the sensor writes into run config and tags is exactly what
the asset, the report and the experiment read back."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from freshness_pipeline.scheduling.chains import chain_cost_s, chain_width, steps_at_once_for
from freshness_pipeline.scheduling.cost_model import FittedCost
from freshness_pipeline.scheduling.planner import (
    MIB,
    ChainStep,
    CostModel,
    JobState,
    PendingInput,
    choose,
)
from freshness_pipeline.scheduling.run_plan import (
    ASSET_TAG,
    PLAN_FIELD,
    VISIBLE_TAGS,
    RunPlan,
    StepPlan,
    hand_run_tags,
    plan_tags,
    planned_steps,
    run_config_of,
)
from freshness_pipeline.scheduling.units import US_PER_S


def a_choice(t_done: int | None):
    files = [
        PendingInput(
            f"/lake/trade_raw/A/f{i}.parquet", (i + 1) * MIB, i * US_PER_S + 1, (i + 1) * US_PER_S
        )
        for i in range(4)
    ]
    state = JobState(
        "trade_aggr", t_done, 4 * US_PER_S, tuple(files), CostModel(2.0, 0.5 / MIB, 0.1)
    )
    return choose(state, "pmb")


FIT = FittedCost(CostModel(2.0, 0.5 / MIB, 0.1), "three_term", "fit", 12, 0.42)


@pytest.mark.parametrize("t_done", [None, 0])
def test_round_trip_through_tags_and_config(t_done):
    choice = a_choice(t_done)
    plan = RunPlan.from_choice(choice, t_done, FIT, attempt=2)
    back = RunPlan.from_tags(plan.tags(), plan.run_config())
    assert back is not None
    assert back.asset == "trade_aggr" and back.files == choice.files
    assert back.cutoff_us == choice.cutoff_us and back.t_done_us == t_done
    assert back.file_count == len(choice.files) and back.scan_bytes == choice.scan_bytes
    assert back.attempt == 2 and back.policy == "pmb"
    assert back.cost_a_s == 2.0 and back.cost_b_s_per_mib == pytest.approx(0.5)
    assert back.cost_c_s_per_file == pytest.approx(0.1) and back.cost_model == "fit:three_term"
    assert back.eta == pytest.approx(choice.eta, rel=1e-5)
    assert back.gain_s == pytest.approx(choice.gain_s, abs=1e-3)
    # The experiment records the flat decision without the file list: all but the files.
    recorded = plan_tags(plan.tags(), plan.run_config())
    no_files = RunPlan.from_tags(recorded)
    assert no_files is not None and no_files.files == ()
    assert no_files == replace(back, files=())


def test_a_run_carries_a_few_readable_tags_and_the_rest_in_config():
    plan = RunPlan.from_choice(a_choice(0), 0, FIT)
    tags = plan.tags()
    assert set(tags) <= set(VISIBLE_TAGS) and len(tags) == 5
    assert tags["freshness/cutoff"] == "1970-01-01 00:00:03.000 UTC"  # u = 3 s here
    assert tags["freshness/files"] == f"{plan.file_count} of {plan.pending_files} files"
    assert tags["freshness/launched_by"] == "freshness_sensor"
    # The exact cutoff stays an integer in run config; the tags alone are not a plan.
    assert plan.op_config()["cutoff_u"] == str(plan.cutoff_us)
    assert plan.op_config()[PLAN_FIELD]["u_us"] == str(plan.cutoff_us)
    assert RunPlan.from_tags(tags) is None
    retry = RunPlan.from_choice(a_choice(0), 0, FIT, attempt=3).tags()
    assert retry["freshness/retry"] == "3 after failed runs" and len(retry) == 6


def test_the_run_logs_its_decision_in_words():
    plan = RunPlan.from_choice(a_choice(0), 0, FIT, attempt=1)
    assert plan.describe() == (
        f"planned by freshness_sensor (pmb, retry 1): {plan.file_count} of "
        f"{plan.pending_files} files up to 1970-01-01 00:00:03.000 UTC, to remove "
        f"{plan.gain_s:.1f} s of staleness in about {plan.cost_s:.1f} s (eta {plan.eta:.3g}; "
        "cost model fit:three_term, 12 runs, rmse 0.42s)"
    )


def test_a_hand_run_is_tagged_but_has_no_plan():
    tags = hand_run_tags(1_700_000_000_123_456, 4, 4)
    assert tags == {
        "freshness/launched_by": "hand",
        "freshness/cutoff": "2023-11-14 22:13:20.123 UTC",
        "freshness/files": "4 of 4 files",
    }
    assert set(tags) <= set(VISIBLE_TAGS)
    assert RunPlan.from_tags(tags) is None


def test_arrival_sources_travel_in_the_plan_and_mark_an_approximation():
    ours = RunPlan.from_choice(a_choice(0), 0, FIT, arrival_sources=("freshness_keys",))
    assert ours.decision()["arrival_approximate"] == "false"
    theirs = RunPlan.from_choice(
        a_choice(0), 0, FIT, arrival_sources=("completion_time", "arrival_column")
    )
    tags = plan_tags(theirs.tags(), theirs.run_config())
    assert tags["freshness/arrival_source"] == "arrival_column,completion_time"
    assert tags["freshness/arrival_approximate"] == "true"
    back = RunPlan.from_tags(tags)
    assert back is not None and back.arrival_sources == ("arrival_column", "completion_time")


def test_config_carries_the_contract_and_the_planned_watermark():
    plan = RunPlan.from_choice(a_choice(0), 0, FIT)
    op = plan.run_config()["ops"]["trade_aggr"]["config"]
    assert op == {
        "files": list(plan.files),
        "cutoff_u": str(plan.cutoff_us),
        "t_done_planned": "0",
        PLAN_FIELD: plan.decision(),
    }
    never = RunPlan.from_choice(a_choice(None), None, FIT)
    assert never.op_config()["t_done_planned"] == "none"


def test_run_key_changes_with_attempt_and_decision_only():
    first = RunPlan.from_choice(a_choice(0), 0, FIT)
    assert first.run_key == RunPlan.from_choice(a_choice(0), 0, FIT).run_key
    assert first.run_key != RunPlan.from_choice(a_choice(0), 0, FIT, attempt=1).run_key
    assert first.run_key != RunPlan.from_choice(a_choice(None), None, FIT).run_key


def test_runs_the_sensor_did_not_plan_have_no_plan():
    assert RunPlan.from_tags({}) is None
    assert RunPlan.from_tags({ASSET_TAG: "trade_aggr"}) is None  # launched some other way
    assert plan_tags({"dagster/x": "1", ASSET_TAG: "a"}) == {ASSET_TAG: "a"}


def test_runs_recorded_with_every_field_as_a_tag_still_read():
    # Before the split every field was a `freshness/*` tag; the experiment's stored
    # runs.json files hold that shape.
    plan = RunPlan.from_choice(a_choice(0), 0, FIT, attempt=1)
    old = {ASSET_TAG: "trade_aggr", "freshness/policy": "pmb"}
    old |= {f"freshness/{k}": v for k, v in plan.decision().items()}
    new = RunPlan.from_tags(plan.tags(), plan.run_config())
    assert new is not None and new.attempt == 1
    assert RunPlan.from_tags(old) == replace(new, files=())


def test_older_records_without_exact_bytes_or_coefficients_still_read():
    plan0 = RunPlan.from_choice(a_choice(0), 0, FIT)
    tags = plan_tags(plan0.tags(), plan0.run_config())
    for name in ("scan_bytes", "cost_a_s", "cost_b_s_per_mib", "cost_c_s_per_file", "attempt"):
        del tags[f"freshness/{name}"]
    plan = RunPlan.from_tags(tags)
    assert plan is not None and plan.attempt == 0 and math.isnan(plan.cost_a_s)
    assert abs(plan.scan_bytes - RunPlan.from_choice(a_choice(0), 0, FIT).scan_bytes) < MIB / 1000


def _chained(*steps: tuple[str, tuple[str, ...]]):
    """a_choice's root with `steps` (job, its parents in the chain) after it."""
    base = a_choice(0)
    root = ChainStep(base.job, base.cutoff_us, 1.0, 1.0, 0, 0)
    rest = tuple(ChainStep(job, base.cutoff_us, 1.0, 1.0, 0, 0, after) for job, after in steps)
    return replace(base, chain=(root, *rest))


def test_a_chain_is_as_wide_as_its_most_steps_at_one_depth():
    assert chain_width(a_choice(0).chain) == 1
    spine = _chained(("market", ("trade_aggr",)), ("enriched", ("market",)))
    assert chain_width(spine.chain) == 1
    views = _chained(
        ("market", ("trade_aggr",)), *((f"v{i}", ("market",)) for i in range(4)), ("w", ("v0",))
    )
    assert chain_width(views.chain) == 4
    # a step below two parents goes one below the deeper one
    assert chain_width(_chained(("a", ("trade_aggr",)), ("b", ("trade_aggr", "a"))).chain) == 1


def test_steps_go_side_by_side_only_in_a_wide_chain_and_up_to_the_limit():
    wide = _chained(*((f"v{i}", ("trade_aggr",)) for i in range(5)))
    narrow = _chained(("v0", ("trade_aggr",)), ("v1", ("trade_aggr",)))
    assert steps_at_once_for(wide.chain, 1) == 1  # FRESHNESS_STEPS_AT_ONCE=1: never
    assert steps_at_once_for(wide.chain, 3) == 3 and steps_at_once_for(wide.chain, 8) == 5
    assert steps_at_once_for(narrow.chain, 3) == 1  # two side by side do not pay for the processes
    plan = RunPlan.from_choice(wide, 0, FIT)
    config = run_config_of(plan, (), steps_at_once_for(wide.chain, 3))
    assert config["execution"]["config"]["multiprocess"]["max_concurrent"] == 3
    assert "execution" not in run_config_of(plan, (), 1)


def test_a_runs_e_counts_its_steps_side_by_side_by_depth():
    views = _chained(*((f"v{i}", ("trade_aggr",)) for i in range(4)))  # root, then 4 at once
    assert chain_cost_s(views.chain, 3.0) == 3.0 + 5 * 1.0  # one after another
    # at most 3 lanes: the root alone, then the four views' 4 s of work over 3 lanes
    assert chain_cost_s(views.chain, 3.0, 3) == pytest.approx(3.0 + 1.0 + 4 / 3)
    assert chain_cost_s(views.chain, 3.0, 8) == pytest.approx(3.0 + 1.0 + 1.0)
    narrow = _chained(("v0", ("trade_aggr",)), ("v1", ("trade_aggr",)))
    assert chain_cost_s(narrow.chain, 3.0, 3) == 3.0 + 3 * 1.0  # too narrow: in order


def test_a_sensor_runs_planned_steps_read_back_in_the_order_they_commit():
    base = a_choice(0)
    root = ChainStep(base.job, base.cutoff_us, 30.0, 4.0, 0, 0)
    below = (
        ChainStep("market", base.cutoff_us, 20.0, 6.0, 0, 0, ("trade_aggr",)),
        ChainStep("enriched", base.cutoff_us, 10.0, 5.0, 0, 0, ("market",)),
    )
    chain = (root, *below)
    choice = replace(
        base, chain=chain, gain_s=60.0, cost_s=chain_cost_s(chain, 2.5), run_cost_s=2.5
    )
    plan = RunPlan.from_choice(choice, 0, FIT)
    steps = StepPlan.of_chain(choice, {"market": 0, "enriched": 0})
    config = run_config_of(plan, steps)
    found = planned_steps(plan.tags(), config)
    assert [job for job, _, _ in found] == ["trade_aggr", "market", "enriched"]
    assert [cost for _, cost, _ in found] == pytest.approx([4.0, 6.0, 5.0])
    assert [gain for _, _, gain in found] == pytest.approx([30.0, 20.0, 10.0])
    # one table a run: its own E and G; a run the sensor did not plan: nothing
    single = RunPlan.from_choice(base, 0, FIT)
    assert planned_steps(single.tags(), single.run_config()) == (
        (base.job, pytest.approx(base.cost_s), pytest.approx(base.gain_s)),
    )
    assert planned_steps(hand_run_tags(None, 3, 3)) == ()
