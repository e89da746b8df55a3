"""The six ELT jobs as Dagster assets; each materialization is one Spark run honouring the
run contract (files + cutoff_u in, watermark u committed atomically with the data)."""

# No `from __future__ import annotations` here: Dagster reads the config class from the
# asset function's annotations at definition time.
import logging
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AutomationCondition,
    Config,
    DagsterEventType,
    Failure,
    FreshnessPolicy,
    MaterializeResult,
    MetadataValue,
    asset,
)
from pydantic import Field

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.execution.lineage import asset_lineage, declared_lineage, to_markdown
from freshness_pipeline.execution.lineage_model import AssetLineage, LineageError
from freshness_pipeline.execution.run_config import (
    ResolvedRun,
    RunConfigError,
    iso,
    parse_cutoff,
    resolve_run,
)
from freshness_pipeline.execution.run_phases import as_metadata, dagster_phases
from freshness_pipeline.execution.runner import JobRunner, RunReport, StalePlan
from freshness_pipeline.execution.sql import sql_path
from freshness_pipeline.hudi.commit_keys import APPROXIMATE_SOURCES
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.hudi.step_cpu import cpu_metadata
from freshness_pipeline.orchestration.asset_checks import watermark_metadata
from freshness_pipeline.orchestration.lineage_metadata import lineage_metadata
from freshness_pipeline.orchestration.raw_sources import ASSET_GROUP, LAYER_TAG
from freshness_pipeline.orchestration.resources import HudiMetadataResource, HudiSparkResource
from freshness_pipeline.orchestration.run_start import run_worker_start
from freshness_pipeline.runtime import faults
from freshness_pipeline.scheduling.run_plan import (
    BY_HAND,
    PLAN_FIELD,
    SENSOR,
    RunPlan,
    StepPlan,
    hand_run_tags,
)
from freshness_pipeline.scheduling.staleness_target import StalenessTarget, staleness_s
from freshness_pipeline.scheduling.timefmt import readable_utc
from freshness_pipeline.scheduling.units import US_PER_S


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
    t_done_planned: str | None = Field(
        default=None,
        description="The asset's watermark this plan was made from (epoch microseconds, or "
        "'none' for a table that had none); the sensor sets it. If another run has moved the "
        "watermark since, the run re-plans from the current one instead of committing a "
        "stale plan. Empty: the config is checked as given.",
    )
    sensor_plan: dict[str, str] = Field(
        default_factory=dict,
        description="Why the sensor chose this run (G, E, eta, bytes, cost model, exact "
        "cutoff); the sensor sets it and the run only copies it into its materialization "
        "metadata. Empty for a run launched by hand.",
    )


# A run that lost the commit race re-plans from the new watermark; a few rounds at most,
# since each loss means another run made progress on the same table.
MAX_PLAN_ATTEMPTS = 3


def replan(spec: JobSpec, config: FreshnessRunConfig, table_meta) -> ResolvedRun:
    """The run's request again, from the target's current watermark: every pending file up
    to the requested cutoff (the given file list was chosen for the old watermark), or
    nothing to do when another run already committed past that cutoff."""
    fresh = resolve_run(spec, [], None, table_meta)
    cutoff = parse_cutoff(config.cutoff_u)
    if cutoff is None or fresh.nothing_to_do:
        return fresh
    if fresh.t_done_us is not None and cutoff <= fresh.t_done_us:
        return ResolvedRun(
            spec.name,
            fresh.t_done_us,
            cutoff,
            fresh.cap_us,
            {t: () for t in spec.inputs},
            fresh.pending_files,
            fresh.pending_bytes,
            nothing_to_do=f"another run already committed {spec.name} up to "
            f"{iso(fresh.t_done_us)}, past this run's cutoff {iso(cutoff)}",
        )
    return resolve_run(spec, [], cutoff, table_meta)


def _current_t_done(spec: JobSpec, table_meta) -> int | None:
    try:
        return table_meta(spec.name).watermark_us()
    except TableNotFound:
        return None


