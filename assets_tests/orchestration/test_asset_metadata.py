"""What a materialization records beside the data (no Spark): the sensor's decision the
run's few tags leave out, who launched it, and the table's staleness around the run."""

from __future__ import annotations

import dagster as dg

from assets_tests.orchestration.test_sensor import FakeHudiMetadata, FakeTable
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.definitions import defs
from freshness_pipeline.execution.run_config import ResolvedRun
from freshness_pipeline.lab.experiment.staleness import sample_tables
from freshness_pipeline.orchestration.assets import (
    build_job_assets,
    plan_metadata,
    staleness_metadata,
)
from freshness_pipeline.orchestration.resources import HudiSparkResource
from freshness_pipeline.scheduling.cost_model import FittedCost
from freshness_pipeline.scheduling.planner import MIB, CostModel, JobState, PendingInput, choose
from freshness_pipeline.scheduling.run_plan import RunPlan
from freshness_pipeline.scheduling.staleness_target import StalenessTarget, staleness_s
from freshness_pipeline.scheduling.units import US_PER_S

T0 = 1_700_000_000 * US_PER_S
TARGET = StalenessTarget(fail_s=300, warn_fraction=0.5)


def resolved() -> ResolvedRun:
    return ResolvedRun(
        "trade_aggr", T0, T0 + 5 * US_PER_S, T0 + 9 * US_PER_S, {"trade_raw": ()}, 7, 7 * MIB
    )


def test_a_sensor_run_records_the_decision_and_a_hand_run_says_so():
    files = [
        PendingInput(f"/lake/f{i}", MIB, T0 + i * US_PER_S + 1, T0 + (i + 1) * US_PER_S)
        for i in range(3)
    ]
    choice = choose(
        JobState("trade_aggr", T0, T0 + 3 * US_PER_S, tuple(files), CostModel(1, 0)), "pmb"
    )
    fit = FittedCost(CostModel(1.0, 0.0), "three_term", "prior", 0, None)
    planned = RunPlan.from_choice(choice, T0, fit)
    sensor = plan_metadata(resolved(), planned, [])
    assert sensor["launched_by"] == "freshness_sensor"
    assert sensor["cutoff"] == "2023-11-14 22:13:25.000 UTC"
    assert sensor["planned_files"] == "3 of 3" and sensor["planned_G_s"] == 3.0
    assert sensor["cost_model"].startswith("prior:three_term a=1.000s")
    assert sensor["sensor_plan"].value == planned.decision()
    hand = plan_metadata(resolved(), None, [])
    assert hand["launched_by"] == "hand" and "sensor_plan" not in hand


def test_staleness_around_a_run_is_the_samplers_definition():
    started, committed = T0 + 100 * US_PER_S, T0 + 130 * US_PER_S
    metadata = staleness_metadata(TARGET, T0, started, T0 + 120 * US_PER_S, committed)
    assert metadata["staleness_before_s"] == 100.0  # at the start: 100 s behind
    assert metadata["staleness_s"] == 10.0  # committed up to 10 s before it finished
    assert metadata["staleness_state"] == "pass"
    assert metadata["staleness_target_s"] == 300.0
    (sample,) = sample_tables(
        committed, T0, {"trade_aggr": T0 + 120 * US_PER_S}, jobs=["trade_aggr"]
    )
    assert (
        sample.staleness_s == metadata["staleness_s"] == staleness_s(committed, T0 + 120 * US_PER_S)
    )
    # A table that never had a watermark has no staleness to plot yet.
    assert staleness_metadata(TARGET, None, started, None, committed) == {
        "staleness_target_s": 300.0
    }


def test_staleness_is_never_negative():
    assert staleness_s(T0, T0 + US_PER_S) == 0.0


class FakeInput(FakeTable):
    """A fake table with the one more thing a run config check reads: its location."""

    @property
    def table_uri(self) -> str:
        return f"/lake/{self.name}"


class NoSpark(HudiSparkResource):
    @property
    def spark_session(self):
        raise AssertionError("a run with nothing to do started Spark")


def test_a_hand_launched_run_tags_itself_and_records_its_staleness():
    """Through Dagster (no Spark: the table is already at its input's watermark): the
    asset adds the hand-run tags to its own running run and records staleness."""
    lake = FakeHudiMetadata()
    lake.add(FakeInput("trade_raw", T0)).add(FakeInput("trade_aggr", T0))
    trade_aggr = next(
        a for a in build_job_assets(StalenessTarget()) if a.key == dg.AssetKey("trade_aggr")
    )
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            [trade_aggr],
            instance=instance,
            resources={"hudi_meta": lake, "spark": NoSpark.for_settings(load_settings())},
        )
        assert result.success
        tags = instance.get_run_by_id(result.run_id).tags
    assert tags["freshness/launched_by"] == "hand"
    assert tags["freshness/cutoff"] == "2023-11-14 22:13:20.000 UTC"
    assert tags["freshness/files"] == "0 of 0 files"
    assert "freshness/asset" not in tags  # the sensor's retry count is for its own runs
    meta = result.asset_materializations_for_node("trade_aggr")[0].metadata
    assert meta["launched_by"].value == "hand" and "nothing_to_do" in meta
    assert meta["staleness_s"].value > 0 and meta["staleness_state"].value == "fail"
    assert meta["staleness_target_s"].value == 300.0


def test_the_sensors_run_config_is_what_the_asset_accepts():
    files = [
        PendingInput(f"/lake/f{i}", MIB, T0 + i * US_PER_S + 1, T0 + (i + 1) * US_PER_S)
        for i in range(2)
    ]
    choice = choose(
        JobState("trade_aggr", T0, T0 + 2 * US_PER_S, tuple(files), CostModel(1, 0)), "pmb"
    )
    fit = FittedCost(CostModel(1.0, 0.0), "three_term", "prior", 0, None)
    planned = RunPlan.from_choice(choice, T0, fit)
    job = defs.resolve_implicit_global_asset_job_def()
    validated = dg.validate_run_config(job, planned.run_config())
    config = validated["ops"]["trade_aggr"]["config"]
    assert config["sensor_plan"] == planned.decision()
    assert RunPlan.from_tags(planned.tags(), validated) == planned
