"""Hudi's timeline as data: instants and their times, the commits and the files they
wrote, the latest file slices, parsed from the commit metadata JSON hudi-rs returns.

Hudi 1.x names a completed instant `<requested>_<completed>.<action>`; hudi-rs does not
expose the completion time, so it is read from the timeline folder's file names (the same
listing Hudi itself does): the patterns below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from freshness_pipeline.hudi.commit_keys import ARRIVAL_MAX_KEY, ARRIVAL_MIN_KEY, WATERMARK_KEY
from freshness_pipeline.scheduling.units import US_PER_S

COMPLETED = re.compile(r"^(\d{17})(?:_(\d{17}))?\.(commit|replacecommit|deltacommit)$")
COMPLETED_ACTIONS = ("commit", "replacecommit", "deltacommit")
# A clustering not yet completed: Hudi 1.x names it `clustering`, table version 6 a
# pending `replacecommit` (which an insert_overwrite also is; our tables have none).
# A completed clean of timeline layout 2 (the only layout naming its completion time).
COMPLETED_CLEAN = re.compile(r"^(\d{17})_(\d{17})\.clean$")
PENDING_CLUSTERING = re.compile(r"^(\d{17})\.(clustering|replacecommit)\.(requested|inflight)$")
CLUSTERING_OPERATIONS = frozenset({"CLUSTER", "cluster"})
# A merge-on-read compaction (a `commit`) folds a file group's log files into a new base
# file: rows that arrived with the delta commits before it, none of its own.
COMPACTION_OPERATIONS = frozenset({"COMPACT", "compact", "LOG_COMPACT", "logcompaction"})


def instant_to_us(instant: str, local_zone: bool = False) -> int:
    """A Hudi instant (`yyyyMMddHHmmssSSS`) as epoch micros; the table's timeline zone is
    UTC or (`hoodie.table.timeline.timezone=LOCAL`, Hudi's default) this machine's zone."""
    import datetime as dt

    stamp = dt.datetime.strptime(instant[:17], "%Y%m%d%H%M%S%f")
    aware = stamp.astimezone() if local_zone else stamp.replace(tzinfo=dt.UTC)
    return as_micros(aware)


def us_to_instant(us: int) -> str:
    import datetime as dt

    stamp = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=us)
    return stamp.strftime("%Y%m%d%H%M%S") + f"{stamp.microsecond // 1000:03d}"


def as_micros(value: object) -> int:
    """Epoch microseconds of an int (as it is) or a datetime (naive: UTC)."""
    if isinstance(value, int):
        return value
    # pyarrow returns datetimes for timestamp columns
    import datetime as dt

    assert isinstance(value, dt.datetime)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    delta = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * US_PER_S + delta.microseconds


@dataclass(frozen=True)
class WrittenFile:
    """One file slice a commit wrote (a WriteStat in Hudi's commit metadata)."""

    partition: str
    file_id: str
    path: str  # relative to the table root; a log file for a merge-on-read log write
    size_bytes: int
    num_writes: int
    num_inserts: int
    num_update_writes: int
    prev_commit: str

    @property
    def is_log(self) -> bool:
        """A merge-on-read log write (`.<fileId>_<instant>.log.<n>_<token>`)."""
        # Not PurePosixPath(path).name: pathlib interns every part it parses, and a code
        # server asks this of every file on every active timeline each tick.
        return ".log." in self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class InstantTiming:
    """A commit's way through the timeline, as epoch micros of the writer's clock."""

    requested_us: int
    inflight_us: int | None  # None: the inflight file is gone (archived) or never written
    completed_us: int
    clean_us: tuple[int, int] | None  # (started, completed) of the first clean after it


@dataclass(frozen=True)
class Commit:
    """A completed commit, deltacommit or replacecommit, with what it wrote and its extra
    metadata."""

    instant: str
    completion: str
    action: str
    operation: str
    written: tuple[WrittenFile, ...]
    replaced_file_ids: Mapping[str, tuple[str, ...]]
    extra: Mapping[str, str]

    def extra_int(self, key: str) -> int | None:
        value = self.extra.get(key)
        return int(value) if value not in (None, "") else None

    @property
    def watermark_us(self) -> int | None:
        return self.extra_int(WATERMARK_KEY)

    @property
    def arrival_range_us(self) -> tuple[int, int] | None:
        low, high = self.extra_int(ARRIVAL_MIN_KEY), self.extra_int(ARRIVAL_MAX_KEY)
        return (low, high) if low is not None and high is not None else None

    @property
    def is_clustering(self) -> bool:
        """A replacecommit that rewrote rows without adding any (clustering): its written
        groups inherit the pending ranges of the groups it replaced."""
        return self.action == "replacecommit" and (
            self.operation in CLUSTERING_OPERATIONS
            or (self.operation == "" and self.arrival_range_us is None)
        )

    @property
    def is_compaction(self) -> bool:
        return self.operation in COMPACTION_OPERATIONS

    @property
    def is_rewrite(self) -> bool:
        """Rewrote rows that arrived before it (clustering, compaction): not an arrival."""
        return self.is_clustering or self.is_compaction


@dataclass(frozen=True)
class FileSlice:
    """The latest base file of a file group (and, merge-on-read, the bytes of its logs)."""

    partition: str
    file_id: str
    path: str  # relative to the table root; "" for a merge-on-read group with logs only
    size_bytes: int  # base file plus log files
    base_instant: str


def commit_from_json(instant: str, completion: str, action: str, meta: dict) -> Commit:
    written = []
    for partition, stats in (meta.get("partitionToWriteStats") or {}).items():
        for stat in stats or []:
            written.append(
                WrittenFile(
                    partition=stat.get("partitionPath") or partition,
                    file_id=stat["fileId"],
                    path=stat["path"],
                    size_bytes=int(stat.get("fileSizeInBytes") or 0),
                    num_writes=int(stat.get("numWrites") or 0),
                    num_inserts=int(stat.get("numInserts") or 0),
                    num_update_writes=int(stat.get("numUpdateWrites") or 0),
                    prev_commit=str(stat.get("prevCommit") or ""),
                )
            )
    replaced = {
        part: tuple(fids or [])
        for part, fids in (meta.get("partitionToReplaceFileIds") or {}).items()
    }
    extra = {k: str(v) for k, v in (meta.get("extraMetadata") or {}).items() if k != "schema"}
    return Commit(
        instant=instant,
        completion=completion,
        action=action,
        operation=str(meta.get("operationType") or ""),
        written=tuple(written),
        replaced_file_ids=replaced,
        extra=extra,
    )