def plan_run(
    spec: JobSpec, config: FreshnessRunConfig, table_meta
) -> tuple[ResolvedRun, list[str]]:
    """The run config resolved against Hudi metadata, before Spark starts. A plan made from
    a watermark that another run has since moved is re-planned (and says so), never run:
    its window would be counted twice. Raises RunConfigError for a refused config."""
    if config.t_done_planned is not None and config.t_done_planned.strip():
        text = config.t_done_planned.strip()
        planned = None if text.lower() == "none" else parse_cutoff(text)
        current = _current_t_done(spec, table_meta)
        if planned != current:
            reason = (
                f"{spec.name}: planned from t_done {iso(planned)} but another run has moved it "
                f"to {iso(current)}"
            )
            return replan(spec, config, table_meta), [reason]
    return resolve_run(spec, config.files, config.cutoff_u, table_meta), []


def run_until_committed(
    context: AssetExecutionContext,
    spec: JobSpec,
    config: FreshnessRunConfig,
    resolved: ResolvedRun,
    runner: JobRunner,
    table_meta,
    faults_dir: Path | None = None,
    keep_result: bool = False,
) -> tuple[ResolvedRun, RunReport | None, list[str]]:
    """Runs the job; if Hudi refuses the commit as a stale plan, re-plans and runs again.
    `faults_dir`: fault injection for the reliability tests (faults.py); None: off.
    `keep_result`: a later step of this run reads the table (execution/handoff.py)."""
    stale: list[str] = []
    inject = faults.take(faults_dir, spec.name)
    for _ in range(MAX_PLAN_ATTEMPTS):
        try:
            report = runner.run(spec, resolved, fail_before_commit=inject, keep_result=keep_result)
            return resolved, report, stale
        except StalePlan as exc:
            stale.append(str(exc))
            context.log.warning(f"{exc}; re-planning from the new watermark")
            resolved = replan(spec, config, table_meta)
            if resolved.nothing_to_do:
                return resolved, None, stale
    raise Failure(
        description=f"{spec.name}: lost the commit to another writer {len(stale)} times",
        metadata={"stale_plans": "\n".join(stale)},
    )


def _read_later_in_run(context: AssetExecutionContext, readers: frozenset[str]) -> bool:
    """Whether this run also materializes a job that reads this step's table (then its
    rows are kept for that step, execution/handoff.py)."""
    selection = context.run.asset_selection
    if not selection or not readers:
        return False
    return any(key.to_user_string() in readers for key in selection)


def files_chosen(resolved: ResolvedRun) -> int:
    return sum(len(files) for files in resolved.files.values())


def plan_metadata(
    resolved: ResolvedRun,
    planned: RunPlan | None,
    stale: list[str],
    chained_after: str | None = None,
    step: StepPlan | None = None,
) -> dict[str, Any]:
    """What the run set out to do: its window, the pending set, and, for a sensor run, what
    the sensor expected and why (beside what the run then did): the decision the run's
    few tags leave out. `chained_after`: the planned asset of the chained sensor run this
    step belongs to; `step`: this step's part of that run's plan."""
    launched_by = SENSOR if planned is not None else BY_HAND
    if chained_after:
        launched_by = f"{SENSOR}, in the run of {chained_after}"
    metadata: dict[str, Any] = {
        "launched_by": launched_by,
        "cutoff": readable_utc(resolved.cutoff_us),
        "t_done_before": iso(resolved.t_done_us),
        "cutoff_u": iso(resolved.cutoff_us),
        "inputs_watermark_cap": iso(resolved.cap_us),
        "files_pending": resolved.pending_files,
        "bytes_pending": resolved.pending_bytes,
    }
    # Where the chosen files' arrival ranges came from (our keys, an external table's
    # arrival column, or its commits' completion times: an approximation, said so).
    sources = sorted({p.arrival_source for files in resolved.files.values() for p in files})
    if sources:
        metadata["arrival_source"] = ", ".join(sources)
        metadata["arrival_approximate"] = any(s in APPROXIMATE_SOURCES for s in sources)
    if planned is not None:
        metadata |= {
            "policy": planned.policy,
            "planned_G_s": round(planned.gain_s, 3),
            "planned_E_s": round(planned.cost_s, 3),
            "planned_eta": round(planned.eta, 6),
            "planned_files": f"{planned.file_count} of {planned.pending_files}",
            "planned_scan_bytes": planned.scan_bytes,
            "cost_model": planned.decision()["cost_model"],
            "cost_fit": planned.cost_fit,
            "attempt": planned.attempt,
            PLAN_FIELD: MetadataValue.json(planned.decision()),
        }
    if step is not None:
        metadata |= {
            "planned_cutoff_u": iso(step.cutoff_us),
            "planned_G_s": round(step.gain_s, 3),
            "planned_E_s": round(step.cost_s, 3),
            "planned_after": ", ".join(step.after) or "nothing: a root of the run",
        }
    if stale:
        metadata |= {"stale_plans_refused": len(stale), "stale_plan": stale[-1]}
    return metadata


