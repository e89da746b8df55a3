"""When to cluster a table and which files: arrival-ordered, time-bounded groups (RELATED B).

Pure Python: a table's state in (its files with their arrival ranges, what its consumers
have read, pending clustering instants, active runs, failed attempts), a decision out. No
dagster, pyspark or hudi here, so every decision is unit-tested with fakes and replayed.

The rules:
- Only small files (below `small_file_bytes`) are merged, and only within one partition.
- A group never spans more than `max_span_s` of arrival time (oldest arrival to newest), so
  a merged file stays time-tight: a reader of a recent arrival window never scans history
  outside it. Files are taken in arrival order and a group is capped at one output file
  (`target_file_bytes`). Merged files are small files again, so they merge further while
  the span allows (small -> medium), and never beyond it.
- Clustering leaves the planner's candidate sets alone: it merges only files whose arrivals
  every consumer of the table has already read (arrival max <= the smallest consumer
  watermark). A merged file's pending range is the union of its parts' (hudi_metadata
  hands it on), so merging pending files would coarsen the subsets PMB chooses from; files
  still pending wait until the jobs have read them.
- It pays when it removes at least `min_files` files in one run: the rewrite reads and
  writes those bytes once, and each removed file saves a footer, a listing entry and a
  task for every later reader, so the trigger is the number of files removed.
- A clustering left pending by a failed run is resumed (Hudi rolls its partial files back
  and executes the plan again) before anything new is planned, once nothing says a driver
  still executes it: its heartbeat (our execution strategy beats while its driver executes
  and commits it) has expired, or it has none and its timeline files are as old. A run's
  client can die while the shared Spark service carries its clustering on, and a rollback
  under that driver deletes the files its replacecommit then names. A failed run backs off
  like a failed job run (5 s doubling to 1 min).
- At most one clustering per table runs at a time, and none while a writer run of that
  table is active (a derived table's upserts would be refused in groups under a pending
  clustering): the run claims the table's writer pool, and the decision waits as well.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TypedDict, Unpack

from freshness_pipeline.scheduling.units import US_PER_S

MIB = 1024 * 1024
# A pending clustering whose heartbeat (rewritten every 10 s by ClusteringHeartbeat.java) or,
# without one, whose newest timeline file is younger may still be executing: room for
# a loaded driver's pauses, and for a new instant's driver to begin beating.
HEARTBEAT_EXPIRY_S = 120.0
# A Hudi procedure's options are `k=v,k=v`: no comma, `=` or our separators in names.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_./-]*$")
_GROUP_SEP, _PART_SEP, _FILE_SEP = ";", ":", "+"


@dataclass(frozen=True)
class ClusteringSettings:
    """What clustering does and when (settings.py builds it from the environment)."""

    tables: tuple[str, ...] = ("price_raw", "trade_raw")  # empty: clustering off
    min_files: int = 260  # files a run must remove: ten raw commits (26 partitions each)
    small_file_bytes: int = 64 * MIB
    target_file_bytes: int = 128 * MIB
    max_span_s: int = 300
    tick_s: int = 30
    max_groups: int = 200  # per run (Hudi's hoodie.clustering.plan.strategy.max.num.groups)

    def __post_init__(self) -> None:
        if self.min_files < 1:
            raise ValueError(f"min_files must be at least 1, got {self.min_files}")
        if self.small_file_bytes < 1 or self.target_file_bytes < self.small_file_bytes:
            raise ValueError(
                f"need 0 < small_file_bytes ({self.small_file_bytes}) <= target_file_bytes "
                f"({self.target_file_bytes})"
            )
        if self.max_span_s < 1:
            raise ValueError(f"max_span_s must be at least 1, got {self.max_span_s}")
        if self.max_groups < 1:
            raise ValueError(f"max_groups must be at least 1, got {self.max_groups}")

    @property
    def enabled(self) -> bool:
        return bool(self.tables)


@dataclass(frozen=True)
class TableFile:
    """The latest base file of one file group, with the arrival range of its rows."""

    partition: str
    file_id: str
    size_bytes: int
    arrival_min_us: int | None  # None: unknown (such a file is never merged)
    arrival_max_us: int | None
    written_instant: str  # the commit that wrote this slice (clustering or a writer)


@dataclass(frozen=True)
class PendingClustering:
    """A clustering instant requested or inflight, not completed."""

    instant: str
    heartbeat_age_s: float | None  # None: no heartbeat file (not executing, or not yet)
    touched_age_s: float  # since its newest timeline file (requested, inflight) was written

    def sign_of_life(self) -> str | None:
        """Why a driver may still execute it, or None: nothing says so."""
        if self.heartbeat_age_s is not None:
            if self.heartbeat_age_s < HEARTBEAT_EXPIRY_S:
                return f"its heartbeat is {self.heartbeat_age_s:.0f} s old"
            return None
        if self.touched_age_s < HEARTBEAT_EXPIRY_S:
            return f"it went pending {self.touched_age_s:.0f} s ago, no heartbeat yet"
        return None


@dataclass(frozen=True)
class TableState:
    table: str
    files: tuple[TableFile, ...]
    # Smallest watermark among the jobs reading this table; None with `consumers` set: one
    # of them never ran (nothing is consumed yet). A table nobody reads has every row read.
    consumed_us: int | None
    consumers: tuple[str, ...] = ()
    last_clustering_instant: str | None = None
    pending: tuple[PendingClustering, ...] = ()
    active_run: str | None = None  # why the table's writer pool is busy, if it is
    failed_runs: int = 0  # consecutive failed clustering runs since the last success
    retry_after_us: int | None = None
    external: bool = False  # a declared input someone else writes


@dataclass(frozen=True)
class ClusterGroup:
    """Files of one partition merged into one file, in arrival order."""

    partition: str
    file_ids: tuple[str, ...]
    size_bytes: int
    arrival_min_us: int
    arrival_max_us: int

    @property
    def span_s(self) -> float:
        return (self.arrival_max_us - self.arrival_min_us) / US_PER_S


@dataclass(frozen=True)
class ClusteringDecision:
    table: str
    launch: bool
    reason: str
    groups: tuple[ClusterGroup, ...] = ()
    resume: tuple[str, ...] = ()  # pending clustering instants to execute (again) first
    small_files: int = 0  # small files in the table
    small_bytes: int = 0
    new_small_files: int = 0  # ... written since the last clustering
    pending_small_files: int = 0  # ... still pending for a consumer (left alone)
    files_removed: int = 0  # what the groups save: inputs minus outputs
    attempt: int = 0

    @property
    def input_files(self) -> int:
        return sum(len(g.file_ids) for g in self.groups)

    @property
    def input_bytes(self) -> int:
        return sum(g.size_bytes for g in self.groups)


def output_files(size_bytes: int, target_file_bytes: int) -> int:
    return max(1, math.ceil(size_bytes / target_file_bytes))


def _runs(ordered: Sequence[TableFile], settings: ClusteringSettings) -> list[list[TableFile]]:
    """Consecutive files (in arrival order) cut wherever the next one would stretch the run
    past `max_span_s` of arrival or one output file."""
    span_us = settings.max_span_s * US_PER_S
    runs: list[list[TableFile]] = []
    low = high = size = 0
    for f in ordered:
        assert f.arrival_min_us is not None and f.arrival_max_us is not None
        if (
            runs
            and max(high, f.arrival_max_us) - low <= span_us
            and size + f.size_bytes <= settings.target_file_bytes
        ):
            runs[-1].append(f)
            high, size = max(high, f.arrival_max_us), size + f.size_bytes
        else:
            runs.append([f])
            low, high, size = f.arrival_min_us, f.arrival_max_us, f.size_bytes
    return runs


def group_files(files: Iterable[TableFile], settings: ClusteringSettings) -> list[ClusterGroup]:
    """Per partition, files in arrival order cut into groups of at most `max_span_s` of
    arrival and one output file; a lone file is no group. Oldest groups first, at most
    `max_groups`."""
    by_partition: dict[str, list[TableFile]] = {}
    for f in files:
        if f.arrival_min_us is None or f.arrival_max_us is None:
            continue
        by_partition.setdefault(f.partition, []).append(f)
    groups: list[ClusterGroup] = []
    for partition, members in sorted(by_partition.items()):
        ordered = sorted(members, key=lambda f: (f.arrival_min_us, f.arrival_max_us, f.file_id))
        for run in _runs(ordered, settings):
            if len(run) < 2:
                continue
            groups.append(
                ClusterGroup(
                    partition,
                    tuple(f.file_id for f in run),
                    sum(f.size_bytes for f in run),
                    # A run holds files of known arrival only (_runs leaves the others out).
                    min(f.arrival_min_us for f in run if f.arrival_min_us is not None),
                    max(f.arrival_max_us for f in run if f.arrival_max_us is not None),
                )
            )
    groups.sort(key=lambda g: (g.arrival_min_us, g.partition))
    return groups[: settings.max_groups]


class _Counts(TypedDict, total=False):
    """The file counts a decision reports, whichever way it goes."""

    small_files: int
    small_bytes: int
    new_small_files: int
    pending_small_files: int
    files_removed: int


def decide(state: TableState, settings: ClusteringSettings, now_us: int) -> ClusteringDecision:
    """Whether to launch a clustering run of `state.table` now, what it merges, and why."""
    table = state.table

    def wait(reason: str, **counts: Unpack[_Counts]) -> ClusteringDecision:
        return replace(
            ClusteringDecision(table, False, reason, attempt=state.failed_runs), **counts
        )

    if state.external:
        return wait("a declared input someone else writes: never ours to cluster")
    if state.active_run:
        return wait(state.active_run)
    if state.retry_after_us is not None and state.retry_after_us > now_us:
        left = (state.retry_after_us - now_us) / US_PER_S
        return wait(
            f"backing off after {state.failed_runs} failed clustering run(s): retry in "
            f"{left:.0f} s (a pending plan is resumed then)"
        )
    if state.pending:
        for p in state.pending:
            if (alive := p.sign_of_life()) is not None:
                return wait(
                    f"clustering {p.instant} may still be executing: {alive} (taken for "
                    f"abandoned after {HEARTBEAT_EXPIRY_S:.0f} s)"
                )
        instants = tuple(sorted(p.instant for p in state.pending))
        return ClusteringDecision(
            table,
            True,
            f"resuming clustering {', '.join(instants)} left pending by a failed run "
            "(Hudi rolls back its partial files and runs the plan again)",
            resume=instants,
            attempt=state.failed_runs,
        )
    small = [f for f in state.files if f.size_bytes < settings.small_file_bytes]
    counts: _Counts = {
        "small_files": len(small),
        "small_bytes": sum(f.size_bytes for f in small),
        "new_small_files": sum(
            1
            for f in small
            if state.last_clustering_instant is None
            or f.written_instant > state.last_clustering_instant
        ),
    }
    if state.consumers and state.consumed_us is None:
        return wait(
            f"{len(small)} small files, none read yet by every consumer "
            f"({', '.join(state.consumers)}); clustering waits so the planner's subsets stay "
            "as they are",
            **counts,
        )
    read = [
        f
        for f in small
        if not state.consumers
        or (f.arrival_max_us is not None and state.consumed_us is not None
            and f.arrival_max_us <= state.consumed_us)
    ]  # fmt: skip
    counts["pending_small_files"] = len(small) - len(read)
    groups = group_files(read, settings)
    removed = sum(
        len(g.file_ids) - output_files(g.size_bytes, settings.target_file_bytes) for g in groups
    )
    counts["files_removed"] = removed
    summary = (
        f"{len(small)} small files ({counts['small_bytes'] / MIB:.1f} MiB), "
        f"{counts['new_small_files']} since the last clustering, "
        f"{counts['pending_small_files']} still pending for the jobs (left alone)"
    )
    if removed < settings.min_files:
        return wait(
            f"{summary}; merging the read ones in {settings.max_span_s} s arrival windows "
            f"would remove {removed} files, below the {settings.min_files} a run must remove",
            **counts,
        )
    inputs = sum(len(g.file_ids) for g in groups)
    decision = ClusteringDecision(
        table,
        True,
        f"{summary}; merging {inputs} files into {inputs - removed} in {len(groups)} groups "
        f"of at most {settings.max_span_s} s of arrival removes {removed} files",
        groups=tuple(groups),
        attempt=state.failed_runs,
    )
    return replace(decision, **counts)


def encode_groups(groups: Sequence[ClusterGroup]) -> str:
    """The groups as our plan strategy reads them (`freshness.clustering.groups`):
    `partition:fid+fid;partition:fid+fid`, safe inside a Hudi procedure's options."""
    parts = []
    for g in groups:
        for name in (g.partition, *g.file_ids):
            if not _SAFE_NAME.match(name):
                raise ValueError(
                    f"partition or file id {name!r} has a character a Hudi procedure option "
                    "cannot carry (allowed: letters, digits, _ . / -)"
                )
        parts.append(f"{g.partition}{_PART_SEP}{_FILE_SEP.join(g.file_ids)}")
    return _GROUP_SEP.join(parts)


