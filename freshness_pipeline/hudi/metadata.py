"""The only code that reads a Hudi table's metadata: its timeline, commits, file slices
and, for a consumer at `t_done`, its pending files with their arrival ranges.

hudi-rs (the `hudi` package) gives the completed instants, their commit metadata and the
latest file slices (parsed in timeline.py); pyarrow gives Parquet footers (footers.py).
Each commit's arrival range comes from the first of (commit_keys.py): our keys; the
declared arrival column's min/max in the Parquet footers of the base files the commit
wrote; else the commit's completion time, an upper bound (an approximation the run tags
and metadata say). With no arrival column declared, a row's arrival is defined as the
completion time of the commit that wrote it (`_hoodie_commit_time`), exactly. Merge-on-
read tables' delta commits are read too; their log files are read by Hudi's own reader.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import NamedTuple

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from freshness_pipeline.hudi.caches import BoundedCache
from freshness_pipeline.hudi.commit_keys import (
    APPROXIMATE_SOURCES,
    ARRIVAL_COLUMN,
    ARRIVAL_SOURCES,
    SOURCE_COMPLETION,
    SOURCE_FOOTER,
    SOURCE_KEYS,
)
from freshness_pipeline.hudi.footers import footer_arrival_range, own_rows_arrival_range
from freshness_pipeline.hudi.location import Location
from freshness_pipeline.hudi.timeline import (
    COMPLETED,
    COMPLETED_ACTIONS,
    COMPLETED_CLEAN,
    PENDING_CLUSTERING,
    Commit,
    FileSlice,
    InstantTiming,
    commit_from_json,
    instant_to_us,
    us_to_instant,
)
from freshness_pipeline.scheduling.timefmt import iso

_RETRIES = 20
_RETRY_SLEEP_S = 0.1


class TableNotFound(FileNotFoundError):
    """The table URI holds no Hudi table."""


class ArrivalRange(NamedTuple):
    """A commit's arrival range and where it came from; `low` None: unknown (only an upper
    bound is known), so a reader must treat the commit as pending from its t_done on."""

    low: int | None
    high: int
    source: str


class ArrivalRegression(NamedTuple):
    """A commit whose declared arrival column starts below what earlier commits reached."""

    instant: str
    low: int
    earlier_high: int

    def describe(self, table: str, column: str | None) -> str:
        return (
            f"{table}: commit {self.instant} wrote {column} from {iso(self.low)}, below "
            f"{iso(self.earlier_high)} that earlier commits reached; a job that planned "
            "between them skips those rows (the arrival column must not decrease)"
        )


def arrival_regressions(ranges: list[tuple[str, ArrivalRange]]) -> list[ArrivalRegression]:
    """Commits, in completion order, whose arrival-column range begins below the highest
    arrival an earlier commit wrote. Only footer ranges are compared: our keys and
    completion times never decrease, and a completion time is on another clock."""
    found, reached = [], None
    for instant, span in ranges:
        if span.source != SOURCE_FOOTER or span.low is None:
            continue
        if reached is not None and span.low < reached:
            found.append(ArrivalRegression(instant, span.low, reached))
        reached = span.high if reached is None else max(reached, span.high)
    return found


@dataclass(frozen=True)
class PendingFile:
    """A file slice holding rows a consumer at `t_done` has not yet reflected."""

    slice: FileSlice
    uri: str
    pending_min_us: int  # METHOD 5.5: span of the unconsumed commits that wrote the group
    pending_max_us: int
    pending_commits: tuple[str, ...]
    footer_min_us: int | None = None  # whole-file footer statistics (published mode)
    footer_max_us: int | None = None
    arrival_source: str = SOURCE_KEYS  # the weakest source among its pending commits
    # When its pending rows began to land: the completion of its oldest pending commit (a
    # clustering that moved them counts from the commit that wrote them). None: unknown
    # (only archived commits wrote it). The planner's aging counts a job's wait from it.
    pending_since_us: int | None = None

    @property
    def approximate(self) -> bool:
        return self.arrival_source in APPROXIMATE_SOURCES


# Per table, bounded so a long-running code server stays flat whatever the tables' age:
# - commit metadata: exactly the commits on its active timeline, replaced as a whole when
#   the timeline changes, so archived instants leave the cache with it (as one LRU over
#   instants they stayed until 10k commits pushed them out: hours of raw commits).
# - latest slices: its newest listing, replaced when a commit lands. Only a consumer older
#   than the active timeline needs one (see `pending_files`).
COMMIT_CACHE: BoundedCache[str, dict[tuple[str, str], Commit]] = BoundedCache(256)
SLICE_CACHE: BoundedCache[str, tuple[str, list[FileSlice]]] = BoundedCache(256)


class PendingInstant(NamedTuple):
    """A pending clustering instant and how long ago anything said it was alive (s)."""

    instant: str
    heartbeat_age_s: float | None
    touched_age_s: float


class _PendingSpan(NamedTuple):
    """A file group's pending arrivals: the span, the commits that wrote them (oldest
    first) and where their ranges came from."""

    low: int
    high: int
    commits: tuple[str, ...]
    sources: frozenset[str]

    def widened(self, other: _PendingSpan) -> _PendingSpan:
        return _PendingSpan(
            min(self.low, other.low),
            max(self.high, other.high),
            self.commits + other.commits,
            self.sources | other.sources,
        )


class HudiTableMetadata:
    """Read-only snapshot view of one Hudi table's metadata.

    The timeline and file slices are read once per object and then reused, so one planning
    pass sees one consistent state; create a new object to see newer commits.
    """

    def __init__(
        self,
        table: str | Location,
        arrival_column: str | None = ARRIVAL_COLUMN,
        external: bool = False,
    ) -> None:
        self.location = table if isinstance(table, Location) else Location.parse(table)
        # An external table (written by someone else) resolves arrival ranges through the
        # whole chain and has a watermark without our keys; ours use our keys only.
        self.arrival_column = arrival_column
        self.external = external
        self._arrivals: dict[str, ArrivalRange | None] = {}
        # The Spark spelling: file URIs handed to runs and run configs are spelled so.
        self.table_uri = self.location.spark
        fs, root = self.location.filesystem()
        self._fs, self._root = fs, root.rstrip("/")
        self._commits: list[Commit] | None = None
        self._slices: list[FileSlice] | None = None
        self._written: dict[tuple[str, str], FileSlice] | None = None
        self._written_by_id: dict[str, FileSlice] | None = None
        self._replaced: frozenset[str] | None = None
        self._names: list[str] | None = None
        self._mtimes: dict[str, int] = {}
        props = self._read_properties()
        for _ in range(_RETRIES):
            if "hoodie.table.name" in props:
                break
            # Hudi rewrites hoodie.properties in place while it creates or updates a
            # table; a reader can catch it half written.
            time.sleep(_RETRY_SLEEP_S)
            props = self._read_properties()
        else:
            raise TableNotFound(f"Hudi table at {self.table_uri} is still being created")
        self.properties: dict[str, str] = props  # hoodie.properties as read at open
        self.table_name = props.get("hoodie.table.name", PurePosixPath(root).name)
        self.table_type = props.get("hoodie.table.type", "COPY_ON_WRITE")
        self.table_version = int(props.get("hoodie.table.version", "0") or 0)
        # Change data capture: the table's CDC log shows deleted rows and old versions.
        self.cdc_enabled = props.get("hoodie.table.cdc.enabled", "false").lower() == "true"
        self._local_zone = props.get("hoodie.table.timeline.timezone", "LOCAL") == "LOCAL"
        layout = props.get("hoodie.timeline.layout.version", "1")
        self._layout_v2 = layout == "2"
        timeline_dir = props.get("hoodie.timeline.path", "timeline") if layout == "2" else ""
        self._timeline_path = f"{self._root}/.hoodie" + (f"/{timeline_dir}" if timeline_dir else "")
        history = props.get("hoodie.timeline.history.path", "history") if layout == "2" else ""
        self._history_path = (
            f"{self._timeline_path}/{history}" if history else f"{self._root}/.hoodie/archived"
        )

    def _read_properties(self) -> dict[str, str]:
        path = f"{self._root}/.hoodie/hoodie.properties"
        try:
            with self._fs.open_input_stream(path) as handle:
                text = handle.read().decode("utf-8")
        except (FileNotFoundError, OSError) as exc:
            raise TableNotFound(f"No Hudi table at {self.table_uri} ({path} is missing)") from exc
        props = {}
        for line in text.splitlines():
            if line and not line.startswith("#") and "=" in line:
                key, value = line.split("=", 1)
                props[key.strip()] = value.strip()
        return props

    def _hudi(self):
        """A fresh hudi-rs handle: a built table holds the timeline as of its build."""
        from hudi import HudiTableBuilder

        for attempt in range(_RETRIES):
            try:
                builder = HudiTableBuilder.from_base_uri(self.location.hudi_rs)
                if self.location.storage_options:
                    builder = builder.with_storage_options(self.location.object_store_options)
                return builder.build()
            except Exception:
                # The same half-written hoodie.properties race as above, seen by hudi-rs.
                if attempt == _RETRIES - 1:
                    raise
                time.sleep(_RETRY_SLEEP_S)

    # --- timeline -----------------------------------------------------------------------

    @property
    def is_merge_on_read(self) -> bool:
        return self.table_type == "MERGE_ON_READ"

    def _timeline_names(self) -> list[str]:
        """File names in the active timeline folder, listed once per snapshot."""
        if self._names is None:
            infos = self._fs.get_file_info(pafs.FileSelector(self._timeline_path))
            files = [i for i in infos if i.type == pafs.FileType.File]
            self._names = sorted(i.base_name for i in files)
            # Timeline layout 1 (table version 6) names a completed instant without its
            # completion time; the completed file's modification time is when it completed.
            self._mtimes = {i.base_name: i.mtime_ns for i in files}
        return self._names

    def _completion_times(self) -> dict[str, tuple[str, str]]:
        """instant -> (completion time, action) for completed commits, deltacommits and
        replacecommits."""
        found: dict[str, tuple[str, str]] = {}
        for name in self._timeline_names():
            match = COMPLETED.match(name)
            if match and match.group(3) in COMPLETED_ACTIONS:
                instant, completion, action = match.groups()
                if completion is None and not self._layout_v2:
                    mtime_ns = self._mtimes.get(name)
                    if mtime_ns is not None:
                        completion = max(us_to_instant(mtime_ns // 1000), instant)
                found[instant] = (completion or instant, action)
        return found

    def completion_us(self, commit: Commit) -> int:
        """When a commit completed, as epoch micros."""
        return instant_to_us(commit.completion, self._local_zone and self._layout_v2)

    def instant_timing(self, commit: Commit) -> InstantTiming:
        """When a commit was requested, went inflight and completed, and the clean that
        followed it, from the timeline: the requested time is the instant itself, the
        inflight time the inflight file's modification time (the writer creates it after
        tagging every incoming record with its file group: the index lookup), the
        completion time the completed file's (where a run's time goes)."""
        zone = self._local_zone and self._layout_v2
        inflight_us = None
        names = self._timeline_names()  # lists the folder once, with modification times
        for name in (f"{commit.instant}.inflight", f"{commit.instant}.{commit.action}.inflight"):
            mtime_ns = self._mtimes.get(name)
            if mtime_ns is not None:
                inflight_us = mtime_ns // 1000
                break
        completed_us = self.completion_us(commit)
        clean = None
        for name in names:
            match = COMPLETED_CLEAN.match(name)
            if match and instant_to_us(match.group(1), zone) >= completed_us:
                started, done = (instant_to_us(g, zone) for g in match.groups())
                if clean is None or started < clean[0]:
                    clean = (started, done)
        return InstantTiming(
            requested_us=instant_to_us(commit.instant, zone),
            inflight_us=inflight_us,
            completed_us=completed_us,
            clean_us=clean,
        )

    def commits(self) -> list[Commit]:
        """Completed commits and replacecommits still on the active timeline, in
        completion-time order."""
        if self._commits is None:
            self._commits = self._read_commits()
        return self._commits

    def _read_commits(self) -> list[Commit]:
        """Commit metadata comes from COMMIT_CACHE; hudi-rs parses only instants not seen
        before, so a tick with no new commit reads one directory listing per table."""
        completion = self._completion_times()
        cached = COMMIT_CACHE.get(self.table_uri) or {}
        found = {i: cached.get((i, done)) for i, (done, _) in completion.items()}
        if any(c is None for c in found.values()):
            timeline = self._hudi().get_timeline()
            instants = (
                list(timeline.get_completed_commits())
                + list(timeline.get_completed_replacecommits())
                + list(timeline.get_completed_deltacommits())
            )
            for instant in instants:
                name = instant.timestamp
                if name not in completion or found.get(name) is not None:
                    continue  # completed after our listing (next snapshot), or cached
                meta = json.loads(timeline.get_instant_metadata_in_json(instant))
                done, action = completion[name]
                found[name] = commit_from_json(name, done, action, meta)
        commits = [c for c in found.values() if c is not None]
        COMMIT_CACHE.put(self.table_uri, {(c.instant, c.completion): c for c in commits})
        commits.sort(key=lambda c: (c.completion, c.instant))
        return commits

    def latest_commit(self) -> Commit | None:
        commits = self.commits()
        return commits[-1] if commits else None

    def watermark_us(self) -> int | None:
        """The table's t_latest: the watermark of its newest commit that carries one; for an
        external table without our keys, the highest arrival any commit wrote."""
        for commit in reversed(self.commits()):
            if commit.watermark_us is not None:
                return commit.watermark_us
        if not self.external:
            return None
        highs = [r.high for r in map(self.commit_arrival, self.commits()) if r is not None]
        return max(highs) if highs else None

    def commit_arrival(self, commit: Commit) -> ArrivalRange | None:
        """The arrival range of the rows `commit` wrote, from the strongest source there is
        (module docstring); None for a commit that wrote no rows of its own (clustering,
        an empty bootstrap commit) or, in one of our tables, carries no keys."""
        key = f"{commit.instant}_{commit.completion}"
        if key in self._arrivals:
            return self._arrivals[key]
        found = self._resolve_arrival(commit)
        self._arrivals[key] = found
        return found

    def _resolve_arrival(self, commit: Commit) -> ArrivalRange | None:
        span = commit.arrival_range_us
        if span is not None:
            return ArrivalRange(span[0], span[1], SOURCE_KEYS)
        if not self.external or commit.is_rewrite or not commit.written:
            return None
        completed = self.completion_us(commit)
        if self.arrival_column is None:
            # Arrival is defined as the completion of the commit that wrote the row.
            return ArrivalRange(completed, completed, SOURCE_COMPLETION)
        base_files = [w for w in commit.written if not w.is_log]
        if base_files and len(base_files) == len(commit.written):
            ranges = [
                footer_arrival_range(self.file_location(w.path), self.arrival_column)
                for w in base_files
            ]
            lows = [r.low for r in ranges if r.low is not None]
            highs = [r.high for r in ranges if r.high is not None]
            if lows and highs:
                return ArrivalRange(min(lows), max(highs), SOURCE_FOOTER)
        # Log files (merge-on-read) carry no footer: the completion time bounds the rows'
        # arrival from above; below, nothing is known, so the groups stay pending from t_done.
        return ArrivalRange(None, completed, SOURCE_COMPLETION)

    def arrival_regressions(self) -> list[ArrivalRegression]:
        """Where a declared arrival column went backwards (see `arrival_regressions`),
        judged on the rows each commit wrote itself. A replacecommit rewrites rows that are
        already there (insert_overwrite, clustering), so only commits that add rows are
        checked."""
        if not self.external or self.arrival_column is None:
            return []
        adding = [c for c in self.commits() if c.action != "replacecommit"]
        ranges = [(c.instant, r) for c in adding if (r := self._own_rows_range(c)) is not None]
        return arrival_regressions(ranges)

    def _own_rows_range(self, commit: Commit) -> ArrivalRange | None:
        """The arrival range of the rows `commit` itself wrote. A base file that a
        copy-on-write merge rewrote also carries older rows (its footer starts at theirs),
        so those rows are left out by their commit time; log-only writes have no footer."""
        base = [w for w in commit.written if not w.is_log]
        if not base or len(base) != len(commit.written) or self.arrival_column is None:
            return None
        ranges = []
        for written in base:
            location = self.file_location(written.path)
            carried = written.num_writes - written.num_inserts - written.num_update_writes
            if carried > 0:
                ranges.append(own_rows_arrival_range(location, self.arrival_column, commit.instant))
            else:
                ranges.append(footer_arrival_range(location, self.arrival_column))
        lows = [r.low for r in ranges if r.low is not None]
        highs = [r.high for r in ranges if r.high is not None]
        if not lows or not highs:
            return None
        return ArrivalRange(min(lows), max(highs), SOURCE_FOOTER)

    def latest_extra(self, key: str) -> str | None:
        for commit in reversed(self.commits()):
            if key in commit.extra:
                return commit.extra[key]
        return None

    def has_archived_commits(self) -> bool:
        """Whether instants were archived off the active timeline (their metadata is gone
        from it, so pending ranges must fall back to footers for groups they wrote)."""
        try:
            infos = self._fs.get_file_info(pafs.FileSelector(self._history_path))
        except (FileNotFoundError, OSError):
            return False
        return any(info.type == pafs.FileType.File for info in infos)

    def last_clustering(self) -> Commit | None:
        """The newest completed clustering on the active timeline."""
        return next((c for c in reversed(self.commits()) if c.is_clustering), None)

    def uncompleted_instants(self) -> list[str]:
        """Instants requested or inflight and not completed, oldest first: writes in
        progress or failed and not yet rolled back. Hudi's own reader counts the files of
        one older than the table's first completed commit as committed ("before the
        timeline starts": a write killed in a table's first commit, until its lazy
        rollback); hudi-rs and this module do not."""
        completed = self._completion_times()
        found = set()
        for name in self._timeline_names():
            instant, _, rest = name.partition(".")
            if rest.endswith(("requested", "inflight")) and instant not in completed:
                found.add(instant)
        return sorted(found)

    def pending_clustering(self, now_s: float | None = None) -> list[PendingInstant]:
        """Clustering instants requested or inflight and not completed, oldest first, each
        with the age of its heartbeat file (None: none; the clustering's driver beats while
        it executes and commits the instant, and drops the file when it stops) and of its
        newest timeline file (its driver may not have begun to beat yet)."""
        completed = self._completion_times()
        touched: dict[str, int] = {}
        for name in self._timeline_names():
            match = PENDING_CLUSTERING.match(name)
            if match and (instant := match.group(1)) not in completed:
                mtime_ns = self._mtimes.get(name) or 0
                touched[instant] = max(touched.get(instant, 0), mtime_ns)
        if not touched:
            return []
        now_s = time.time() if now_s is None else now_s
        found = []
        for instant in sorted(touched):
            info = self._fs.get_file_info(f"{self._root}/.hoodie/.heartbeat/{instant}")
            heartbeat = None
            if info.type == pafs.FileType.File and info.mtime_ns is not None:
                heartbeat = max(0.0, now_s - info.mtime_ns / 1e9)
            touched_age = max(0.0, now_s - touched[instant] / 1e9)
            found.append(PendingInstant(instant, heartbeat, touched_age))
        return found

    # --- file slices ----------------------------------------------------------------------

    def latest_file_slices(self) -> list[FileSlice]:
        if self._slices is None:
            self._slices = self._read_file_slices()
        return self._slices

    def _read_file_slices(self) -> list[FileSlice]:
        """Latest slices from SLICE_CACHE while the timeline listing is unchanged (the same
        completed instants give the same latest slices); from hudi-rs otherwise."""
        state = hashlib.sha1("\n".join(self._timeline_names()).encode()).hexdigest()
        cached = SLICE_CACHE.get(self.table_uri)
        if cached is not None and cached[0] == state:
            return cached[1]
        slices = []
        for fs in self._hudi().get_file_slices():
            slices.append(
                FileSlice(
                    partition=fs.partition_path,
                    file_id=fs.file_id,
                    path=fs.base_file_relative_path(),
                    # base and log files: a merge-on-read run reads both
                    size_bytes=int(fs.total_size_bytes()),
                    base_instant=fs.creation_instant_time,
                )
            )
        slices.sort(key=lambda s: (s.partition, s.file_id))
        SLICE_CACHE.put(self.table_uri, (state, slices))
        return slices

    def written_slices(self) -> dict[tuple[str, str], FileSlice]:
        """(partition, file id) -> latest slice, for every file group an active commit wrote.

        Built from commit metadata alone (COMMIT_CACHE), so its cost follows the active
        timeline, which archival bounds, not the table: a copy-on-write commit's
        write stat names the new base file of each group it wrote, so a group's latest
        slice is the one its last writer (in completion order) wrote, unless a later
        replacecommit replaced the group. Groups only archived commits wrote are absent;
        `latest_file_slices` lists those.
        """
        if self._written is None:
            written: dict[tuple[str, str], FileSlice] = {}
            for commit in self.commits():
                for part, fids in commit.replaced_file_ids.items():
                    for fid in fids:
                        written.pop((part, fid), None)
                for w in commit.written:
                    key = (w.partition, w.file_id)
                    if w.is_log:
                        # A merge-on-read log write: the group's base file is unchanged.
                        old = written.get(key)
                        base, size, since = (
                            (old.path, old.size_bytes, old.base_instant)
                            if old
                            else ("", 0, commit.instant)
                        )
                        written[key] = FileSlice(
                            w.partition, w.file_id, base, size + w.size_bytes, since
                        )
                    else:
                        written[key] = FileSlice(
                            w.partition, w.file_id, w.path, w.size_bytes, commit.instant
                        )
            self._written = written
        return self._written

    def replaced_file_ids(self) -> frozenset[str]:
        """File groups an active replacecommit replaced (no longer part of the table)."""
        if self._replaced is None:
            self._replaced = frozenset(
                fid for c in self.commits() for fids in c.replaced_file_ids.values() for fid in fids
            )
        return self._replaced

    def latest_slice(self, file_id: str) -> FileSlice | None:
        """The latest slice of one file group, None if it was replaced or never existed.
        Lists the whole table only for a group no active commit wrote."""
        if self._written_by_id is None:
            self._written_by_id = {fid: s for (_, fid), s in self.written_slices().items()}
        if file_id in self._written_by_id:
            return self._written_by_id[file_id]
        if file_id in self.replaced_file_ids():
            return None
        return next((s for s in self.latest_file_slices() if s.file_id == file_id), None)

    def file_uri(self, relative_path: str) -> str:
        return self.location.spark_file(relative_path)

    def file_location(self, relative_path: str) -> Location:
        """A file of this table for pyarrow readers (with the table's storage options)."""
        return self.location.child(relative_path)

    def arrow_schema(self):
        """The table's schema without Hudi's meta columns (hudi-rs, from its commits)."""
        return self._hudi().get_schema()

    def row_count(self) -> int:
        """Rows in the latest snapshot, from Parquet footers (no data scan)."""
        total = 0
        for fs in self.latest_file_slices():
            path = self.file_location(fs.path).path
            with self._fs.open_input_file(path) as handle:
                total += pq.ParquetFile(handle).metadata.num_rows
        return total

    def pending_files(self, t_done_us: int | None, with_footer: bool = False) -> list[PendingFile]:
        """File slices holding rows with arrival_ts > t_done, each with its pending range.

        A file group is pending when an unconsumed commit (arrival_max > t_done) wrote it;
        its pending range spans those commits' arrival ranges, clipped above t_done. A
        replacecommit without our arrival metadata (clustering) hands the pending ranges of
        the file groups it replaced on to the file groups it wrote.
        """
        floor = -1 if t_done_us is None else t_done_us
        commits = self.commits()
        ranges = self._pending_ranges(commits, floor)
        archive_may_be_pending = self._archive_may_be_pending(commits, floor)
        if archive_may_be_pending:
            candidates = self.latest_file_slices()
        else:
            # The usual case: only groups an active commit wrote can be pending, and their
            # latest slices come from the same commit metadata, so a tick never lists the
            # whole table (raw tables gain groups with every commit; RSS would follow).
            slices_by_key = self.written_slices()
            candidates = sorted(
                (slices_by_key[key] for key in ranges if key in slices_by_key),
                key=lambda s: (s.partition, s.file_id),
            )
        completed_at = {c.instant: self.completion_us(c) for c in commits if not c.is_rewrite}
        pending = []
        for fs in candidates:
            found = ranges.get((fs.partition, fs.file_id))
            file = self.file_location(fs.path)
            if found is None and archive_may_be_pending:
                found = self._archived_range(fs, file, floor, commits)
            if found is None:
                continue
            footer = (
                footer_arrival_range(file, self.arrival_column)
                if with_footer and self.arrival_column and fs.path
                else (None, None)
            )
            pending.append(
                PendingFile(
                    fs,
                    self.file_uri(fs.path),
                    found.low,
                    found.high,
                    found.commits,
                    footer_min_us=footer[0],
                    footer_max_us=footer[1],
                    # the weakest source among its pending commits
                    arrival_source=max(found.sources, key=ARRIVAL_SOURCES.index)
                    if found.sources
                    else SOURCE_KEYS,
                    pending_since_us=min(
                        (completed_at[i] for i in found.commits if i in completed_at),
                        default=None,
                    ),
                )
            )
        return pending

    def _pending_ranges(
        self, commits: list[Commit], floor: int
    ) -> dict[tuple[str, str], _PendingSpan]:
        """(partition, file id) -> the span of the commits above `floor` that wrote it."""
        ranges: dict[tuple[str, str], _PendingSpan] = {}
        for commit in commits:
            # A replaced group is gone from the table; its pending rows are either
            # rewritten into the groups this commit wrote (clustering, inherited below) or
            # overwritten (insert_overwrite, which carries its own arrival range).
            inherited = [
                ranges.pop((part, fid))
                for part, fids in commit.replaced_file_ids.items()
                for fid in fids
                if (part, fid) in ranges
            ]
            if commit.is_clustering:
                if inherited:
                    moved = _PendingSpan(
                        min(r.low for r in inherited),
                        max(r.high for r in inherited),
                        tuple(sorted({n for r in inherited for n in r.commits} | {commit.instant})),
                        frozenset().union(*(r.sources for r in inherited)),
                    )
                    for written in commit.written:
                        ranges[(written.partition, written.file_id)] = moved
                continue
            if commit.is_compaction:
                continue  # same file groups: their pending ranges from the delta commits stay
            span = self.commit_arrival(commit)
            if span is None or span.high <= floor:
                continue
            low = floor + 1 if span.low is None else max(span.low, floor + 1)
            own = _PendingSpan(low, span.high, (commit.instant,), frozenset({span.source}))
            for written in commit.written:
                key = (written.partition, written.file_id)
                old = ranges.get(key)
                ranges[key] = own if old is None else old.widened(own)
        return ranges

    def _archive_may_be_pending(self, commits: list[Commit], floor: int) -> bool:
        """Commits archived off the active timeline are older than every active one; if
        t_done predates the oldest active commit they may still be pending, so groups no
        active commit names fall back to their footer range (conservative, never misses)."""
        resolved = [self.commit_arrival(c) for c in commits]
        arrival_floors = [r.low if r.low is not None else -1 for r in resolved if r is not None]
        return self.has_archived_commits() and (not arrival_floors or floor < min(arrival_floors))

    def _archived_range(
        self, fs: FileSlice, uri: str | Location, floor: int, commits: list[Commit]
    ) -> _PendingSpan | None:
        """The pending range of a group only archived commits wrote (older than every
        active commit): its footer range of the arrival column, or, with none declared,
        up to the oldest active commit's completion (every archived one completed before)."""
        if self.arrival_column is not None and fs.path:
            low, high = footer_arrival_range(uri, self.arrival_column)
            source = SOURCE_FOOTER
        else:
            low, high = None, min(self.completion_us(c) for c in commits) if commits else None
            source = SOURCE_COMPLETION
        if high is None or high <= floor:
            return None
        return _PendingSpan(
            max(low if low is not None else floor + 1, floor + 1), high, (), frozenset({source})
        )