def queue_marks(context: AssetExecutionContext) -> tuple[int, int | None, int | None]:
    """When the run was created, enqueued and launched (epoch micros; None: no such event,
    e.g. an in-process `dagster asset materialize` is never queued). The queue coordinator
    records no dequeue event: RUN_STARTING is when it let the run go."""
    instance, run_id = context.instance, context.run.run_id
    record = instance.get_run_record_by_id(run_id)
    created_us = int(record.create_timestamp.timestamp() * US_PER_S) if record else 0
    wanted = (DagsterEventType.RUN_ENQUEUED, DagsterEventType.RUN_STARTING)
    marks: dict[DagsterEventType, int] = {}
    for event in instance.get_records_for_run(run_id, of_type=set(wanted)).records:
        entry = event.event_log_entry
        if entry.dagster_event is not None:
            marks.setdefault(entry.dagster_event.event_type, int(entry.timestamp * US_PER_S))
    enqueued, starting = wanted
    return created_us, marks.get(enqueued), marks.get(starting)


def report_metadata(report: RunReport, resolved: ResolvedRun) -> dict[str, Any]:
    """What the run did; the cost model refits from bytes_read, files_read and duration_s."""
    return {
        "t_done_after": iso(report.t_done_after_us),
        "files_read": report.files_read,
        "bytes_read": report.bytes_read,
        "rows_scanned": report.rows_scanned,
        "rows_written": report.rows_written,
        "duration_s": round(report.seconds, 3),
        "watermark_lag_s": round(time.time() - report.t_done_after_us / US_PER_S, 3),
        "files_moved_and_resolved": len(resolved.resolved_moves),
        # inputs read from an earlier step's rows kept in this run (execution/handoff.py)
        "inputs_in_memory": ", ".join(report.inputs_in_memory) or "none",
        **connect_metadata(report),
        **cpu_metadata(report.cpu),
        # the table's watermark as Dagster's last update: its freshness check reads it
        **watermark_metadata(report.t_done_after_us),
    }


def connect_metadata(report: RunReport) -> dict[str, Any]:
    """The run's Spark Connect round trips (none on a local session): the total, the
    seconds waited, per runner phase and per kind."""
    if not report.connect_calls:
        return {}
    return {
        "connect_calls": sum(report.connect_calls.values()),
        "connect_call_s": report.connect_call_s,
        "connect_calls_by_phase": ", ".join(f"{p} {n}" for p, n in report.connect_calls.items()),
        "connect_calls_by_kind": report.connect_by_kind,
    }


def staleness_metadata(
    target: StalenessTarget,
    before_us: int | None,
    started_us: int,
    after_us: int | None,
    now_us: int,
) -> dict[str, Any]:
    """The table's staleness (METHOD 1, the sampler's definition) when the run started and
    once it committed, as numbers: the asset page plots each over materializations (the
    sawtooth's tops and bottoms). A table without a watermark has no staleness yet."""
    metadata: dict[str, Any] = {"staleness_target_s": float(target.fail_s)}
    if before_us is not None:
        metadata["staleness_before_s"] = round(staleness_s(started_us, before_us), 3)
    if after_us is not None:
        after_s = round(staleness_s(now_us, after_us), 3)
        metadata |= {"staleness_s": after_s, "staleness_state": target.state(after_s)}
    return metadata


def freshness_policy(target: StalenessTarget) -> FreshnessPolicy:
    """Dagster's own freshness status (pass, warn, fail on the asset page and graph), from
    the same target. Dagster counts from the last materialization, which is never earlier
    than the newest arrival it reflects, so its status is at most as strict as METHOD 1's
    staleness, which the metadata and the sensor's ticks report."""
    warn = timedelta(seconds=target.warn_s) if target.warn_s is not None else None
    return FreshnessPolicy.time_window(
        fail_window=timedelta(seconds=target.fail_s), warn_window=warn
    )


