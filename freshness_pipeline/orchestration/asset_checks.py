"""Asset checks on every job's table: is it fresh, as Dagster users look for it (the asset
page's checks, the asset graph, alerts on a failed check).

Freshness is Dagster's own last-update freshness check (`build_last_update_freshness_checks`)
with the table's staleness target as its bound. Dagster takes a table's last update from the
`dagster/last_updated_timestamp` of its newest materialization or observation when one
carries it, so every materialization and every staleness observation of the sensor carries
the table's watermark there: the check then fails when the newest arrival the table reflects
is older than the target (METHOD 1's staleness), not when its last commit is. (Dagster now
prefers a `FreshnessPolicy` on the asset, which the assets carry too; that policy counts
from the last commit and cannot be given the watermark, so the asset page shows both: the
policy's commit recency and this check's staleness.)

Exactness is a sampled check (execution/sampled_check.py): a few keys of the table
recomputed by the batch oracle at the table's watermark and compared with the stored rows.
It costs Spark work, so it runs in runs of its own on the schedule the user sets
(FRESHNESS_EXACTNESS_SCHEDULE) and in a hand run of its table; the sensor's runs leave it
out (`pipeline_check_keys`).

A run that materializes a table also executes its freshness check (Dagster includes the
checks of the assets a run selects), and the checks' sensor evaluates a passing check again
once it could have become overdue, so a table that stops refreshing fails its check without
a run of its own. A check never blocks a run or ingestion (not `blocking`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from dagster import (
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    MetadataValue,
    ScheduleDefinition,
    SensorDefinition,
    SupersessionWarning,
    asset_check,
    build_last_update_freshness_checks,
    build_sensor_for_freshness_checks,
    define_asset_job,
)
from dagster._core.definitions.unresolved_asset_job_definition import (
    UnresolvedAssetJobDefinition,  # what define_asset_job returns; not exported at the top
)

from freshness_pipeline.catalog.jobs import JobSpec
from freshness_pipeline.execution.sampled_check import ExactnessResult, check_table
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.orchestration.resources import HudiMetadataResource, HudiSparkResource
from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.units import US_PER_S

# Dagster's key for when an asset's data was last updated (freshness checks read it).
LAST_UPDATED_KEY = "dagster/last_updated_timestamp"
CHECKS_SENSOR = "freshness_checks_sensor"
LAST_UPDATE_CHECK = "freshness_check"  # the name Dagster's freshness checks take
EXACTNESS_CHECK = "exactness"
EXACTNESS_JOB = "exactness_checks"
EXACTNESS_SCHEDULE = "exactness_schedule"
EXACTNESS_STOPPED_CRON = "0 * * * *"  # the schedule's cron until the user sets one


def watermark_metadata(watermark_us: int | None) -> dict[str, Any]:
    """The table's watermark as Dagster's last update, for a materialization or an
    observation of it; nothing for a table without one."""
    if watermark_us is None:
        return {}
    return {LAST_UPDATED_KEY: MetadataValue.timestamp(watermark_us / US_PER_S)}


def freshness_checks(
    jobs: Iterable[str], target: StalenessTarget
) -> Sequence[AssetChecksDefinition]:
    """One freshness check per job's table: it fails once the newest arrival the table
    reflects is older than the staleness target."""
    with warnings.catch_warnings():
        # Superseded by FreshnessPolicy, which cannot read the watermark (module docstring):
        # said once here, not on every load of the definitions.
        warnings.simplefilter("ignore", SupersessionWarning)
        return build_last_update_freshness_checks(
            assets=[AssetKey(job) for job in jobs],
            lower_bound_delta=timedelta(seconds=target.fail_s),
            severity=AssetCheckSeverity.ERROR,
        )


def freshness_checks_sensor(
    checks: Sequence[AssetChecksDefinition], interval_s: int
) -> SensorDefinition:
    """Evaluates a passing check again once its table could have become overdue (Dagster's
    sensor for freshness checks, on by default)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SupersessionWarning)
        return build_sensor_for_freshness_checks(
            freshness_checks=checks,
            minimum_interval_seconds=interval_s,
            name=CHECKS_SENSOR,
            default_status=DefaultSensorStatus.RUNNING,
        )


def pipeline_check_keys(jobs: Iterable[str]) -> list[AssetCheckKey]:
    """The checks a pipeline run of these tables executes: freshness only (exactness costs
    Spark work and runs on its own schedule)."""
    return [AssetCheckKey(AssetKey(job), LAST_UPDATE_CHECK) for job in jobs]


def exactness_checks(jobs: Mapping[str, JobSpec], sample: int) -> list[AssetChecksDefinition]:
    """One sampled exactness check per job's table; none when `sample` is 0."""
    if sample <= 0:
        return []
    return [_exactness_check(table, jobs, sample) for table in jobs]


def exactness_metadata(result: ExactnessResult) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "keys_judged": result.judged,
        "keys_in_flight": result.in_flight,
        "check_s": round(result.seconds, 3),
        **{f"check_{name}": round(value, 3) for name, value in result.timings.items()},
    }
    if result.watermark_us is not None:
        metadata["watermark"] = MetadataValue.timestamp(result.watermark_us / US_PER_S)
    if result.filtered_below:  # the tables recomputed for the sampled keys alone
        metadata["filtered_below"] = ", ".join(result.filtered_below)
    if result.failed:
        metadata["differing"] = MetadataValue.json(
            [
                {
                    "key": result.key_text(v.key),
                    "state": v.state,
                    "columns": list(v.columns),
                }
                for v in result.failed
            ]
        )
    return metadata


def _exactness_check(table: str, jobs: Mapping[str, JobSpec], sample: int):
    @asset_check(
        asset=AssetKey(table),
        name=EXACTNESS_CHECK,
        blocking=False,
        description=(
            f"{sample} keys of {table} recomputed by the batch oracle at its watermark and "
            "compared with the stored rows; keys with rows in flight are counted, not judged"
        ),
    )
    def _check(spark: HudiSparkResource, hudi_meta: HudiMetadataResource) -> AssetCheckResult:
        try:
            result = check_table(
                spark.spark_session, table, jobs, spark.table_uri, hudi_meta.table, sample
            )
        except TableNotFound as exc:
            return AssetCheckResult(
                passed=False, severity=AssetCheckSeverity.WARN, description=str(exc)
            )
        problem = result.problem is not None
        return AssetCheckResult(
            passed=result.passed and not problem,
            severity=AssetCheckSeverity.WARN if problem else AssetCheckSeverity.ERROR,
            description=result.describe(),
            metadata=exactness_metadata(result),
        )

    return _check


def exactness_job_and_schedule(
    checks: Sequence[AssetChecksDefinition], cron: str | None
) -> tuple[list[UnresolvedAssetJobDefinition], list[ScheduleDefinition]]:
    """A job running the exactness checks alone, and its schedule: on the user's cron, or
    stopped (hourly once started in the UI)."""
    if not checks:
        return [], []
    job = define_asset_job(
        EXACTNESS_JOB,
        selection=AssetSelection.checks(*checks),
        description="Every table's sampled exactness check, without materializing anything.",
    )
    schedule = ScheduleDefinition(
        name=EXACTNESS_SCHEDULE,
        job=job,
        cron_schedule=cron or EXACTNESS_STOPPED_CRON,
        execution_timezone="UTC",
        default_status=DefaultScheduleStatus.RUNNING if cron else DefaultScheduleStatus.STOPPED,
        description="The exactness checks (FRESHNESS_EXACTNESS_SCHEDULE).",
    )
    return [job], [schedule]
