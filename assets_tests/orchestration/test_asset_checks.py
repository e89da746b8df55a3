"""Every job's table has Dagster's freshness check, fed with the table's watermark: it fails
when the newest arrival the table reflects is older than the staleness target, however
recent its last commit."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.definitions import defs
from freshness_pipeline.orchestration.asset_checks import (
    CHECKS_SENSOR,
    LAST_UPDATED_KEY,
    freshness_checks,
    watermark_metadata,
)
from freshness_pipeline.orchestration.sensor import staleness_observations
from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.units import US_PER_S


def test_every_job_has_a_freshness_check_and_its_sensor_is_on():
    keys = {spec.key for check in defs.asset_checks for spec in check.check_specs}
    assert keys == {dg.AssetCheckKey(dg.AssetKey(job), "freshness_check") for job in JOBS}
    for check in defs.asset_checks:
        for spec in check.check_specs:
            params = spec.metadata["dagster/freshness_params"].data
            assert params["lower_bound_delta_seconds"] == 300.0  # the staleness target
            assert not spec.blocking  # a check never holds a run back
    sensor = next(s for s in defs.sensors if s.name == CHECKS_SENSOR)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING


def _evaluate(instance, checks) -> dict[str, dg.AssetCheckEvaluation]:
    targets = [dg.AssetSpec(spec.asset_key) for c in checks for spec in c.check_specs]
    result = dg.materialize(
        [*targets, *checks], instance=instance, selection=dg.AssetSelection.checks(*checks)
    )
    return {e.asset_key.to_user_string(): e for e in result.get_asset_check_evaluations()}


def test_the_check_reads_the_watermark_not_the_commit_time():
    checks = freshness_checks(["fresh", "stale", "observed"], StalenessTarget(fail_s=300))
    now_us = int(time.time() * US_PER_S)
    with dg.instance_for_test() as instance:
        # both committed just now; one reflects arrivals of 10 s ago, the other of 400 s ago
        for job, age_s in (("fresh", 10), ("stale", 400)):
            metadata = watermark_metadata(now_us - age_s * US_PER_S)
            instance.report_runless_asset_event(dg.AssetMaterialization(job, metadata=metadata))
        # a table committed long ago whose staleness the sensor observed since: the
        # observation's watermark is newer than the materialization's
        old = watermark_metadata(now_us - 900 * US_PER_S)
        instance.report_runless_asset_event(dg.AssetMaterialization("observed", metadata=old))
        (event,) = staleness_observations(
            now_us,
            None,
            {"observed": now_us - 20 * US_PER_S},
            {"observed": 20.0},
            StalenessTarget(fail_s=300),
        )
        instance.report_runless_asset_event(event)
        found = _evaluate(instance, checks)
    assert found["fresh"].passed and found["observed"].passed
    assert not found["stale"].passed
    assert found["stale"].severity == dg.AssetCheckSeverity.ERROR
    assert "overdue" in (found["stale"].description or "")


def test_a_table_without_a_watermark_carries_no_last_update():
    assert watermark_metadata(None) == {}
    stamp = watermark_metadata(1_800_000_000 * US_PER_S)[LAST_UPDATED_KEY]
    assert stamp.value == pytest.approx(1_800_000_000.0)
