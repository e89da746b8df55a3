"""The freshness sensor: a thin adapter between Hudi metadata, the planner and Dagster.

Each tick: read every job's t_done, upstream cap and pending files through the metadata
resource, the running runs from the instance, and each job's run history (for its cost
model); call the pure planner; emit one RunRequest per chosen asset with the typed run
config (`files`, `cutoff_u`, the decision), an idempotent run key and a few readable tags.
The tick says its decision for every job in words (`tick_report`: logs, skip reason, and
a one-line summary as its cursor), names the tables past their staleness target, and
records each table's staleness as an asset observation once a minute and at a crossing.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace

from dagster import (
    AssetKey,
    AssetObservation,
    DagsterRunStatus,
    DefaultSensorStatus,
    MetadataValue,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from freshness_pipeline.catalog.jobs import JOBS, JobSpec, downstream_of
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.scheduler_settings import SchedulerSettings
from freshness_pipeline.execution.run_phases import RUN_COST_PHASES
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.orchestration import history
from freshness_pipeline.orchestration.asset_checks import pipeline_check_keys, watermark_metadata
from freshness_pipeline.orchestration.machine_budget import (
    StepLoads,
    machine_budget,
    machine_words,
    step_loads,
)
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.scheduling.budget import BUDGET_RULES, slowdown
from freshness_pipeline.scheduling.chains import plan_runs, steps_at_once_for
from freshness_pipeline.scheduling.clustering import TABLE_TAG as CLUSTERING_TABLE_TAG
from freshness_pipeline.scheduling.cost_model import (
    DEFAULT_PRIOR,
    FittedCost,
    RunSample,
    fit_cost_model,
    fit_run_cost,
    typical_input,
)
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.planner import (
    DEFAULT_RUN_COST_S,
    JobChoice,
    JobState,
    PendingInput,
    Plan,
    PlanRequest,
    get_policy,
    retry_backoff_s,
)
from freshness_pipeline.scheduling.run_plan import (
    ASSET_TAG,
    RunPlan,
    StepPlan,
    execution_tags,
    run_config_of,
)
from freshness_pipeline.scheduling.staleness_target import StalenessTarget, staleness_s
from freshness_pipeline.scheduling.tick_report import (
    describe_tick,
    input_lag_s,
    observations_due,
)
from freshness_pipeline.scheduling.timefmt import iso
from freshness_pipeline.scheduling.units import US_PER_S

ACTIVE_STATUSES = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]


def active_run_records(instance) -> list:
    """Queued or running runs' records (a run and when it started), read once per tick:
    the counts below take their runs, the machine's budget their start times."""
    return list(instance.get_run_records(filters=RunsFilter(statuses=ACTIVE_STATUSES)))


def active_runs(instance) -> list:
    """Queued or running runs, for the counts below."""
    return [record.dagster_run for record in active_run_records(instance)]


def _run_jobs(run, names: Collection[str] | None = None) -> set[str]:
    held = {key.to_user_string() for key in run.asset_selection or ()}
    if run.tags.get(ASSET_TAG):
        held.add(run.tags[ASSET_TAG])
    return held & set(JOBS if names is None else names)


def running_jobs(runs: Iterable, names: Collection[str] | None = None) -> set[str]:
    """Jobs with a queued or running run (of `active_runs`), whoever launched it."""
    return set().union(*(_run_jobs(run, names) for run in runs))


def active_job_runs(runs: Iterable, names: Collection[str] | None = None) -> int:
    """Queued or running runs that hold one of the jobs (a chained run holds several)."""
    return sum(1 for run in runs if _run_jobs(run, names))


def active_clustering_runs(runs: Iterable) -> dict[str, int]:
    """Queued or running clustering runs per table (they take run-queue slots too)."""
    found: dict[str, int] = {}
    for run in runs:
        table = run.tags.get(CLUSTERING_TABLE_TAG)
        if table:
            found[table] = found.get(table, 0) + 1
    return found


@dataclass(frozen=True)
class JobHistory:
    """A job's recent materializations, oldest first: (bytes read, files read, seconds)
    for its cost model, when the latest was recorded (the fixed-order policies' turn), and
    the launch + plan + session seconds of the runs it was the first step of (for L)."""

    samples: list[RunSample]
    last_refresh_us: int | None
    run_costs_s: list[float]

    @property
    def step_input(self) -> tuple[int, int]:
        return typical_input(self.samples)


