"""Who launches the six jobs (FRESHNESS_AUTOMATION, automation.py): the definitions each
mode builds, and that in `dagster_eager` it is Dagster's own evaluator that decides, from
the raw tables' observations. No Spark: Dagster's evaluator runs on an ephemeral instance."""

from __future__ import annotations

import json
from dataclasses import dataclass

import dagster as dg
import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.scheduler_settings import AUTOMATIONS
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.definitions import build_definitions
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.orchestration.asset_checks import CHECKS_SENSOR, EXACTNESS_SCHEDULE
from freshness_pipeline.orchestration.automation import (
    AUTOMATION_REGISTRY,
    build_observation_sensor,
    changed_tables,
    cron_for,
    get_automation,
    interval_tick,
    observed_tables,
)
from freshness_pipeline.orchestration.resources import HudiMetadataResource


def defs_for(**env: str) -> dg.Definitions:
    return build_definitions(load_settings(env))


def conditions(defs: dg.Definitions) -> dict[str, str | None]:
    graph = defs.resolve_asset_graph()
    return {
        key.to_user_string(): (
            graph.get(key).automation_condition.get_label()
            if graph.get(key).automation_condition
            else None
        )
        for key in graph.get_all_asset_keys()
    }


def instigators(defs: dg.Definitions) -> tuple[list[str], list[str]]:
    """The sensors and schedules besides the freshness checks' sensor and the exactness
    checks' schedule, which every automation has (the tables' checks, like their
    clustering, are not who launches)."""
    repo = defs.get_repository_def()
    sensors = sorted(s.name for s in repo.sensor_defs)
    assert CHECKS_SENSOR in sensors
    sensors.remove(CHECKS_SENSOR)
    schedules = sorted(s.name for s in repo.schedule_defs)
    assert EXACTNESS_SCHEDULE in schedules
    schedules.remove(EXACTNESS_SCHEDULE)
    return sensors, schedules


def test_the_registry_and_the_settings_name_the_same_modes():
    assert tuple(AUTOMATION_REGISTRY) == AUTOMATIONS
    with pytest.raises(ValueError, match="unknown automation 'cron'.*dagster_eager"):
        get_automation("cron")


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("FRESHNESS_AUTOMATION", "eager", "freshness_sensor, dagster_eager, interval"),
        ("FRESHNESS_INTERVAL_S", "2", "an integer of at least 5"),
        ("FRESHNESS_INTERVAL_S", "half a minute", "an integer of at least 5"),
    ],
)
def test_bad_automation_settings_are_named(name: str, value: str, accepted: str):
    with pytest.raises(SettingsError) as caught:
        load_settings({name: value})
    assert name in str(caught.value) and repr(value) in str(caught.value)
    assert accepted in str(caught.value)


def test_default_is_our_sensor_and_no_dagster_automation():
    defs = defs_for()
    # the raw tables' clustering is maintenance: it runs whoever launches the jobs
    assert instigators(defs) == (["clustering_sensor", "freshness_sensor"], [])
    assert set(conditions(defs).values()) == {None}
    unclustered = defs_for(FRESHNESS_CLUSTERING_TABLES="none")
    assert instigators(unclustered) == (["freshness_sensor"], [])


def test_eager_puts_dagster_eager_on_the_six_and_turns_our_sensor_off():
    defs = defs_for(FRESHNESS_AUTOMATION="dagster_eager", FRESHNESS_TICK_S="5")
    dg.Definitions.validate_loadable(defs)
    found = conditions(defs)
    assert {job: found[job] for job in JOBS} == dict.fromkeys(JOBS, "eager")
    assert {found[t] for t in observed_tables()} == {None}  # sources: observed, not run
    assert instigators(defs) == (
        ["clustering_sensor", "eager_automation_sensor", "raw_observation_sensor"],
        [],
    )
    sensor = defs.get_repository_def().get_sensor_def("eager_automation_sensor")
    assert isinstance(sensor, dg.AutomationConditionSensorDefinition)
    # evaluated by Dagster's asset daemon, running from the start, every tick
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert sensor.minimum_interval_seconds == 5
    # AUTO_MATERIALIZE: evaluated in the asset daemon, not in our code server
    assert sensor.sensor_type.value == "AUTO_MATERIALIZE"


def test_interval_below_a_minute_is_a_sensor_and_whole_minutes_a_schedule():
    short = defs_for(FRESHNESS_AUTOMATION="interval", FRESHNESS_INTERVAL_S="30")
    dg.Definitions.validate_loadable(short)
    assert instigators(short) == (["clustering_sensor", "interval_sensor"], [])
    sensor = short.get_repository_def().get_sensor_def("interval_sensor")
    assert sensor.minimum_interval_seconds == 30
    assert sensor.job_name == "all_six_jobs"
    long = defs_for(FRESHNESS_AUTOMATION="interval", FRESHNESS_INTERVAL_S="120")
    assert instigators(long) == (["clustering_sensor"], ["interval_schedule"])
    schedule = long.get_repository_def().get_schedule_def("interval_schedule")
    assert schedule.cron_schedule == "*/2 * * * *"
    job = long.get_repository_def().get_job("all_six_jobs")
    assert {key.to_user_string() for key in job.asset_layer.executable_asset_keys} == set(JOBS)
    assert set(conditions(long).values()) == {None}