def record_hand_launch(context: AssetExecutionContext, resolved: ResolvedRun) -> None:
    """A run nobody planned gets the sensor runs' readable tags once it knows what it reads
    (Dagster lets a running run's tags be added to); cosmetic, so a failure only warns."""
    tags = hand_run_tags(resolved.cutoff_us, files_chosen(resolved), resolved.pending_files)
    try:
        context.instance.add_run_tags(context.run_id, tags)
    except Exception as exc:  # the run's work does not depend on its tags
        context.log.warning(f"could not tag this hand-launched run: {exc}")


def writer_pool(table: str) -> str:
    return f"hudi_writer/{table}"


def column_lineage_parts(
    spec: JobSpec, traced: AssetLineage | LineageError | None = None
) -> tuple[str, dict[str, Any]]:
    """The asset's lineage table (Markdown, for its description) and its Dagster column
    metadata: `traced` for a declared job of the user's (job_lineages), else the bundled
    job's. Lineage only describes the job: SQL it cannot trace (sqlglot refusing what
    Spark accepts) leaves the asset without it, says why, and the pipeline still loads;
    assets_tests/execution/test_lineage.py fails meanwhile."""
    try:
        if isinstance(traced, LineageError):
            raise traced
        lineage = traced if traced is not None else asset_lineage(spec.name)
        return to_markdown(lineage, heading=False), lineage_metadata(lineage)
    except LineageError as exc:
        logging.getLogger(__name__).warning("no column lineage for %s: %s", spec.name, exc)
        return f"Column lineage unavailable: {exc}", {}


def job_lineages(
    jobs: Mapping[str, JobSpec], lakehouse
) -> Mapping[str, AssetLineage | LineageError]:
    """The column lineage of a user's declared jobs, traced from their SQL over the schemas
    of the tables they read (their Hudi metadata); {} for the bundled jobs, whose lineage
    is the committed snapshot."""
    if jobs == JOBS:
        return {}
    from freshness_pipeline.execution.check import base_file_columns, input_schemas

    try:
        # Not through hudi-rs: the run workers fork from the process that loads this.
        schemas, _ = input_schemas(jobs, lakehouse, lambda t: base_file_columns(lakehouse, t))
    except Exception as exc:  # an unreachable store: the assets load, without lineage
        reason = LineageError(f"the input schemas could not be read: {exc}")
        return dict.fromkeys(jobs, reason)
    return declared_lineage(jobs, schemas)


