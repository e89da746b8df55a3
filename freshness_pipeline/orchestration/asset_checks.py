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

A run that materializes a table also executes its check (Dagster includes the checks of the
assets a run selects), and the checks' sensor evaluates a passing check again once it could
have become overdue, so a table that stops refreshing fails its check without a run of its
own. A check never blocks a run or ingestion (not `blocking`).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from dagster import (
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    DefaultSensorStatus,
    MetadataValue,
    SensorDefinition,
    SupersessionWarning,
    build_last_update_freshness_checks,
    build_sensor_for_freshness_checks,
)

from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.units import US_PER_S

# Dagster's key for when an asset's data was last updated (freshness checks read it).
LAST_UPDATED_KEY = "dagster/last_updated_timestamp"
CHECKS_SENSOR = "freshness_checks_sensor"


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