def run_history(records: list, loads: StepLoads | None = None) -> JobHistory:
    """A job's history from its newest materialization records (newest first); with the
    steps' `loads` (the machine's budget), each sample is its step's work alone: its
    seconds over the slowdown the steps beside it caused (budget.slowdown)."""
    samples, run_costs = [], []
    for record in reversed(records):
        materialization = record.asset_materialization
        meta = materialization.metadata if materialization else {}
        if "duration_s" in meta and "bytes_read" in meta and "files_read" in meta:
            seconds = float(meta["duration_s"].value)
            beside = 0.0
            if loads is not None:
                beside = loads.beside.get(record.storage_id, 0.0)
                seconds /= slowdown(beside, loads.capacity)
            samples.append(
                RunSample(
                    int(meta["bytes_read"].value),
                    int(meta["files_read"].value),
                    seconds,
                    beside,
                )
            )
        if all(key in meta for key in RUN_COST_PHASES):
            run_costs.append(sum(float(meta[key].value) for key in RUN_COST_PHASES))
    last_refresh_us = int(records[0].timestamp * US_PER_S) if records else None
    return JobHistory(samples, last_refresh_us, run_costs)


def failure_streaks(
    instance, jobs: Iterable[str], per_job: int = history.RUNS_PER_JOB
) -> dict[str, tuple[int, int | None]]:
    """Per job: (consecutive failed or canceled sensor runs since its last success, when
    the newest of them ended), from the newest finished runs (history.finished_runs). A
    failed decision is then retried under a new run key, after a backoff, instead of being
    dropped as a duplicate for ever (a job would otherwise stay stuck after a failure once
    the stream goes quiet). In a chained run each step counts for its own job: a step that
    failed counts, a step that committed is a success, a step skipped because its parent
    failed is neither."""
    jobs = list(jobs)
    streaks: dict[str, tuple[int, int | None]] = {job: (0, None) for job in jobs}
    settled: set[str] = set()
    for record in history.finished_runs(instance, jobs, per_job):  # newest first
        run = record.dagster_run
        steps = history.chain_steps(run)
        if run.status == DagsterRunStatus.SUCCESS:
            settled |= steps
            continue
        root = run.tags.get(ASSET_TAG)
        failed = {root}
        if len(steps) > 1:
            failed, succeeded = history.step_outcomes(instance, run.run_id)
            settled |= succeeded & steps
            failed = (failed & steps) or {root}  # killed or canceled: no step said
        for job in failed:
            if job not in streaks or job in settled:
                continue
            count, last_end = streaks[job]
            if last_end is None and record.end_time is not None:
                last_end = int(record.end_time * US_PER_S)
            streaks[job] = (count + 1, last_end)
    return streaks


def job_state(
    spec: JobSpec,
    hudi_meta: HudiMetadataResource,
    cost: FittedCost,
    running: bool,
    tmin_mode: str,
    arrival_sources: set[str] | None = None,
) -> JobState:
    """The job's state for the planner; `arrival_sources`, if given, collects where its
    pending files' arrival ranges came from (for the run's tags)."""
    try:
        t_done = hudi_meta.table(spec.name).watermark_us()
    except TableNotFound:
        t_done = None
    marks: list[tuple[str, int | None]] = []
    missing: list[tuple[str, str]] = []  # an input with no table: where it was looked for
    metas = {}
    for table in spec.inputs:
        try:
            metas[table] = hudi_meta.table(table)
            marks.append((table, metas[table].watermark_us()))
        except TableNotFound as exc:
            marks.append((table, None))
            missing.append((table, " ".join(str(exc).split())[:300]))
        except Exception as exc:  # noqa: BLE001 - one unreadable input stops only its readers
            return _blocked(spec, t_done, cost, running, table, exc)
    if any(mark is None for _, mark in marks):
        return _waiting(spec, t_done, cost, running, tuple(marks), no_data=tuple(missing))
    pending: list[PendingInput] = []
    committed: list[int] = []  # when each pending file's rows began to land
    for table, meta in metas.items():
        if running:
            continue  # not planned this tick; skip the file listing
        try:
            found = meta.pending_files(t_done, with_footer=tmin_mode == "footer")
        except Exception as exc:  # noqa: BLE001 - e.g. a footer we cannot read
            return _blocked(spec, t_done, cost, running, table, exc)
        _add_pending(found, tmin_mode, pending, committed, arrival_sources)
    return JobState(
        spec.name,
        t_done,
        input_cap(mark for _, mark in marks),
        tuple(pending),
        cost.model,
        running,
        pending_since_us=min(committed, default=None),
        inputs=tuple(marks),
    )