def build_asset(
    spec: JobSpec,
    target: StalenessTarget,
    automation_condition: AutomationCondition | None = None,
    faults_dir: Path | None = None,
    traced: AssetLineage | LineageError | None = None,
    readers: frozenset[str] = frozenset(),
) -> AssetsDefinition:
    """The job as an asset; `automation_condition` is set only when Dagster's declarative
    automation launches the jobs (FRESHNESS_AUTOMATION=dagster_eager, automation.py);
    `traced`: a user's job's lineage (job_lineages); `readers`: the jobs that read its
    table (a run that also materializes one keeps this step's rows for it)."""
    lineage_table, column_metadata = column_lineage_parts(spec, traced)

    @asset(
        name=spec.name,
        deps=[AssetKey(t) for t in (*spec.inputs, *spec.dimensions)],
        # One group for every asset: the graph opens on the whole pipeline instead of one
        # collapsed box per group; the layer is a tag (the catalog filters on it).
        group_name=ASSET_GROUP,
        freshness_policy=freshness_policy(target),
        # The open-source UI shows the column schema but does not draw column lineage,
        # so the description (rendered as Markdown on the asset page) carries it as a table.
        description=f"{spec.description}\n\nSQL: jobs_sql/{spec.name}.sql\n\n{lineage_table}",
        kinds={"spark", "hudi"},
        # One writer per table whoever launches the run (sensor, UI, CLI, backfill): the
        # step claims its table's pool slot (dagster.yaml: limit 1, op granularity, which
        # an in-process `dagster asset materialize` honours too) and waits while another
        # run of the asset holds it.
        pool=writer_pool(spec.name),
        automation_condition=automation_condition,
        owners=["team:market-data"],
        tags={"freshness/job_kind": spec.kind, LAYER_TAG: spec.group_name},
        metadata={
            "sql": MetadataValue.path(spec.declaration.path or str(sql_path(spec.name))),
            "merge": spec.declaration.merge,
            "record_key": ", ".join(spec.key),
            "partitioned_by": spec.partition_by or "none",
            # Derived from the SQL (lineage.py): dagster/column_schema, dagster/column_lineage.
            **column_metadata,
        },
    )
    def _job(
        context: AssetExecutionContext,
        config: FreshnessRunConfig,
        spark: HudiSparkResource,
        hudi_meta: HudiMetadataResource,
    ) -> MaterializeResult:
        started_us = int(time.time() * US_PER_S)
        # Everything is checked against Hudi metadata before Spark starts.
        try:
            resolved, stale = plan_run(spec, config, hudi_meta.table)
        except RunConfigError as exc:
            raise Failure(description=f"run config refused: {exc}") from exc
        planned_us = int(time.time() * US_PER_S)
        session_us = None
        for reason in stale:
            context.log.warning(f"{reason}; re-planned from the current watermark")
        planned = RunPlan.from_run(context.run)  # None: launched by hand, not by the sensor
        # In a chained sensor run, the run's planned asset when it is not this one.
        chained_after = (
            planned.asset if planned is not None and planned.asset != spec.name else None
        )
        step = StepPlan.from_decision(spec.name, config.sensor_plan) if chained_after else None
        if chained_after:
            # Another step of a chained sensor run: the run's tags are its planned asset's;
            # this step's part of the plan is in its own config.
            if step is not None:
                context.log.info(step.describe())
            context.log.info(
                f"in the run of {chained_after}: {resolved.file_count} of "
                f"{resolved.pending_files} pending files, up to {readable_utc(resolved.cutoff_us)}"
            )
            planned = None
        elif planned is None:
            record_hand_launch(context, resolved)
        else:
            context.log.info(planned.describe())
        t_done_before = resolved.t_done_us
        report = None
        later_step = False
        if not resolved.nothing_to_do:
            for given, current in resolved.resolved_moves:
                context.log.warning(
                    f"{given} was rewritten since it was selected; reading {current}"
                )
            for table in resolved.replanned_tables:
                context.log.warning(f"a selected file group of {table} was replaced; re-planned")
            session = spark.spark_session
            session_us = int(time.time() * US_PER_S)
            runner = JobRunner(session, hudi_meta.lakehouse(), handoffs=spark.handoffs)
            later_step = spark.steps_before > 0
            spark.step_started()
            keep = spark.bound_settings().handoff and _read_later_in_run(context, readers)
            resolved, report, lost = run_until_committed(
                context, spec, config, resolved, runner, hudi_meta.table, faults_dir, keep
            )
            stale += lost
        metadata = plan_metadata(resolved, planned, stale, chained_after, step)
        # With nothing to do, the watermark it resolved against is the table's current one.
        after = report.t_done_after_us if report is not None else resolved.t_done_us
        metadata |= staleness_metadata(
            target, t_done_before, started_us, after, int(time.time() * US_PER_S)
        )
        if report is None:
            context.log.info(f"nothing to do: {resolved.nothing_to_do}")
            return MaterializeResult(metadata={**metadata, "nothing_to_do": resolved.nothing_to_do})
        phases = dagster_phases(*queue_marks(context), started_us, planned_us, session_us)
        if chained_after or later_step:
            # Its step began after the run's earlier steps (a chain, or a peer's or a hand
            # run of several assets), not at a launch of its own.
            phases = {k: v for k, v in phases.items() if k not in ("queue_wait", "launch")}
        phases |= report.phases
        return MaterializeResult(
            metadata={
                **metadata,
                **report_metadata(report, resolved),
                **as_metadata(phases),
                "spark": spark.description,
                "run_worker": run_worker_start(),  # how its process was started (run_start.py)
            }
        )

    return _job


def build_job_assets(
    target: StalenessTarget,
    automation_condition: AutomationCondition | None = None,
    faults_dir: Path | None = None,
    jobs: Mapping[str, JobSpec] | None = None,
    lineages: Mapping[str, AssetLineage | LineageError] | None = None,
) -> list[AssetsDefinition]:
    """An asset per declared job (`jobs`: the settings' jobs; the bundled ones by default;
    `lineages`: a user's jobs' lineage, job_lineages)."""
    specs = (JOBS if jobs is None else jobs).values()
    traced = lineages or {}
    return [
        build_asset(
            spec,
            target,
            automation_condition,
            faults_dir,
            traced.get(spec.name),
            frozenset(s.name for s in specs if spec.name in s.inputs),
        )
        for spec in specs
    ]
