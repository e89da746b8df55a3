"""Where a run's time goes: from the run queue to Hudi's clean, one number per
phase, recorded in the materialization's metadata (`phase_<name>_s`, which the asset page
plots over runs) and summarized per job by the experiment's report.

The phases, in order:
- queue_wait: enqueued until the run queue let the run go (K and the writer pools);
- launch: from then (or from its creation, without a queue) until the asset's code runs:
  the run process, code loading, resources;
- plan: the run config checked and resolved against Hudi metadata;
- session: the Spark session (a Connect session on the service, or a whole driver);
- read: the inputs' deltas read and counted;
- transform: the job's SQL, up to the rows to upsert;
- write_prepare: Spark plans the write and Hudi starts the commit (the first run's empty
  commit too);
- index_lookup: Hudi tags each incoming record with its file group (requested until
  inflight on the timeline; the workload profile is a small part of it);
- write_files: the file groups rewritten and the commit completed (inflight until
  completed, under the table's lock and our stale-plan check);
- after_commit: what the write does after completing (clean, archive), until it returns;
  `clean` is the part of it the timeline shows as a clean.

The timeline's times come from the writer's clock (the Spark driver), the others from this
process's: on one machine they agree. On a cluster whose clocks differ, the four write
phases still add up to the write's wall time: the split between write_prepare and
after_commit is clamped to it, while index_lookup and write_files, both on the writer's
clock, stay exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import median

from freshness_pipeline.scheduling.units import US_PER_S

PHASES = (
    "queue_wait",
    "launch",
    "plan",
    "session",
    "read",
    "transform",
    "write_prepare",
    "index_lookup",
    "write_files",
    "after_commit",
)
PREFIX = "phase_"
# What a run pays before its first step's job starts: L, counted once per run (METHOD 8);
# a chained run's later steps record none of them.
RUN_COST_PHASES = ("phase_launch_s", "phase_plan_s", "phase_session_s")


def metadata_key(phase: str) -> str:
    return f"{PREFIX}{phase}_s"


@dataclass(frozen=True)
class StepTimes:
    """The runner's own marks, epoch micros of this process's clock."""

    started_us: int
    inputs_read_us: int
    transformed_us: int
    write_returned_us: int


@dataclass(frozen=True)
class TimelineTimes:
    """The commit's marks on the Hudi timeline (hudi_metadata.InstantTiming), epoch micros."""

    requested_us: int
    inflight_us: int | None
    completed_us: int
    clean_us: tuple[int, int] | None = None


def _s(us: int) -> float:
    return round(us / US_PER_S, 3)


def runner_phases(step: StepTimes, timeline: TimelineTimes | None) -> dict[str, float]:
    """read, transform and the write's four phases (one `write` phase without a timeline)."""
    phases = {
        "read": _s(step.inputs_read_us - step.started_us),
        "transform": _s(step.transformed_us - step.inputs_read_us),
    }
    total = max(step.write_returned_us - step.transformed_us, 0)
    if timeline is None:
        return phases | {"write": _s(total)}
    hudi_span = max(timeline.completed_us - timeline.requested_us, 0)
    outside = max(total - hudi_span, 0)
    prepare = min(max(timeline.requested_us - step.transformed_us, 0), outside)
    inflight = timeline.inflight_us
    if inflight is None or not timeline.requested_us <= inflight <= timeline.completed_us:
        inflight = timeline.requested_us  # no inflight mark: the whole span is writing
    phases |= {
        "write_prepare": _s(prepare),
        "index_lookup": _s(inflight - timeline.requested_us),
        "write_files": _s(timeline.completed_us - inflight),
        "after_commit": _s(outside - prepare),
    }
    if timeline.clean_us is not None:
        started, done = timeline.clean_us
        if timeline.completed_us <= started <= timeline.completed_us + outside - prepare:
            phases["clean"] = _s(done - started)
    return phases


def dagster_phases(
    created_us: int,
    enqueued_us: int | None,
    dequeued_us: int | None,
    body_started_us: int,
    planned_us: int,
    session_us: int | None,
) -> dict[str, float]:
    """queue_wait, launch, plan and session from the run's events and the asset's marks. A
    run that never went through the run queue (`dagster asset materialize` in process) has
    no queue_wait (left out, not 0: nothing was measured)."""
    phases: dict[str, float] = {}
    if enqueued_us and dequeued_us:
        phases["queue_wait"] = _s(max(dequeued_us - enqueued_us, 0))
    launched_from = dequeued_us or created_us
    phases |= {
        "launch": _s(max(body_started_us - launched_from, 0)),
        "plan": _s(max(planned_us - body_started_us, 0)),
    }
    if session_us is not None:
        phases["session"] = _s(max(session_us - planned_us, 0))
    return phases


def as_metadata(phases: Mapping[str, float]) -> dict[str, float]:
    return {metadata_key(name): value for name, value in phases.items()}


def from_metadata(metadata: Mapping[str, object]) -> dict[str, float]:
    found: dict[str, float] = {}
    for key, value in metadata.items():
        if key.startswith(PREFIX) and key.endswith("_s") and isinstance(value, int | float):
            found[key[len(PREFIX) : -2]] = float(value)
    return found


def median_phases(runs: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per phase, the median over the runs that recorded it (a phase a run lacks, such as
    the clean most runs do not trigger, is not counted as zero)."""
    values: dict[str, list[float]] = {}
    for phases in runs:
        for name, value in phases.items():
            values.setdefault(name, []).append(value)
    order = [*PHASES, "write", "clean"]
    return {
        name: round(median(values[name]), 3)
        for name in sorted(values, key=lambda n: order.index(n) if n in order else len(order))
    }