def _add_pending(
    found: list,
    tmin_mode: str,
    pending: list[PendingInput],
    committed: list[int],
    arrival_sources: set[str] | None,
) -> None:
    """An input's pending files as the planner reads them (tmin from footers or ranges)."""
    for p in found:
        if tmin_mode == "footer" and p.footer_min_us is not None:
            tmin, tmax = p.footer_min_us, max(p.footer_max_us or 0, p.pending_max_us)
        else:
            tmin, tmax = p.pending_min_us, p.pending_max_us
        pending.append(PendingInput(p.uri, p.slice.size_bytes, tmin, tmax))
        if p.pending_since_us is not None:
            committed.append(p.pending_since_us)
        if arrival_sources is not None:
            arrival_sources.add(p.arrival_source)


def _blocked(
    spec: JobSpec, t_done: int | None, cost: FittedCost, running: bool, table: str, exc: Exception
) -> JobState:
    """A job whose input `table` cannot be read: it waits, saying which input and why."""
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    blocked = f"input {table} cannot be read ({reason})"
    return _waiting(spec, t_done, cost, running, ((table, None),), blocked=blocked)


def _waiting(
    spec: JobSpec,
    t_done: int | None,
    cost: FittedCost,
    running: bool,
    inputs: tuple[tuple[str, int | None], ...],
    blocked: str | None = None,
    no_data: tuple[tuple[str, str], ...] = (),
) -> JobState:
    """A job with nothing to plan until its inputs change, and why: an input that cannot
    be read (`blocked`), or inputs without data and the readers' words (`no_data`)."""
    return JobState(
        spec.name,
        t_done,
        None,
        (),
        cost.model,
        running,
        inputs=inputs,
        blocked=blocked,
        no_data=no_data,
    )


def run_request(
    choice: JobChoice,
    t_dones: Mapping[str, int | None],
    cost: FittedCost,
    attempt: int = 0,
    arrival_sources: tuple[str, ...] = (),
    steps_at_once: int = 1,
) -> RunRequest:
    """The run of a decision: its planned asset's config and tags, and for a chained run
    every other step with its part of the plan in its own op config, and its steps side
    by side where the chain is wide enough (`chains.steps_at_once_for`)."""
    plan_record = RunPlan.from_choice(choice, t_dones[choice.job], cost, attempt, arrival_sources)
    steps = StepPlan.of_chain(choice, t_dones)
    at_once = steps_at_once_for(choice.chain, steps_at_once)
    return RunRequest(
        run_key=plan_record.run_key,
        asset_selection=[AssetKey(name) for name in choice.jobs],
        asset_check_keys=pipeline_check_keys(choice.jobs),
        run_config=run_config_of(plan_record, steps, at_once),
        tags={**plan_record.tags(), **execution_tags(at_once)},
    )


@dataclass(frozen=True)
class TickOutcome:
    plan: Plan
    requests: list[RunRequest]
    t_done_us: dict[str, int | None]  # each job's watermark as this tick read it
    # each job's inputs' watermark (the smallest): the newest arrival it could reflect
    cap_us: dict[str, int | None] = field(default_factory=dict)
    # under the machine's budget, what the tick planned with, in words ("" otherwise)
    machine_text: str = ""

    def staleness_s(self, now_us: int) -> dict[str, float | None]:
        """METHOD 1 per job (the sampler's definition); None: no watermark yet."""
        return {
            job: None if t_done is None else staleness_s(now_us, t_done)
            for job, t_done in self.t_done_us.items()
        }

    def lag_s(self) -> dict[str, float | None]:
        """How far each table is behind what its inputs hold (tick_report.input_lag_s)."""
        return {
            job: input_lag_s(t_done, self.cap_us.get(job)) for job, t_done in self.t_done_us.items()
        }


def evaluate_tick(
    hudi_meta: HudiMetadataResource,
    instance,
    settings: SchedulerSettings,
    now_us: int,
    jobs: Iterable[JobSpec] = JOBS.values(),
) -> tuple[Plan, list[RunRequest]]:
    outcome = plan_tick(hudi_meta, instance, settings, now_us, jobs)
    return outcome.plan, outcome.requests


