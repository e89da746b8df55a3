"""Who launches the six jobs: one `AutomationMode` per value of FRESHNESS_AUTOMATION.

- `freshness_sensor` (default): our sensor, deciding by FRESHNESS_POLICY (PMB, ...).
- `dagster_eager`: what a Dagster user would pick: `AutomationCondition.eager()` on each
  of the six assets, evaluated by Dagster's own asset daemon through an
  `AutomationConditionSensorDefinition` (the daemon, not our code, decides what runs and
  when). Eager reacts to new materializations *or observations* of an asset's
  dependencies; the raw tables are observable source assets that ingestion (a separate
  process) writes without telling Dagster, so `raw_observation_sensor` reports an
  `AssetObservation` of a raw table whenever its newest Hudi commit changes (a timeline
  listing, no run, no Spark): the same thing a user would add so that Dagster sees data
  arriving from outside. Runs carry no run config, so each asset processes everything
  pending (FreshnessRunConfig's defaults: the run contract's "empty file list").
- `interval`: the six every FRESHNESS_INTERVAL_S seconds, all pending input, as a
  Dagster schedule when the period is whole minutes dividing an hour; Dagster's cron has
  minute resolution (dagster/_utils/schedules.py: five cron fields, no seconds), so a
  shorter period is a sensor on a fixed `minimum_interval_seconds` that requests the same
  run every tick, whatever is running (as a schedule would).

Every mode leaves the instance's run queue (K = max_concurrent_runs) and the writer pools
(`hudi_writer/<asset>`, limit 1) as dagster.yaml sets them, so all of them run under the
same concurrency. `definitions.py` asks the registry for the mode's parts and never tests
a mode's name: a new mode is one class and one registry line (and its name in
scheduler_settings.AUTOMATIONS, which a test keeps equal).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from dagster import (
    AssetKey,
    AssetObservation,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    define_asset_job,
    schedule,
    sensor,
)
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,  # what define_asset_job returns; not exported at the top
)

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.orchestration.asset_checks import pipeline_check_keys
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.scheduling.run_plan import TAG_PREFIX

AUTOMATION_TAG = f"{TAG_PREFIX}automation"  # on peer runs: which mode launched them
ALL_JOBS_JOB = "all_six_jobs"


@dataclass(frozen=True)
class AutomationDefs:
    """What a mode adds to the Definitions."""

    asset_condition: AutomationCondition | None = None  # on each of the six job assets
    sensors: tuple[SensorDefinition, ...] = ()
    schedules: tuple[ScheduleDefinition, ...] = ()
    jobs: tuple[UnresolvedAssetJobDefinition, ...] = ()


class AutomationMode(ABC):
    """One way of launching the six jobs."""

    description: ClassVar[str]

    @abstractmethod
    def build(self, settings: Settings) -> AutomationDefs:
        """The definitions this mode adds, from the settings."""


def job_asset_selection(jobs: Mapping[str, JobSpec] | None = None) -> AssetSelection:
    """The jobs' tables with their freshness checks: not their exactness checks, which
    run on their own schedule (asset_checks.py)."""
    names = list(JOBS if jobs is None else jobs)
    return AssetSelection.assets(*(AssetKey(name) for name in names)).without_checks() | (
        AssetSelection.checks(*pipeline_check_keys(names))
    )


def observed_tables(jobs: Mapping[str, JobSpec] | None = None) -> tuple[str, ...]:
    """The tables the jobs (the bundled six by default) read that Dagster does not
    materialize: raw inputs and dimensions (eager waits for a dependency that was never
    observed: `any_deps_missing`)."""
    jobs = JOBS if jobs is None else jobs
    read = {t for spec in jobs.values() for t in (*spec.inputs, *spec.dimensions)}
    return tuple(sorted(read - set(jobs)))


def changed_tables(seen: Mapping[str, str], latest: Mapping[str, str | None]) -> dict[str, str]:
    """Tables whose newest commit differs from the one last reported (a table without a
    commit yet is not reported: an observation says data is there)."""
    return {t: instant for t, instant in latest.items() if instant and seen.get(t) != instant}


def _latest(hudi_meta: HudiMetadataResource, table: str) -> tuple[str | None, int | None]:
    try:
        meta = hudi_meta.table(table)
    except TableNotFound:
        return None, None
    commit = meta.latest_commit()
    return (commit.instant if commit else None), meta.watermark_us()


def build_observation_sensor(
    tick_s: int, jobs: Mapping[str, JobSpec] | None = None
) -> SensorDefinition:
    tables = observed_tables(jobs)

    @sensor(
        name="raw_observation_sensor",
        minimum_interval_seconds=tick_s,
        default_status=DefaultSensorStatus.RUNNING,
        description=(
            "Reports an observation of each raw or dimension table whose newest Hudi commit "
            f"changed ({', '.join(tables)}), so Dagster's automation sees data that ingestion "
            "wrote; launches nothing itself."
        ),
    )
    def raw_observation_sensor(
        context: SensorEvaluationContext, hudi_meta: HudiMetadataResource
    ) -> SensorResult | SkipReason:
        seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        found = {table: _latest(hudi_meta, table) for table in tables}
        changed = changed_tables(seen, {t: instant for t, (instant, _) in found.items()})
        if not changed:
            return SkipReason("no new commit in " + ", ".join(tables))
        events = []
        for table, instant in changed.items():
            metadata: dict[str, Any] = {"latest_commit": instant}
            watermark = found[table][1]
            if watermark is not None:
                metadata["watermark_us"] = watermark
            # The commit's instant is the data version: Dagster counts an observation of
            # an observable source as an update only when its data version changed.
            events.append(
                AssetObservation(
                    asset_key=table,
                    metadata=metadata,
                    tags={"dagster/data_version": instant},
                )
            )
        return SensorResult(asset_events=events, cursor=json.dumps({**seen, **changed}))

    return raw_observation_sensor


@dataclass(frozen=True)
class FreshnessSensorMode(AutomationMode):
    description: ClassVar[str] = "our freshness sensor, by FRESHNESS_POLICY"

    def build(self, settings: Settings) -> AutomationDefs:
        from freshness_pipeline.orchestration.sensor import build_sensor

        return AutomationDefs(
            sensors=(
                build_sensor(
                    settings.scheduler,
                    settings.spark_remote,
                    settings.staleness_target,
                    settings.jobs,
                ),
            )
        )


@dataclass(frozen=True)
class DagsterEagerMode(AutomationMode):
    description: ClassVar[str] = (
        "Dagster's declarative automation: AutomationCondition.eager() on the job assets"
    )

    def build(self, settings: Settings) -> AutomationDefs:
        tick_s = settings.scheduler.tick_s
        automation_sensor = AutomationConditionSensorDefinition(
            "eager_automation_sensor",
            target=job_asset_selection(settings.jobs),
            default_status=DefaultSensorStatus.RUNNING,
            minimum_interval_seconds=tick_s,
            run_tags={AUTOMATION_TAG: "dagster_eager"},
            description=(
                f"Dagster's asset daemon evaluates AutomationCondition.eager() on the "
                f"{len(settings.jobs)} jobs every {tick_s} s (the freshness sensor is off "
                "in this mode)."
            ),
        )
        return AutomationDefs(
            asset_condition=AutomationCondition.eager(),
            sensors=(build_observation_sensor(tick_s, settings.jobs), automation_sensor),
        )


def cron_for(interval_s: int) -> str | None:
    """A cron string running every `interval_s` seconds, or None when cron cannot: Dagster
    schedules have minute resolution, and `*/m` is even only for m dividing 60."""
    minutes, rest = divmod(interval_s, 60)
    if rest or minutes < 1 or 60 % minutes:
        return None
    return "* * * * *" if minutes == 1 else f"*/{minutes} * * * *"


def tables_without_commit(
    hudi_meta: HudiMetadataResource, jobs: Mapping[str, JobSpec] | None = None
) -> list[str]:
    """The tables the jobs read that have no commit yet (before ingestion's first)."""
    return [t for t in observed_tables(jobs) if _latest(hudi_meta, t)[0] is None]


def interval_tick(
    hudi_meta: HudiMetadataResource, jobs: Mapping[str, JobSpec] | None = None
) -> RunRequest | SkipReason:
    """One tick of the interval automation: the six jobs, all pending input. Skipped only
    while an input table has no commit at all (start-up; the runs would only fail);
    afterwards every tick launches, whatever is running, as a schedule does."""
    missing = tables_without_commit(hudi_meta, jobs)
    if missing:
        return SkipReason(f"waiting for the first commit of {', '.join(missing)}")
    return RunRequest()


@dataclass(frozen=True)
class IntervalMode(AutomationMode):
    description: ClassVar[str] = "every job every FRESHNESS_INTERVAL_S, all pending input"

    def build(self, settings: Settings) -> AutomationDefs:
        interval_s = settings.scheduler.interval_s
        job = define_asset_job(
            ALL_JOBS_JOB,
            selection=job_asset_selection(settings.jobs),
            tags={AUTOMATION_TAG: "interval"},
            description="Every job in pipeline order, each processing all pending input.",
        )
        cron = cron_for(interval_s)
        if cron is not None:

            @schedule(
                name="interval_schedule",
                job=job,
                cron_schedule=cron,
                default_status=DefaultScheduleStatus.RUNNING,
                description=f"All {len(settings.jobs)} jobs every {interval_s} s ({cron}).",
            )
            def interval_schedule(
                context: ScheduleEvaluationContext, hudi_meta: HudiMetadataResource
            ) -> RunRequest | SkipReason:
                return interval_tick(hudi_meta, settings.jobs)

            return AutomationDefs(schedules=(interval_schedule,), jobs=(job,))

        @sensor(
            name="interval_sensor",
            job=job,
            minimum_interval_seconds=interval_s,
            default_status=DefaultSensorStatus.RUNNING,
            description=(
                f"All {len(settings.jobs)} jobs every {interval_s} s: a schedule cannot run more "
                "often than "
                "once a minute (Dagster's cron has no seconds field)."
            ),
        )
        def interval_sensor(
            context: SensorEvaluationContext, hudi_meta: HudiMetadataResource
        ) -> RunRequest | SkipReason:
            return interval_tick(hudi_meta, settings.jobs)

        return AutomationDefs(sensors=(interval_sensor,), jobs=(job,))


AUTOMATION_REGISTRY: dict[str, AutomationMode] = {
    "freshness_sensor": FreshnessSensorMode(),
    "dagster_eager": DagsterEagerMode(),
    "interval": IntervalMode(),
}


def get_automation(name: str) -> AutomationMode:
    """The mode registered as `name`; raises ValueError naming the accepted ones."""
    try:
        return AUTOMATION_REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown automation {name!r}; expected one of {tuple(AUTOMATION_REGISTRY)}"
        ) from None
