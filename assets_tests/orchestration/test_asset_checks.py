"""Every job's table has Dagster's freshness check, fed with the table's watermark: it fails
when the newest arrival the table reflects is older than the staleness target, however
recent its last commit."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.definitions import build_definitions, defs
from freshness_pipeline.orchestration.asset_checks import (
    CHECKS_SENSOR,
    EXACTNESS_CHECK,
    EXACTNESS_JOB,
    EXACTNESS_SCHEDULE,
    LAST_UPDATE_CHECK,
    LAST_UPDATED_KEY,
    freshness_checks,
    pipeline_check_keys,
    watermark_metadata,
)
from freshness_pipeline.orchestration.automation import job_asset_selection
from freshness_pipeline.orchestration.sensor import staleness_observations
from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.units import US_PER_S


def test_every_job_has_a_freshness_check_and_its_sensor_is_on():
    keys = {spec.key for check in defs.asset_checks for spec in check.check_specs}
    assert keys == {
        dg.AssetCheckKey(dg.AssetKey(job), name)
        for job in JOBS
        for name in (LAST_UPDATE_CHECK, EXACTNESS_CHECK)
    }
    for check in defs.asset_checks:
        for spec in check.check_specs:
            if spec.name == EXACTNESS_CHECK:
                assert not spec.blocking
                continue
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


def test_exactness_runs_on_its_own_schedule_never_in_the_pipelines_runs():
    repo = defs.get_repository_def()
    schedule = repo.get_schedule_def(EXACTNESS_SCHEDULE)
    # there, stopped until the user sets a cron or starts it in the UI
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    job = repo.get_job(EXACTNESS_JOB)
    assert job.asset_layer.asset_graph.asset_check_keys >= {
        dg.AssetCheckKey(dg.AssetKey(j), EXACTNESS_CHECK) for j in JOBS
    }
    # the job materializes nothing: its run only checks
    assert not job.asset_layer.executable_asset_keys
    # the sensor's runs and the peers' jobs carry the freshness checks only
    assert pipeline_check_keys(["trade_aggr"]) == [
        dg.AssetCheckKey(dg.AssetKey("trade_aggr"), LAST_UPDATE_CHECK)
    ]
    selected = job_asset_selection(JOBS).resolve_checks(repo.asset_graph)
    assert selected == set(pipeline_check_keys(JOBS))

    on_cron = build_definitions(load_settings({"FRESHNESS_EXACTNESS_SCHEDULE": "*/20 * * * *"}))
    scheduled = on_cron.get_repository_def().get_schedule_def(EXACTNESS_SCHEDULE)
    assert scheduled.default_status == dg.DefaultScheduleStatus.RUNNING
    assert scheduled.cron_schedule == "*/20 * * * *"

    none = build_definitions(load_settings({"FRESHNESS_EXACTNESS_SAMPLE": "0"}))
    names = {spec.name for check in none.asset_checks for spec in check.check_specs}
    assert names == {LAST_UPDATE_CHECK}
    assert not [s for s in none.get_repository_def().schedule_defs if s.name == EXACTNESS_SCHEDULE]


def test_a_bad_exactness_schedule_is_refused_before_anything_starts():
    with pytest.raises(Exception, match="FRESHNESS_EXACTNESS_SCHEDULE"):
        load_settings({"FRESHNESS_EXACTNESS_SCHEDULE": "every hour"})


def test_the_exactness_metadata_says_what_the_sampled_keys_were_recomputed_from():
    from freshness_pipeline.execution.sampled_check import ExactnessResult, KeyVerdict
    from freshness_pipeline.orchestration.asset_checks import exactness_metadata

    verdicts = (KeyVerdict(("AAPL",), "equal"),)
    result = ExactnessResult(
        "market_features", None, ("symbol",), verdicts, filtered_below=("price_aggr", "trade_aggr")
    )
    metadata = exactness_metadata(result)
    assert metadata["filtered_below"] == "price_aggr, trade_aggr"
    assert metadata["keys_judged"] == 1
    whole = exactness_metadata(ExactnessResult("trade_aggr", None, ("symbol",), verdicts))
    assert "filtered_below" not in whole