def decode_groups(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """`encode_groups` read back: (partition, file ids) per group."""
    found = []
    for part in filter(None, text.split(_GROUP_SEP)):
        partition, sep, files = part.partition(_PART_SEP)
        if not sep or not files:
            raise ValueError(f"{part!r} is not partition:fid+fid")
        found.append((partition, tuple(files.split(_FILE_SEP))))
    return found


TAG_PREFIX = "freshness/clustering_"
TABLE_TAG = f"{TAG_PREFIX}table"


@dataclass(frozen=True)
class ClusteringRequest:
    """A launch as the sensor writes it: run key, config and tags (read back by the op)."""

    table: str
    run_key: str
    groups: str
    resume: tuple[str, ...]
    tags: Mapping[str, str] = field(default_factory=dict)


def request_for(decision: ClusteringDecision, latest_instant: str | None) -> ClusteringRequest:
    """The run for a launch decision: keyed by the table's newest commit and the attempt,
    so the same table state never launches twice and a retry gets a new key."""
    key = f"cluster:{decision.table}:{latest_instant or 'empty'}:a{decision.attempt}"
    tags = {
        TABLE_TAG: decision.table,
        f"{TAG_PREFIX}reason": decision.reason[:1000],
        f"{TAG_PREFIX}groups": str(len(decision.groups)),
        f"{TAG_PREFIX}files_in": str(decision.input_files),
        f"{TAG_PREFIX}files_removed": str(decision.files_removed),
        f"{TAG_PREFIX}mib_in": f"{decision.input_bytes / MIB:.2f}",
        f"{TAG_PREFIX}attempt": str(decision.attempt),
    }
    if decision.resume:
        tags[f"{TAG_PREFIX}resume"] = ",".join(decision.resume)
    return ClusteringRequest(
        decision.table, key, encode_groups(decision.groups), decision.resume, tags
    )
