"""Clustering in Dagster: one job per clustered table, and the sensor that launches them.

The sensor is thin, like the freshness sensor: per table it reads the state
(`clustering_exec.table_files`, pending clustering instants, the consumers' watermarks,
active runs and failed clustering runs), calls the pure `clustering.decide`, and turns a
launch into a RunRequest whose tags carry the reason. A tick that launches nothing says
for every table why it waits. The runs go through the same run queue as the jobs (so they
count against K, and the freshness sensor leaves their slots free), and each run's step
claims the table's writer pool `hudi_writer/<table>`: never two clusterings of a table at
once, and never a clustering of a job table while a run of that asset is active.
"""

# No `from __future__ import annotations` here: Dagster reads the op's config class from
# its annotations at definition time.
import contextlib
import time
from collections.abc import Mapping
from typing import Any

from dagster import (
    AssetKey,
    AssetObservation,
    Config,
    DagsterRunStatus,
    DefaultSensorStatus,
    Failure,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    job,
    op,
    sensor,
)
from pydantic import Field

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.execution.clustering_exec import (
    FAULT_KIND,
    execute_clustering,
    pending_clusterings,
    table_files,
)
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.orchestration.assets import writer_pool
from freshness_pipeline.orchestration.history import FINISHED_STATUSES
from freshness_pipeline.orchestration.resources import HudiMetadataResource, HudiSparkResource
from freshness_pipeline.orchestration.sensor import (
    active_clustering_runs,
    active_runs,
    running_jobs,
    service_down,
)
from freshness_pipeline.runtime import faults
from freshness_pipeline.scheduling.clustering import (
    TABLE_TAG,
    TAG_PREFIX,
    ClusteringDecision,
    ClusteringSettings,
    TableState,
    decide,
    request_for,
)
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.planner import retry_backoff_s  # as for a failed job run
from freshness_pipeline.scheduling.units import US_PER_S


def job_name(table: str) -> str:
    return f"cluster_{table}"


def op_name(table: str) -> str:
    return f"cluster_{table}_files"


class ClusteringRunConfig(Config):
    """What one clustering run does; the sensor fills it from its decision."""

    groups: str = Field(
        default="",
        description="File groups to merge, `partition:fid+fid;...` (clustering.encode_groups), "
        "each within the arrival-span limit. Empty: only resume.",
    )
    resume: list[str] = Field(
        default_factory=list,
        description="Pending clustering instants a failed run left, executed again first.",
    )


def build_clustering_job(table: str) -> JobDefinition:
    @op(
        name=op_name(table),
        # One writer run per table at a time, whoever launched it: a job table's upserts
        # would be refused in file groups under a pending clustering.
        pool=writer_pool(table),
        description=f"Merges small files of {table} in arrival order (clustering.py).",
    )
    def _cluster(
        context: OpExecutionContext,
        config: ClusteringRunConfig,
        spark: HudiSparkResource,
        hudi_meta: HudiMetadataResource,
    ) -> None:
        settings = hudi_meta.bound_settings()
        lakehouse = hudi_meta.lakehouse()
        if lakehouse.is_external(table):
            raise Failure(description=f"{table} is a declared input someone else writes")
        fail = faults.take(settings.faults_dir, table, FAULT_KIND)
        session = spark.spark_session
        with contextlib.suppress(Exception):
            # A failure through Spark Connect then carries the server's Java stack: the
            # soak's four clustering failures said only "CancellationException".
            session.conf.set("spark.sql.pyspark.jvmStacktrace.enabled", "true")
        try:
            outcome = execute_clustering(
                session,
                lakehouse,
                table,
                settings.clustering,
                config.groups,
                config.resume,
                fail_after_write=fail,
            )
        except Exception as exc:
            # Whatever Hudi left pending is resumed by the next run (after a backoff); the
            # writers of the table never wait for it.
            raise Failure(
                description=f"clustering of {table} failed: {str(exc)[:2000]}",
                metadata={
                    "resumed_by": "the next clustering run of this table",
                    "error": MetadataValue.text(str(exc)[:30_000]),
                },
            ) from exc
        metadata: dict[str, Any] = {
            "clustering_instants": ", ".join(outcome.instants) or "none",
            "resumed": ", ".join(outcome.resumed) or "none",
            "groups": outcome.groups,
            "files_replaced": outcome.files_replaced,
            "files_written": outcome.files_written,
            "table_files_before": outcome.files_before,
            "table_files_after": outcome.files_after,
            "duration_s": round(outcome.seconds, 3),
            "spark": spark.description,
            "reason": MetadataValue.text(context.run.tags.get(f"{TAG_PREFIX}reason", "")),
        }
        context.log.info(
            f"{table}: {outcome.files_replaced} files merged into {outcome.files_written} in "
            f"{outcome.seconds:.1f} s (table {outcome.files_before} -> {outcome.files_after} "
            "files, ingestion included)"
        )
        context.log_event(AssetObservation(asset_key=AssetKey(table), metadata=metadata))

    @job(
        name=job_name(table),
        description=f"Clustering of {table}: launched by clustering_sensor with the reason "
        "in its tags (freshness/clustering_*).",
        tags={"freshness/kind": "clustering"},
    )
    def _job() -> None:
        _cluster()

    return _job


def clustering_jobs(settings: ClusteringSettings) -> list[JobDefinition]:
    return [build_clustering_job(table) for table in settings.tables]


