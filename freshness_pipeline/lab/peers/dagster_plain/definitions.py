"""The plain Dagster peer's code location (its own: `dagster code-server start -m
freshness_pipeline.lab.peers.dagster_plain.definitions`). What it is and why it is built
so: the package docstring.

Environment: FRESHNESS_LAKEHOUSE (the lakehouse folder), FRESHNESS_JARS_DIR (Hudi's
bundle), FRESHNESS_TICK_S (how often the raw tables are observed and the automation
evaluated), DAGSTER_PLAIN_AUTOMATION (`eager`, the default, or `cron`),
DAGSTER_PLAIN_CRON (the cron variant's schedule, every minute by default) and
DAGSTER_PLAIN_WIDE (a JSON file listing the wide lakehouse's tables, wide.py; unset: the
six alone).
"""

import json
import os
import time
from datetime import UTC
from pathlib import Path

import dagster as dg
from dagster_pyspark import PySparkResource

from freshness_pipeline.lab.peers.dagster_plain.tables import (
    MASTER,
    RAW,
    TABLES,
    Table,
    compute,
    latest_instant,
    newest_arrival_us,
    spark_config,
    write_hour,
)
from freshness_pipeline.lab.peers.dagster_plain.wide import wide_tables

WATERMARK = "watermark_us"
SOURCES = (*RAW, MASTER)


def hours() -> dg.HourlyPartitionsDefinition:
    """Partitions by the wall clock's hour; the hour in progress is the last one."""
    return dg.HourlyPartitionsDefinition(start_date="2026-01-01-00:00", end_offset=1)


def tick_s() -> int:
    return int(os.environ.get("FRESHNESS_TICK_S", "5"))


def automation_condition() -> dg.AutomationCondition:
    mode = os.environ.get("DAGSTER_PLAIN_AUTOMATION", "eager")
    if mode == "eager":
        return dg.AutomationCondition.eager()
    if mode == "cron":
        # on_cron waits for every dependency to update after the tick; the company master
        # never does, so enriched_features would never run (Dagster's `ignore` for it).
        cron = os.environ.get("DAGSTER_PLAIN_CRON", "* * * * *")
        return dg.AutomationCondition.on_cron(cron).ignore(dg.AssetSelection.assets(MASTER))
    raise ValueError(f"DAGSTER_PLAIN_AUTOMATION must be eager or cron, not {mode!r}")


def source(name: str) -> dg.SourceAsset:
    @dg.observable_source_asset(  # beta in Dagster, its documented way to observe a source
        name=name, description=f"{name}, written by ingestion"
    )
    def observe() -> dg.DataVersion:
        return dg.DataVersion(latest_instant(name) or "missing")

    return observe


def upstream_watermark(context: dg.AssetExecutionContext, table: Table) -> int | None:
    """The oldest of its inputs' watermarks, from their materializations of this hour
    (read before their rows: a run never claims rows it did not see)."""
    marks = []
    for name in table.inputs:
        if name == MASTER:
            continue
        records = context.instance.fetch_materializations(
            dg.AssetRecordsFilter(
                asset_key=dg.AssetKey(name), asset_partitions=[context.partition_key]
            ),
            limit=1,
        ).records
        if not records or records[0].asset_materialization is None:
            return None
        value = records[0].asset_materialization.metadata.get(WATERMARK)
        if value is None:
            return None
        marks.append(int(value.value))
    return min(marks) if marks else None


def job_asset(
    table: Table, condition: dg.AutomationCondition, partitions: dg.PartitionsDefinition
) -> dg.AssetsDefinition:
    @dg.asset(
        name=table.name,
        partitions_def=partitions,
        deps=list(table.inputs),
        automation_condition=condition,
        kinds={"spark", "hudi"},
        description=f"{table.name} of one event hour, recomputed whole from its inputs",
    )
    def refresh(context: dg.AssetExecutionContext, pyspark: PySparkResource):
        began = time.monotonic()
        start = context.partition_time_window.start.astimezone(UTC).replace(tzinfo=None)
        spark = pyspark.spark_session
        inherited = None if table.reads_raw else upstream_watermark(context, table)
        frame = compute(spark, table, start).persist()
        try:
            rows = frame.count()
            watermark = newest_arrival_us(frame) if table.reads_raw else inherited
            wrote = bool(rows) and watermark is not None
            if rows and watermark is not None:
                write_hour(frame, table, watermark)
        finally:
            frame.unpersist()
        metadata: dict = {"rows": rows, "hour": context.partition_key}
        if watermark is not None:
            metadata[WATERMARK] = watermark
        if wrote:  # the refresh's own time, from its first read to its commit
            metadata["duration_s"] = round(time.monotonic() - began, 3)
        return dg.MaterializeResult(metadata=metadata)

    return refresh


def observation_sensor() -> dg.SensorDefinition:
    @dg.sensor(
        name="raw_tables_observed",
        minimum_interval_seconds=tick_s(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="An observation of each source whose newest Hudi commit changed",
    )
    def observe(context: dg.SensorEvaluationContext):
        seen = json.loads(context.cursor) if context.cursor else {}
        now = {name: latest_instant(name) for name in SOURCES}
        changed = {n: i for n, i in now.items() if i is not None and seen.get(n) != i}
        if not changed:
            return dg.SkipReason("no new commit")
        events = [
            dg.AssetObservation(asset_key=n, tags={"dagster/data_version": i})
            for n, i in changed.items()
        ]
        return dg.SensorResult(asset_events=events, cursor=json.dumps({**seen, **changed}))

    return observe


def tables() -> list[Table]:
    """The six, and the wide lakehouse's tables when DAGSTER_PLAIN_WIDE lists them."""
    wide = os.environ.get("DAGSTER_PLAIN_WIDE")
    return [*TABLES.values(), *(wide_tables(Path(wide)) if wide else [])]


def build_definitions() -> dg.Definitions:
    condition = automation_condition()
    partitions = hours()
    return dg.Definitions(
        assets=[
            *(source(name) for name in SOURCES),
            *(job_asset(t, condition, partitions) for t in tables()),
        ],
        sensors=[
            observation_sensor(),
            dg.AutomationConditionSensorDefinition(
                "plain_automation",
                target=dg.AssetSelection.all(),
                default_status=dg.DefaultSensorStatus.RUNNING,
                minimum_interval_seconds=tick_s(),
            ),
        ],
        resources={"pyspark": PySparkResource(spark_config=spark_config())},
        # One Spark session per run: the default executor starts a process per step.
        executor=dg.in_process_executor,
    )


defs = build_definitions()
