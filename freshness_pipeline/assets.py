"""The six ELT jobs as Dagster assets; each materialization is one Spark run honouring the
run contract (files + cutoff_u in, watermark u committed atomically with the data)."""

# No `from __future__ import annotations` here: Dagster reads the config class from the
# asset function's annotations at definition time.
import time

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pydantic import Field

from freshness_pipeline.jobs.catalog import JOBS, JobSpec
from freshness_pipeline.jobs.run_config import RunConfigError, iso, resolve_run
from freshness_pipeline.jobs.runner import JobRunner
from freshness_pipeline.jobs.sql import sql_path
from freshness_pipeline.resources import HudiMetadataResource
from freshness_pipeline.spark import HudiSparkResource


class FreshnessRunConfig(Config):
    """What a run processes. Both empty: everything pending, up to the newest possible cutoff."""

    files: list[str] = Field(
        default_factory=list,
        description="Input base files to read (paths or URIs of the asset's input tables). "
        "Empty: every pending file.",
    )
    cutoff_u: str | None = Field(
        default=None,
        description="Process arrivals up to this time: epoch microseconds or ISO-8601 (UTC). "
        "Empty: the smallest watermark of the inputs.",
    )


def build_asset(spec: JobSpec) -> AssetsDefinition:
    @asset(
        name=spec.name,
        deps=[AssetKey(t) for t in (*spec.inputs, *spec.dimensions)],
        group_name=spec.group_name,
        description=f"{spec.description}\n\nSQL: jobs_sql/{spec.name}.sql",
        kinds={"spark", "hudi"},
        owners=["team:market-data"],
        tags={"freshness/job_kind": spec.kind},
        metadata={
            "sql": MetadataValue.path(str(sql_path(spec.name))),
            "record_key": ", ".join(spec.key),
            "partitioned_by": spec.partition_by or "none",
        },
    )
    def _job(
        context: AssetExecutionContext,
        config: FreshnessRunConfig,
        spark: HudiSparkResource,
        hudi_meta: HudiMetadataResource,
    ) -> MaterializeResult:
        # Everything is checked against Hudi metadata before Spark starts.
        try:
            resolved = resolve_run(spec, config.files, config.cutoff_u, hudi_meta.table)
        except RunConfigError as exc:
            raise Failure(description=f"run config refused: {exc}") from exc
        base = {
            "t_done_before": iso(resolved.t_done_us),
            "cutoff_u": iso(resolved.cutoff_us),
            "inputs_watermark_cap": iso(resolved.cap_us),
            "files_pending": resolved.pending_files,
            "bytes_pending": resolved.pending_bytes,
        }
        if resolved.nothing_to_do:
            context.log.info(f"nothing to do: {resolved.nothing_to_do}")
            return MaterializeResult(metadata={**base, "nothing_to_do": resolved.nothing_to_do})
        for given, current in resolved.resolved_moves:
            context.log.warning(f"{given} was rewritten since it was selected; reading {current}")
        for table in resolved.replanned_tables:
            context.log.warning(f"a selected file group of {table} was replaced; re-planned it")
        runner = JobRunner(spark.spark_session, hudi_meta.table_uri)
        report = runner.run(spec, resolved)
        return MaterializeResult(
            metadata={
                **base,
                "t_done_after": iso(report.t_done_after_us),
                "files_read": report.files_read,
                "bytes_read": report.bytes_read,
                "rows_scanned": report.rows_scanned,
                "rows_written": report.rows_written,
                "duration_s": round(report.seconds, 3),
                "watermark_lag_s": round(time.time() - report.t_done_after_us / 1e6, 3),
                "files_moved_and_resolved": len(resolved.resolved_moves),
                "spark": spark.description,
            }
        )

    return _job


JOB_ASSETS = [build_asset(spec) for spec in JOBS.values()]
