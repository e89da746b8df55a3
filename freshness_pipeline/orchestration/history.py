"""What the Dagster instance says of each job's past, read whole once and then only what is
new.

Every tick the sensor needs, per job, its newest materializations (the cost model's
samples, the last refresh, the runs' launch costs) and its failed runs in a row since its
last success (the retry backoff). Read whole every tick, that is a query per job returning
up to `MATERIALIZATIONS` records and one of up to `RUNS_PER_JOB` finished runs per job: at
49 jobs with a deployment's history, most of a tick (docs/BENCHMARKS.md, the sensor tick
at 49 jobs). Both kinds of record never change once written, so a process (the code server
that evaluates the sensor) keeps what it read of an instance and asks each tick only for
what is newer: every job's newest materialization in one query (its asset record), the
new materializations of the jobs whose newest moved, and the runs that finished since the
newest update it saw (with an overlap, so a run whose update landed late is not missed).

A materialization whose storage id is below one already read (two writers' transactions
committing out of order on Postgres) is not read again: a cost sample is missed, never
a refresh (the last refresh comes from the asset record itself).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from dagster import AssetKey, AssetRecordsFilter, DagsterEventType, DagsterRunStatus
from dagster._core.storage.dagster_run import RunRecord, RunsFilter

from freshness_pipeline.scheduling.run_plan import ASSET_TAG, chained_steps

MATERIALIZATIONS = 40  # per job: the cost model's window
RUNS_PER_JOB = 20  # finished runs per job a failure streak is counted over
# A run finished before the newest update seen may still arrive (its writer's clock, its
# transaction): runs updated this long before it are asked for again, and deduplicated.
UPDATE_OVERLAP = timedelta(seconds=60)
INSTANCES = 4  # instances a process keeps histories of (tests open many)

FINISHED_STATUSES = [
    DagsterRunStatus.SUCCESS,
    DagsterRunStatus.FAILURE,
    DagsterRunStatus.CANCELED,
]


@dataclass
class _Instance:
    """What one process has read of one instance."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    # job -> its newest materialization records, newest first
    materializations: dict[str, list] = field(default_factory=dict)
    runs: dict[str, RunRecord] = field(default_factory=dict)  # run id -> finished run
    newest_update: datetime | None = None  # the newest update_timestamp among `runs`
    run_jobs: tuple[str, ...] = ()  # the jobs `runs` was read for
    # run id -> (steps that failed, steps that succeeded) of a finished chained run
    steps: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)


_instances: OrderedDict[object, _Instance] = OrderedDict()
_guard = threading.Lock()


def _identity(instance) -> object:
    root = getattr(instance, "root_directory", None)
    return ("root", root) if root else ("object", id(instance))


def _held(instance) -> _Instance:
    key = _identity(instance)
    with _guard:
        held = _instances.pop(key, None) or _Instance()
        _instances[key] = held
        while len(_instances) > INSTANCES:
            _instances.popitem(last=False)
        return held


def forget(instance) -> None:
    """Drop what was read of `instance` (its history was wiped)."""
    with _guard:
        _instances.pop(_identity(instance), None)


def materializations(instance, jobs: Sequence[str], limit: int = MATERIALIZATIONS) -> dict:
    """Per job, its newest `limit` materialization records, newest first."""
    held = _held(instance)
    with held.lock:
        records = instance.get_asset_records([AssetKey(job) for job in jobs])
        newest = {}
        for record in records:
            last = record.asset_entry.last_materialization_record
            if last is not None:
                newest[record.asset_entry.asset_key.to_user_string()] = last.storage_id
        found = {}
        for job in jobs:
            kept = held.materializations.get(job)
            latest = newest.get(job)
            if latest is None:
                kept = []
            elif kept and kept[0].storage_id == latest:
                pass
            elif kept and latest > kept[0].storage_id:
                after = AssetRecordsFilter(AssetKey(job), after_storage_id=kept[0].storage_id)
                new = instance.fetch_materializations(after, limit=limit).records
                kept = [*new, *kept][:limit]
            else:  # never read, or the newest went back (a wipe): read whole
                kept = list(instance.fetch_materializations(AssetKey(job), limit=limit).records)
            held.materializations[job] = kept
            found[job] = kept
        return found


def finished_runs(instance, jobs: Sequence[str], per_job: int = RUNS_PER_JOB) -> list:
    """The newest `per_job * len(jobs)` finished runs whose planned asset is one of
    `jobs`, newest first (by creation, as `get_run_records` gives them)."""
    held = _held(instance)
    limit = per_job * len(jobs)
    with held.lock:
        jobs = tuple(jobs)
        if held.newest_update is None or held.run_jobs != jobs:
            records = instance.get_run_records(
                filters=RunsFilter(tags={ASSET_TAG: list(jobs)}, statuses=FINISHED_STATUSES),
                limit=limit,
            )
            held.runs = {r.dagster_run.run_id: r for r in records}
            held.run_jobs = jobs
        else:
            since = held.newest_update - UPDATE_OVERLAP
            records = instance.get_run_records(
                filters=RunsFilter(
                    tags={ASSET_TAG: list(jobs)},
                    statuses=FINISHED_STATUSES,
                    updated_after=since,
                )
            )
            held.runs.update({r.dagster_run.run_id: r for r in records})
        ordered = sorted(held.runs.values(), key=lambda r: r.storage_id, reverse=True)[:limit]
        held.runs = {r.dagster_run.run_id: r for r in ordered}
        # (None until a run finished: each tick reads whole, which finds nothing quickly)
        held.newest_update = max((r.update_timestamp for r in ordered), default=None)
        return ordered


def step_outcomes(instance, run_id: str) -> tuple[set[str], set[str]]:
    """The steps (asset names) of a finished run that failed and that succeeded (a
    finished run's events do not change: read once)."""
    held = _held(instance)
    with held.lock:
        if run_id not in held.steps:
            held.steps[run_id] = _read_step_outcomes(instance, run_id)
        return held.steps[run_id]


def _read_step_outcomes(instance, run_id: str) -> tuple[set[str], set[str]]:
    failed: set[str] = set()
    succeeded: set[str] = set()
    kinds = {DagsterEventType.STEP_FAILURE, DagsterEventType.STEP_SUCCESS}
    for record in instance.get_records_for_run(run_id, of_type=kinds).records:
        event = record.event_log_entry.dagster_event
        if event is None or event.step_key is None:
            continue
        if event.event_type == DagsterEventType.STEP_FAILURE:
            failed.add(event.step_key)
        else:
            succeeded.add(event.step_key)
    return failed, succeeded - failed


def chain_steps(run) -> set[str]:
    """The jobs a sensor run planned: its planned asset and its chained steps."""
    return {run.tags.get(ASSET_TAG), *chained_steps(run.tags)}