def plan_tick(
    hudi_meta: HudiMetadataResource,
    instance,
    settings: SchedulerSettings,
    now_us: int,
    jobs: Iterable[JobSpec] = JOBS.values(),
) -> TickOutcome:
    """One tick: every job's state read from Hudi metadata and the instance's runs, the
    planner's plan, and a run request per launch."""
    jobs = list(jobs)
    by_name = {spec.name: spec for spec in jobs}
    records = active_run_records(instance)
    active = [record.dagster_run for record in records]
    busy = running_jobs(active, by_name)
    read = _read_job_states(hudi_meta, instance, settings, jobs, busy)
    states = read.states
    if get_policy(settings.policy).uses_downstream:
        states = [
            replace(s, downstream=downstream_of(s.job, read.t_dones, by_name)) for s in states
        ]
    request = PlanRequest(
        tuple(states),
        k=settings.k,
        now_us=now_us,
        runs_at_once=settings.runs_at_once,
        policy=settings.policy,
        seed=settings.seed,
        other_runs=sum(active_clustering_runs(active).values()),
        max_wait_s=settings.max_wait_s,
        first_runs_first=settings.first_runs_first,
        job_runs=active_job_runs(active, by_name),  # a chained run holds several jobs in one slot
        run_cost_s=fit_run_cost(
            read.run_costs_s,
            settings.cost_prior.run_cost_s if settings.cost_prior else DEFAULT_RUN_COST_S,
        ),
        chains=settings.plans_chains,
        steps_at_once=settings.steps_at_once,
    )
    if read.loads is not None:
        request = replace(
            request,
            machine=machine_budget(
                records,
                read.materialized,
                read.loads,
                now_us / US_PER_S,
                request.run_cost_s,
                batch=settings.launch_rule == "batch",
            ),
        )
    result = plan_runs(request)
    machine_text = ""
    if read.loads is not None and request.machine is not None:
        machine_text = machine_words(read.loads, len(request.machine.in_flight))
    requests = [
        run_request(
            c,
            read.t_dones,
            read.fitted[c.job],
            read.attempts[c.job],
            tuple(read.sources[c.job]),
            settings.steps_at_once,
        )
        for c in result.launches
    ]
    caps = {st.job: st.cap_us for st in states}
    return TickOutcome(result, requests, read.t_dones, caps, machine_text)


@dataclass
class _JobStates:
    """What a tick read of every job: its planner state, t_done, fitted cost model, failed
    attempts in a row and the arrival sources of its pending files."""

    states: list[JobState] = field(default_factory=list)
    t_dones: dict[str, int | None] = field(default_factory=dict)
    fitted: dict[str, FittedCost] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    sources: dict[str, set[str]] = field(default_factory=dict)
    run_costs_s: list[float] = field(default_factory=list)  # launch + session, every job's
    materialized: dict[str, list] = field(default_factory=dict)  # history.materializations
    loads: StepLoads | None = None  # the steps' loads, under the machine's budget only


def _read_job_states(
    hudi_meta: HudiMetadataResource,
    instance,
    settings: SchedulerSettings,
    jobs: list[JobSpec],
    busy: set[str],
) -> _JobStates:
    read = _JobStates()
    names = [spec.name for spec in jobs]
    streaks = failure_streaks(instance, names)
    materialized = read.materialized = history.materializations(instance, names)
    if settings.launch_rule in BUDGET_RULES:
        read.loads = step_loads(materialized)
    for spec in jobs:
        past = run_history(materialized[spec.name], read.loads)
        read.run_costs_s += past.run_costs_s
        prior = settings.cost_prior.model(spec.name) if settings.cost_prior else DEFAULT_PRIOR
        fitted = read.fitted[spec.name] = fit_cost_model(past.samples, settings.cost_mode, prior)
        sources = read.sources[spec.name] = set()
        state = job_state(spec, hudi_meta, fitted, spec.name in busy, settings.tmin_mode, sources)
        read.t_dones[spec.name] = state.t_done_us
        failed, last_failure_us = streaks[spec.name]
        read.attempts[spec.name] = failed
        retry_after = None
        if failed and last_failure_us is not None:
            retry_after = last_failure_us + int(retry_backoff_s(failed) * US_PER_S)
        read.states.append(
            replace(
                state,
                order=names.index(spec.name),
                last_refresh_us=past.last_refresh_us,
                step_input=past.step_input,
                failed_runs=failed,
                retry_after_us=retry_after,
            )
        )
    return read


def arrival_warnings(hudi_meta: HudiMetadataResource) -> list[str]:
    """What is wrong with the declared arrival column of an external input: commits whose
    arrival values went backwards (rows a job may have skipped), said every tick."""
    lakehouse, found = hudi_meta.lakehouse(), []
    for table in RAW_TABLES:
        if not lakehouse.is_external(table):
            continue
        try:
            meta = hudi_meta.table(table)
        except TableNotFound:
            continue
        found += [r.describe(table, meta.arrival_column) for r in meta.arrival_regressions()]
    return found