@pytest.mark.parametrize(
    ("seconds", "cron"),
    [
        (60, "* * * * *"),
        (300, "*/5 * * * *"),
        (3600, "*/60 * * * *"),
        (30, None),
        (90, None),
        (420, None),
        (7200, None),
    ],
)
def test_cron_only_for_whole_minutes_dividing_an_hour(seconds: int, cron: str | None):
    assert cron_for(seconds) == cron


def test_observed_tables_are_what_the_six_read_and_dagster_does_not_materialize():
    assert observed_tables() == ("company_master", "price_raw", "trade_raw")


def test_only_tables_with_a_new_commit_are_reported():
    seen = {"price_raw": "001", "trade_raw": "002"}
    latest = {"price_raw": "001", "trade_raw": "003", "company_master": "000", "x": None}
    assert changed_tables(seen, latest) == {"trade_raw": "003", "company_master": "000"}
    assert changed_tables(seen, {"price_raw": "001", "trade_raw": "002"}) == {}


@dataclass
class FakeCommit:
    instant: str


class FakeTable:
    def __init__(self, instant: str | None, watermark: int | None) -> None:
        self.instant, self.watermark = instant, watermark

    def latest_commit(self) -> FakeCommit | None:
        return FakeCommit(self.instant) if self.instant else None

    def watermark_us(self) -> int | None:
        return self.watermark


TABLES: dict[str, FakeTable] = {}


class FakeHudiMeta(HudiMetadataResource):
    def table(self, table: str):  # type: ignore[override]
        if table not in TABLES:
            raise TableNotFound(f"no table {table}")
        return TABLES[table]


def test_observation_sensor_reports_each_new_commit_once():
    sensor = build_observation_sensor(5)
    TABLES.clear()
    context = dg.build_sensor_context(resources={"hudi_meta": FakeHudiMeta()})
    assert isinstance(sensor(context), dg.SkipReason)  # nothing ingested yet
    TABLES.update(
        price_raw=FakeTable("20261123180000000", 1_000),
        trade_raw=FakeTable("20261123180001000", 2_000),
        company_master=FakeTable("20261123170000000", None),
    )
    result = sensor(context)
    events = {e.asset_key.to_user_string(): e for e in result.asset_events}
    assert set(events) == {"price_raw", "trade_raw", "company_master"}
    assert all(isinstance(e, dg.AssetObservation) for e in events.values())
    assert events["trade_raw"].metadata["watermark_us"].value == 2_000
    assert events["trade_raw"].tags["dagster/data_version"] == "20261123180001000"
    cursor = result.cursor
    TABLES["trade_raw"] = FakeTable("20261123180011000", 12_000)
    again = sensor(dg.build_sensor_context(cursor=cursor, resources={"hudi_meta": FakeHudiMeta()}))
    assert [e.asset_key.to_user_string() for e in again.asset_events] == ["trade_raw"]
    assert json.loads(again.cursor)["trade_raw"] == "20261123180011000"


def test_interval_waits_only_for_the_first_commit_of_the_inputs():
    TABLES.clear()
    TABLES["price_raw"] = FakeTable("1", 1)
    waiting = interval_tick(FakeHudiMeta())
    assert isinstance(waiting, dg.SkipReason)
    assert "company_master, trade_raw" in (waiting.skip_message or "")
    TABLES.update(trade_raw=FakeTable("2", 2), company_master=FakeTable("0", None))
    assert isinstance(interval_tick(FakeHudiMeta()), dg.RunRequest)


def requested(result) -> set[str]:
    return {r.key.to_user_string() for r in result.results if r.true_subset.size}


def observe(instance: dg.DagsterInstance, version: str, *tables: str) -> None:
    # As raw_observation_sensor does: the newest commit's instant as the data version. For
    # an observable source Dagster counts an observation as an update only when the data
    # version changed (CachingInstanceQueryer._asset_partition_versions_updated_after_cursor).
    for table in tables:
        instance.report_runless_asset_event(
            dg.AssetObservation(asset_key=table, tags={"dagster/data_version": version})
        )


def test_dagster_eager_decides_from_the_raw_tables_observations():
    """Dagster's own evaluator (the one its asset daemon runs) on our asset graph: nothing
    before the raw tables are observed, all six once they are, nothing again until a raw
    table changes, then only what depends on it."""
    defs = defs_for(FRESHNESS_AUTOMATION="dagster_eager")
    with dg.DagsterInstance.ephemeral() as instance:
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert first.total_requested == 0  # inputs never observed: any_deps_missing
        observe(instance, "1", "price_raw", "trade_raw", "company_master")
        all_six = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=first.cursor
        )
        assert requested(all_six) == set(JOBS)
        for job in JOBS:  # what the run Dagster launches for them records
            instance.report_runless_asset_event(dg.AssetMaterialization(asset_key=job))
        quiet = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, cursor=all_six.cursor
        )
        assert quiet.total_requested == 0
        observe(instance, "1", "trade_raw")  # observed again, but the same commit
        same = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=quiet.cursor)
        assert same.total_requested == 0
        observe(instance, "2", "trade_raw")
        trades = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=same.cursor)
        # trade_aggr and, as it will be requested in the same tick, everything below it
        assert requested(trades) == set(JOBS) - {"price_aggr"}