def failure_streak(instance, table: str, limit: int = 20) -> tuple[int, int | None]:
    """(consecutive failed or canceled clustering runs of `table` since its last success,
    when the newest of them ended)."""
    records = instance.get_run_records(
        filters=RunsFilter(tags={TABLE_TAG: table}, statuses=FINISHED_STATUSES), limit=limit
    )
    count, last_end = 0, None
    for record in records:  # newest first
        if record.dagster_run.status == DagsterRunStatus.SUCCESS:
            break
        if last_end is None and record.end_time is not None:
            last_end = int(record.end_time * US_PER_S)
        count += 1
    return count, last_end


def table_state(
    table: str,
    hudi_meta: HudiMetadataResource,
    instance,
    busy_jobs: set[str],
    clustering_runs: dict[str, int],
    jobs: Mapping[str, JobSpec] | None = None,
) -> tuple[TableState | None, str | None]:
    """The decision's input for one table, or why there is none (no table yet)."""
    lakehouse = hudi_meta.lakehouse()
    if lakehouse.is_external(table):
        return TableState(table, (), None, external=True), None
    try:
        meta = hudi_meta.table(table)
    except TableNotFound:
        return None, "table does not exist yet"
    latest = meta.latest_commit()
    jobs = JOBS if jobs is None else jobs
    consumers = tuple(name for name, spec in jobs.items() if table in spec.inputs)
    marks = []
    for consumer in consumers:
        try:
            marks.append(hudi_meta.table(consumer).watermark_us())
        except TableNotFound:
            marks.append(None)
    consumed = input_cap(marks)  # what every consumer has read
    active = None
    if clustering_runs.get(table):
        active = "a clustering run of this table is queued or running"
    elif table in busy_jobs:
        active = (
            f"a run of {table} is active: clustering waits for it (Hudi refuses upserts "
            f"into groups under clustering; pool {writer_pool(table)})"
        )
    if active is None and (killed := killed_first_writes(meta)):
        active = (
            f"a write killed in the table's first commit ({', '.join(killed)}) is not rolled "
            "back yet: Hudi would cluster its files as committed rows"
        )
    failed, last_failure_us = failure_streak(instance, table)
    retry_after = None
    if failed and last_failure_us is not None:
        retry_after = last_failure_us + int(retry_backoff_s(failed) * US_PER_S)
    last = meta.last_clustering()
    state = TableState(
        table=table,
        files=table_files(meta),
        consumed_us=consumed,
        consumers=consumers,
        last_clustering_instant=last.instant if last else None,
        pending=pending_clusterings(meta),
        active_run=active,
        failed_runs=failed,
        retry_after_us=retry_after,
    )
    return state, latest.instant if latest else None


def killed_first_writes(meta) -> list[str]:
    """Uncompleted writes older than the table's first completed commit, clusterings
    aside: Hudi reads their files as committed ("before the timeline starts") until the
    lazy rollback of failed writes removes them, so a clustering then would keep their
    rows (a killed first ingestion commit's events, re-ingested since, twice)."""
    commits = meta.commits()
    if not commits:
        return []
    clustering = {p[0] for p in meta.pending_clustering()}  # (instant, ...)
    first = commits[0].instant
    return [i for i in meta.uncompleted_instants() if i < first and i not in clustering]


def evaluate_clustering(
    hudi_meta: HudiMetadataResource,
    instance,
    settings: ClusteringSettings,
    now_us: int,
    jobs: Mapping[str, JobSpec] | None = None,
) -> tuple[list[ClusteringDecision], list[RunRequest]]:
    active = active_runs(instance)
    busy = running_jobs(active, jobs)
    clustering_runs = active_clustering_runs(active)
    decisions, requests = [], []
    for table in settings.tables:
        state, latest = table_state(table, hudi_meta, instance, busy, clustering_runs, jobs)
        if state is None:
            decisions.append(ClusteringDecision(table, False, latest or "no state"))
            continue
        decision = decide(state, settings, now_us)
        decisions.append(decision)
        if decision.launch:
            request = request_for(decision, latest)
            requests.append(
                RunRequest(
                    run_key=request.run_key,
                    job_name=job_name(table),
                    run_config={
                        "ops": {
                            op_name(table): {
                                "config": {"groups": request.groups, "resume": list(request.resume)}
                            }
                        }
                    },
                    tags=dict(request.tags),
                )
            )
    return decisions, requests


def build_clustering_sensor(
    jobs: list[JobDefinition],
    settings: ClusteringSettings,
    spark_remote: str | None = None,
    consumers: Mapping[str, JobSpec] | None = None,
):
    """Launches `jobs` (one clustering job per table) when a run would remove enough
    small files; `spark_remote` is the service it waits for."""

    @sensor(
        name="clustering_sensor",
        minimum_interval_seconds=settings.tick_s,
        jobs=jobs,
        default_status=DefaultSensorStatus.RUNNING,
        description=(
            f"Clusters {', '.join(settings.tables)} when a run removes at least "
            f"{settings.min_files} small files (< {settings.small_file_bytes // 2**20} MiB), "
            f"in groups of at most {settings.max_span_s} s of arrival_ts, only files every "
            "consumer has read."
        ),
    )
    def clustering_sensor(context: SensorEvaluationContext, hudi_meta: HudiMetadataResource):
        down = service_down(spark_remote)
        if down:
            return SkipReason(down)
        decisions, requests = evaluate_clustering(
            hudi_meta, context.instance, settings, int(time.time() * US_PER_S), consumers
        )
        waits = [f"{d.table}: {d.reason}" for d in decisions if not d.launch]
        if not requests:
            return SkipReason("nothing clustered. " + "; ".join(waits))
        for line in waits:
            context.log.info(f"waits: {line}")
        for d in decisions:
            if d.launch:
                context.log.info(f"{d.table}: {d.reason}")
        return SensorResult(run_requests=requests)

    return clustering_sensor