def staleness_observations(
    now_us: int,
    previous_tick_us: int | None,
    t_done_us: Mapping[str, int | None],
    staleness: Mapping[str, float | None],
    target: StalenessTarget,
    lag_s: Mapping[str, float | None] | None = None,
) -> list[AssetObservation]:
    """Each table's staleness as an observation, for the tables due (tick_report), with
    its lag behind its inputs where the tick read them."""
    due = observations_due(now_us, previous_tick_us, staleness, target)
    events = []
    for job in due:
        seconds = staleness[job]
        assert seconds is not None  # observations_due skips tables without a watermark
        lag = (lag_s or {}).get(job)
        metadata = {
            "staleness_s": MetadataValue.float(round(seconds, 3)),
            "staleness_state": target.state(seconds, lag),
            "staleness_target_s": MetadataValue.float(float(target.fail_s)),
            "watermark": iso(t_done_us[job], "milliseconds"),
            **watermark_metadata(t_done_us[job]),
        }
        if lag is not None:
            metadata["lag_behind_inputs_s"] = MetadataValue.float(round(lag, 3))
        events.append(AssetObservation(asset_key=AssetKey(job), metadata=metadata))
    return events


def service_down(spark_remote: str | None) -> str | None:
    """Why runs cannot start now, if the Spark service they use is not listening."""
    if not spark_remote:
        return None
    from urllib.parse import urlparse

    from freshness_pipeline.runtime.ports import port_is_open

    where = urlparse(spark_remote.replace("sc://", "http://", 1))
    if port_is_open(where.hostname or "127.0.0.1", where.port or 15002, timeout=1.0):
        return None
    return f"waiting for the Spark service at {spark_remote}: not reachable (restarting?)"


def aging_words(settings: SchedulerSettings) -> str:
    """The sensor's aging setting in words, for its description."""
    parts = []
    if settings.max_wait_s is not None:
        parts.append(f"a job waiting over {settings.max_wait_s} s goes first")
    if settings.first_runs_first:
        parts.append("so does a first materialization" if parts else "a first run goes first")
    return "aging: " + ", ".join(parts) if parts else "no aging"


def build_sensor(
    settings: SchedulerSettings,
    spark_remote: str | None = None,
    target: StalenessTarget | None = None,
    jobs: Mapping[str, JobSpec] | None = None,
):
    """The freshness sensor: every `settings.tick_s` it plans the six jobs and launches
    the plan's runs; `spark_remote` is the service it waits for, `target` the staleness
    it reports against."""
    target = target or StalenessTarget()
    jobs = JOBS if jobs is None else jobs
    at_once = "" if settings.runs_at_once is None else f", {settings.launch_limit} run(s) at once"

    @sensor(
        name="freshness_sensor",
        minimum_interval_seconds=settings.tick_s,
        asset_selection=[AssetKey(name) for name in jobs],
        default_status=DefaultSensorStatus.RUNNING,
        description=(
            f"Launches the six jobs by {settings.policy} with K={settings.k}{at_once}, "
            f"tmin from {settings.tmin_mode} ranges, {settings.cost_mode} cost model, "
            f"{aging_words(settings)}; "
            f"{target.describe()}. Each tick's cursor is a one-line summary of its decision "
            f"(the sensor keeps no state); its logs give every job's reason."
        ),
    )
    def freshness_sensor(context: SensorEvaluationContext, hudi_meta: HudiMetadataResource):
        down = service_down(spark_remote)
        if down:
            # Launching now would only fail runs (and back their jobs off); say why we wait.
            context.log.info(down)
            return SensorResult(skip_reason=down, cursor="idle: Spark service not reachable")
        now_us = int(time.time() * US_PER_S)
        outcome = plan_tick(hudi_meta, context.instance, settings, now_us, jobs.values())
        staleness = outcome.staleness_s(now_us)
        lag = outcome.lag_s()
        report = describe_tick(outcome.plan, staleness, target, list(jobs), lag)
        if outcome.machine_text:
            context.log.info(outcome.machine_text)
        for line in report.lines:
            context.log.info(line)
        if report.past_target:
            context.log.warning(report.late_text())
        warnings = arrival_warnings(hudi_meta)
        for warning in warnings:
            context.log.warning(warning)
        previous = context.last_tick_completion_time
        events = staleness_observations(
            now_us,
            None if previous is None else int(previous * US_PER_S),
            outcome.t_done_us,
            staleness,
            target,
            lag,
        )
        if not outcome.requests:
            return SensorResult(
                skip_reason=" ".join([report.skip_reason(), *warnings]),
                cursor=report.summary,
                asset_events=events,
            )
        return SensorResult(
            run_requests=outcome.requests, cursor=report.summary, asset_events=events
        )

    return freshness_sensor
