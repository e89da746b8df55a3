"""The soak: one hour of the live demo, checked for what must stay bounded.

    freshness lab soak [--minutes 60] [--rate 2000] [--report F]

Runs the demo's stack (shared Spark service, replayer, ingestion, Dagster daemon and
sensor) on a throwaway lakehouse and samples, every `--interval` seconds:
- the resident memory of each long-running process tree (bench/memory.py's measure);
- per table, the active timeline (completed instants Hudi has not archived) and the base
  files beside their file groups: every base file beyond a group's newest is an old file
  slice, which Hudi's cleaner must keep bounded (hudi_write: 30 commits retained,
  archival at 120);
- per table, the file groups of the latest snapshot (hudi-rs), which is what the planner
  and every reader see: with clustering on (the default), a raw table's stay bounded while
  the groups clustering replaced wait on disk for the cleaner. They are reported, and
  judged by the clustering benchmark (bench/clustering_files.py), not here.
At the end: runs by status (a soak has no failed run), clustering runs, and a verdict per
figure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.write import (
    ARCHIVE_KEEP_MAX_COMMITS as ARCHIVAL_MAX_COMMITS,
)
from freshness_pipeline.hudi.write import (
    CLEAN_RETAINED_COMMITS,
)
from freshness_pipeline.lab.bench.memory import (
    DAGSTER_CHILDREN,
    ClassGrowth,
    class_histogram,
    dagster_role_rss_mib,
    histogram_growth,
    live_heap_mib,
    parse_class_histogram,
    tree_rss_mib,
)
from freshness_pipeline.lab.reliability.chaos import run_counts
from freshness_pipeline.lab.reliability.report_sections import write_section
from freshness_pipeline.runtime.dagster_instance import open_instance
from freshness_pipeline.runtime.processes import group_states

COMPLETED = re.compile(r"^\d+_\d+\.(commit|deltacommit|replacecommit|clean|rollback)$")
DAGSTER_SERVERS = "dagster (webserver, daemon, code server)"
RUN_WORKERS = "dagster run workers"  # scales with the runs in flight: reported, not judged
DAGSTER_SERVER_ROLES = ("webserver", "daemon", "code server", "run fork server", "other")
HISTOGRAM_TREES = ("spark-service",)  # whose live objects by class are compared
HISTOGRAM_START_S = 600  # the first listing: after ten minutes (caches warm)
JVM_TREES = ("spark-service", "ingest")  # whose live heap is read after a forced full GC
# Memory is flat when the last sixth's median is within this of the second sixth's (the
# first holds the warm-up: heaps growing, caches filling).
FLAT_RATIO = 1.15
# A JVM that runs the jobs holds their data while they are in flight, and under a live
# stream something always is (three runs, a clustering): its live heap under load swings
# by hundreds of MiB with what is in flight, and its floor rises as runs grow with the
# load. What a leak raises is the heap at rest, so these JVMs are read, and judged, with no
# run in flight: the daemon is paused (no launch), the runs in flight end, one reading,
# the daemon resumes. Ingestion and the stream go on meanwhile.
REST_TREES = ("spark-service",)
REST_EVERY_MIN = 15.0
REST_WAIT_S = 300.0  # the longest a rest reading waits for the runs in flight to end


@dataclass(frozen=True)
class TableStats:
    active_instants: int  # completed instants on the active timeline
    base_files: int
    file_groups: int
    live_groups: int | None = None  # file groups of the latest snapshot (None: not read)

    @property
    def old_slices(self) -> int:
        return self.base_files - self.file_groups


def table_stats(table_dir: Path) -> TableStats | None:
    """What a Hudi table keeps on disk, from its folder (None before its first commit)."""
    timeline = table_dir / ".hoodie" / "timeline"
    if not timeline.is_dir():
        timeline = table_dir / ".hoodie"  # table version 6 keeps its timeline here
        if not timeline.is_dir():
            return None
    instants = sum(1 for name in os.listdir(timeline) if COMPLETED.match(name))
    files, groups = 0, set()
    for path in table_dir.rglob("*.parquet"):
        if ".hoodie" in path.parts:
            continue
        files += 1
        groups.add((path.parent, path.name.split("_", 1)[0]))
    return TableStats(instants, files, len(groups))


def live_file_groups(location) -> int | None:
    """File groups of the table's latest snapshot, as hudi-rs lists them (None if the table
    cannot be read at this moment, e.g. while a writer creates it)."""
    from freshness_pipeline.hudi.metadata import HudiTableMetadata

    try:
        return len(HudiTableMetadata(location).latest_file_slices())
    except Exception:  # noqa: BLE001 - a sample is skipped, the soak goes on
        return None


def clustering_run_counts(home: Path) -> dict[str, int]:
    """Clustering runs (jobs `cluster_<table>`) by status."""
    import dagster as dg

    counts: dict[str, int] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            if run.job_name.startswith("cluster_"):
                counts[run.status.value] = counts.get(run.status.value, 0) + 1
    return counts


def failed_runs(home: Path, limit: int = 20) -> list[str]:
    """One line per failed or canceled run (newest first, at most `limit`): its job, id and
    what failed, the step's own `error` metadata first (the clustering op keeps the JVM's
    stack there), else the step's error message, else the run's failure message."""
    import dagster as dg

    lines: list[str] = []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(
            filters=dg.RunsFilter(
                statuses=[dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
            ),
            limit=limit,
        )
        for run in runs:
            lines.append(
                f"{run.job_name} {run.run_id[:8]} {run.status.value}: {_why(instance, run)}"
            )
    return lines


def _why(instance, run) -> str:
    import dagster as dg

    messages: list[str] = []
    for record in instance.get_records_for_run(run.run_id).records:
        event = record.event_log_entry.dagster_event
        if event is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_FAILURE:
            data = event.step_failure_data
            metadata = data.user_failure_data.metadata if data.user_failure_data else {}
            error = metadata.get("error")
            if error is not None:
                messages.append(str(error.value))
            elif data.error is not None:
                messages.append(_error_chain(data.error))
        elif (
            event.event_type
            in (
                dg.DagsterEventType.RUN_FAILURE,
                dg.DagsterEventType.RUN_CANCELED,
            )
            and not messages
        ):
            messages.append(record.event_log_entry.message or event.event_type.value)
    text = " | ".join(messages) or "no failure event recorded"
    return " ".join(text.split())[:4000]


@dataclass(frozen=True)
class EdgeTimes:
    """A figure's median over the soak's first and last `window_s` (None: nothing there)."""

    first: float | None
    last: float | None
    first_count: int
    last_count: int


def _edges(values: list[tuple[float, float]], window_s: float) -> EdgeTimes:
    """(time, value) pairs, cut into the first and last window of their own span."""
    if not values:
        return EdgeTimes(None, None, 0, 0)
    start, end = min(t for t, _ in values), max(t for t, _ in values)
    first = [v for t, v in values if t < start + window_s]
    last = [v for t, v in values if t > end - window_s]
    return EdgeTimes(
        statistics.median(first) if first else None,
        statistics.median(last) if last else None,
        len(first),
        len(last),
    )


def tick_and_run_times(home: Path, window_s: float = 600) -> dict[str, EdgeTimes]:
    """How long the freshness sensor's ticks and the six jobs' runs took at the soak's
    start and at its end (with the raw tables' files growing or clustered)."""
    import dagster as dg
    from dagster._core.definitions.run_request import InstigatorType  # not public in 1.13

    from freshness_pipeline.scheduling.run_plan import ASSET_TAG

    ticks: list[tuple[float, float]] = []
    runs: list[tuple[float, float]] = []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
            if state.name != "freshness_sensor":
                continue
            for tick in instance.get_ticks(state.instigator_origin_id, state.selector_id):
                if tick.end_timestamp is not None:
                    ticks.append((tick.timestamp, tick.end_timestamp - tick.timestamp))
        for record in instance.get_run_records(
            filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.SUCCESS])
        ):
            if ASSET_TAG in record.dagster_run.tags and record.start_time and record.end_time:
                runs.append((record.start_time, record.end_time - record.start_time))
    return {"tick": _edges(ticks, window_s), "run": _edges(runs, window_s)}


def clustering_state(tables: Sequence[str]) -> str:
    """Which tables the clustering sensor keeps clustered in this soak (its settings)."""
    return f"on for {', '.join(tables)}" if tables else "off (FRESHNESS_CLUSTERING_TABLES=none)"


def timing_lines(timings: dict[str, EdgeTimes]) -> list[str]:
    def cell(value: float | None, count: int) -> str:
        return "-" if value is None else f"{value:.2f} s ({count})"

    names = {
        "tick": "freshness sensor tick (start to end, as Dagster records it)",
        "run": "a job's run (start to end, successful sensor runs of the six)",
    }
    lines = [
        "| median (count) | first 10 minutes | last 10 minutes |",
        "|---|---|---|",
    ]
    for key, name in names.items():
        edge = timings.get(key)
        if edge is not None:
            lines.append(
                f"| {name} | {cell(edge.first, edge.first_count)} | "
                f"{cell(edge.last, edge.last_count)} |"
            )
    return lines


def _error_chain(error) -> str:
    """A SerializableErrorInfo with its causes: Dagster wraps a step's own exception."""
    parts = []
    while error is not None:
        parts.append(error.message.strip())
        error = error.cause
    return " <- caused by: ".join(parts)


@dataclass(frozen=True)
class RestReading:
    minute: float
    live_mib: dict[str, float]  # JVM tree -> live heap after a full GC, no run in flight
    waited_s: float  # from the daemon's pause to the last run in flight ending
    in_flight: int  # runs still in flight when the wait gave up (0: a true rest)


@contextlib.contextmanager
def launches_paused(daemon_pid: int) -> Iterator[None]:
    """No sensor tick and no launch from the queue while inside: the daemon's process group
    is stopped (SIGSTOP) and resumed (SIGCONT) on the way out, whatever happens inside."""
    os.killpg(daemon_pid, signal.SIGSTOP)
    try:
        # SIGSTOP is delivered asynchronously: a process in uninterruptible sleep (D) stops
        # only when it leaves it, so wait until the whole group shows as stopped.
        _wait_group_stopped(daemon_pid)
        yield
    finally:
        os.killpg(daemon_pid, signal.SIGCONT)


def _wait_group_stopped(pgid: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while any(state not in "tTZX" for state in group_states(pgid).values()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"process group {pgid} not stopped {timeout_s:.0f} s after SIGSTOP")
        time.sleep(0.01)


def rest_reading(
    daemon_pid: int,
    jvm_pids: dict[str, int],
    in_flight,
    minute: float,
    read_live=live_heap_mib,
    at_rest=None,
    wait_s: float = REST_WAIT_S,
    poll_s: float = 2.0,
) -> RestReading:
    """Pauses launches, waits (up to `wait_s`) for `in_flight()` to reach 0, reads each JVM's
    live heap, calls `at_rest()` (e.g. a class histogram) and resumes launches."""
    with launches_paused(daemon_pid):
        started = time.monotonic()
        left = in_flight()
        while left and time.monotonic() - started < wait_s:
            time.sleep(poll_s)
            left = in_flight()
        waited = time.monotonic() - started
        live = {name: mib for name, pid in jvm_pids.items() if (mib := read_live(pid)) is not None}
        if at_rest is not None:
            at_rest()
    return RestReading(minute, live, round(waited, 1), left)


def rest_lines(readings: list[RestReading]) -> list[str]:
    """The at-rest table and its verdict: flat when the last reading is within FLAT_RATIO of
    the first (taken after the warm-up sixth)."""
    names = [n for n in REST_TREES if any(n in r.live_mib for r in readings)]
    if not names:
        return []
    lines = [
        "",
        "Live heap **at rest**, which judges the JVMs that run the jobs: the daemon paused "
        "(no launch) until no run was in flight, then a forced full GC; the stream and "
        "ingestion went on. MiB at each reading, with the wait for the runs in flight "
        "to end:",
        "",
        "| JVM tree | "
        + " | ".join(f"minute {r.minute:.0f} ({r.waited_s:.0f} s)" for r in readings)
        + " | flat |",
        "|---|" + "---|" * (len(readings) + 1),
    ]
    for name in names:
        values = [r.live_mib.get(name) for r in readings]
        known = [v for v in values if v is not None]
        flat = len(known) >= 2 and known[-1] <= known[0] * FLAT_RATIO
        cells = " | ".join("-" if v is None else f"{v:.0f}" for v in values)
        lines.append(f"| {name} | {cells} | {'yes' if flat else '**no**'} |")
    unrested = [r for r in readings if r.in_flight]
    if unrested:
        lines += [
            "",
            "Not at rest (runs still in flight when the wait gave up): "
            + ", ".join(f"minute {r.minute:.0f} ({r.in_flight} runs)" for r in unrested)
            + ".",
        ]
    return lines


def _windows(
    values: list[tuple[float, float]], total_s: float, parts: int = 6, stat=statistics.median
) -> list:
    """`stat` (the median) per window of the run, None for an empty window."""
    size = total_s / parts
    out = []
    for index in range(parts):
        inside = [v for t, v in values if index * size <= t < (index + 1) * size]
        out.append(stat(inside) if inside else None)
    return out


@dataclass
class SoakReadings:
    """What a soak gathered: each process tree's RSS and each JVM's live heap over time
    (seconds since the start, MiB), each table's file statistics, the readings at rest and
    what grew in a JVM, and at the end the runs by status, restarts, failures and timings."""

    rss: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    tables: dict[str, list[tuple[float, TableStats]]] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    restarts: list[str] = field(default_factory=list)
    clustering_runs: dict[str, int] = field(default_factory=dict)
    heap: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    timings: dict[str, EdgeTimes] = field(default_factory=dict)
    growth: dict[str, tuple[float, float, list[ClassGrowth]]] = field(default_factory=dict)
    rest: list[RestReading] = field(default_factory=list)
    clustered: Sequence[str] = ("price_raw", "trade_raw")


def report(minutes: float, rate: float, readings: SoakReadings) -> str:
    total_s = minutes * 60
    lines = [
        "## Soak",
        "",
        f"Produced by `freshness lab soak --minutes {minutes:g} "
        f"--rate {rate:g}` on {time.strftime('%Y-%m-%d', time.gmtime())} "
        f"({os.cpu_count()} cores): the live demo for {minutes:g} minutes at {rate:g} "
        f"events/s, sampled every 30 s. Clustering: {clustering_state(readings.clustered)}.",
        *_rss_lines(readings, total_s),
        *_heap_lines(readings, total_s),
        *rest_lines(readings.rest),
        *_growth_lines(readings),
        *_table_lines(readings.tables),
        *_run_lines(readings),
    ]
    return "\n".join(lines) + "\n"


def _rss_lines(readings: SoakReadings, total_s: float) -> list[str]:
    lines = [
        "",
        "Resident memory per process tree, MiB, median per sixth of the run:",
        "",
        "| process | " + " | ".join(f"sixth {i + 1}" for i in range(6)) + " | flat |",
        "|---|" + "---|" * 7,
    ]
    for name, values in readings.rss.items():
        medians = _windows(values, total_s)
        flat = (
            medians[1] is not None
            and medians[5] is not None
            and medians[5] <= medians[1] * FLAT_RATIO
        )
        cells = " | ".join("-" if m is None else f"{m:.0f}" for m in medians)
        verdict = "not judged" if name == RUN_WORKERS else ("yes" if flat else "**no**")
        if name in readings.heap:
            verdict = "by live heap"  # a JVM's RSS grows toward -Xmx (below)
        lines.append(f"| {name} | {cells} | {verdict} |")
    return lines


def _heap_lines(readings: SoakReadings, total_s: float) -> list[str]:
    if not readings.heap:
        return []
    lines = [
        "",
        "A JVM's RSS grows toward its heap limit (-Xmx) and is never given back, so RSS "
        "cannot tell a full heap from a leak. Live heap of each JVM tree right after a "
        "forced full GC (`jcmd GC.run`, every few samples), MiB per sixth as floor / "
        "median. A reading also holds the data of the runs in flight at that moment, "
        "which swings the median by hundreds of MiB from one reading to the next; the "
        "floor (the reading with the least in flight) judges a JVM, unless it is read "
        "at rest (below):",
        "",
        "| JVM tree | " + " | ".join(f"sixth {i + 1}" for i in range(6)) + " | flat |",
        "|---|" + "---|" * 7,
    ]
    for name, values in readings.heap.items():
        medians = _windows(values, total_s)
        floors = _windows(values, total_s, stat=min)
        known = [m for m in floors if m is not None]
        flat = len(known) >= 2 and known[-1] <= known[min(1, len(known) - 1)] * FLAT_RATIO
        cells = " | ".join(
            "-" if f is None else f"{f:.0f} / {m:.0f}" for f, m in zip(floors, medians, strict=True)
        )
        verdict = "yes" if flat else "**no**"
        if readings.rest and name in REST_TREES:
            verdict = "judged at rest"
        lines.append(f"| {name} | {cells} | {verdict} |")
    return lines


def _growth_lines(readings: SoakReadings) -> list[str]:
    lines: list[str] = []
    for name, (start_min, end_min, rows) in readings.growth.items():
        lines += [
            "",
            f"What grew in {name}'s live heap from minute {start_min:.0f} to minute "
            f"{end_min:.0f} (`jcmd GC.class_histogram`, after a full GC"
            + (", both at rest" if readings.rest else "")
            + "; the listings are kept in the soak's logs folder), the classes that grew "
            "most:",
            "",
            "| class | MiB before | MiB after | instances before | instances after |",
            "|---|---|---|---|---|",
        ]
        lines += [
            f"| `{r.name}` | {r.mib_before:.1f} | {r.mib_after:.1f} | "
            f"{r.instances_before:,} | {r.instances_after:,} |"
            for r in rows
        ] or ["| (nothing grew) | | | | |"]
    return lines


def _table_lines(tables: dict[str, list[tuple[float, TableStats]]]) -> list[str]:
    lines = [
        "",
        "Per table, at the end (and the largest seen): completed instants on the active "
        f"timeline (bounded: at most {ARCHIVAL_MAX_COMMITS} commits plus their cleans), "
        "base files, file groups, and old file slices (base files beyond each group's "
        "newest, which the cleaner removes once a table has more than "
        f"{CLEAN_RETAINED_COMMITS} commits: before that, old slices can only grow, and the "
        "next column says whether the run got that far), and the file groups of the latest "
        "snapshot, which the planner and readers see (clustering keeps a raw table's "
        "bounded; the groups it replaced stay on disk until cleaned):",
        "",
        "| table | active instants (max) | base files | file groups | old slices (max) | "
        "cleaner's horizon reached | snapshot file groups (max) |",
        "|---|---|---|---|---|---|---|",
    ]
    for table, samples in tables.items():
        if not samples:
            continue
        last = samples[-1][1]
        most_instants = max(s.active_instants for _, s in samples)
        most_old = max(s.old_slices for _, s in samples)
        live = [s.live_groups for _, s in samples if s.live_groups is not None]
        live_cell = f"{live[-1]} ({max(live)})" if live else "-"
        lines.append(
            f"| {table} | {last.active_instants} ({most_instants}) | {last.base_files} | "
            f"{last.file_groups} | {last.old_slices} ({most_old}) | "
            f"{'yes' if most_instants > CLEAN_RETAINED_COMMITS else 'no'} | {live_cell} |"
        )
    return lines


def _run_lines(readings: SoakReadings) -> list[str]:
    runs, restarts = readings.runs, readings.restarts
    failed = runs.get("FAILURE", 0) + runs.get("CANCELED", 0)
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(runs.items()))
    clustering = ", ".join(f"{k} {v}" for k, v in sorted(readings.clustering_runs.items()))
    lines = [
        "",
        f"Runs by status: {statuses}. Failed or canceled: {failed} "
        f"({'met' if failed == 0 else '**missed**'}: a soak has no failed run).",
        f"Clustering runs by status (part of the runs above): {clustering or 'none'}.",
        f"Processes the supervisor had to restart: {len(restarts)}"
        + (f" ({'; '.join(restarts)})" if restarts else "")
        + ".",
    ]
    if readings.timings:
        lines += ["", *timing_lines(readings.timings)]
    if readings.failures:
        lines += ["", "What failed (newest first; the step's error, Java stack included):", ""]
        lines += [
            f"- `{line.split(':')[0]}`: {line.split(':', 1)[1].strip()}"
            for line in readings.failures
        ]
    return lines


class SoakSampler:
    """Reads a running stack every interval: process memory (and a JVM's live heap every
    `gc_every` samples), table statistics; at rest, on request; a JVM's class listing
    once warm (or at the first and last rest readings)."""

    def __init__(self, stack, root: Path, args: argparse.Namespace, readings: SoakReadings):
        self.stack, self.root, self.args, self.readings = stack, root, args, readings
        self.lakehouse = stack.settings.lakehouse
        self.samples_taken = 0
        # A JVM's live objects by class, once the run has warmed up and again at the end.
        self.first_histogram: dict[str, tuple[float, dict[str, tuple[int, int]]]] = {}
        self.rest_listings: dict[str, list[tuple[float, dict[str, tuple[int, int]]]]] = {}
        # Read at rest, a JVM's class listings are taken at the first and last rest
        # readings (nothing in flight in either), instead of at a time under load.
        self.histogram_at_rest = args.rest_every > 0

    def _histogram(self, pid: int, name: str, elapsed: float) -> dict[str, tuple[int, int]]:
        text = class_histogram(pid) or ""
        (self.root / "logs" / f"histogram_{name}_{elapsed / 60:.0f}min.txt").write_text(text)
        return parse_class_histogram(text)

    def sample(self, elapsed: float) -> None:
        readings, args = self.readings, self.args
        pids = self.stack.pids()
        # Run workers come and go with the runs in flight: apart, so the long-lived
        # processes' memory can be judged on its own.
        roles = dagster_role_rss_mib(pids)
        workers = roles.pop("run workers", 0.0)
        readings.rss.setdefault(DAGSTER_SERVERS, []).append((elapsed, sum(roles.values())))
        readings.rss.setdefault(RUN_WORKERS, []).append((elapsed, workers))
        # Each server apart too, so a growth names its process.
        for role in DAGSTER_SERVER_ROLES:
            readings.rss.setdefault(f"dagster {role}", []).append((elapsed, roles.get(role, 0.0)))
        gc_due = self.samples_taken % args.gc_every == args.gc_every - 1
        for name, pid in pids.items():
            if name != "replay" and name not in DAGSTER_CHILDREN:
                readings.rss.setdefault(name, []).append((elapsed, tree_rss_mib(pid)))
            if name in JVM_TREES and gc_due:
                self._jvm(name, pid, elapsed)
        self.samples_taken += 1
        for table, samples in readings.tables.items():
            stats = table_stats(self.lakehouse.table(table).local_path())
            if stats is not None:
                live = live_file_groups(self.lakehouse.table(table))
                samples.append((elapsed, replace(stats, live_groups=live)))

    def _jvm(self, name: str, pid: int, elapsed: float) -> None:
        live = live_heap_mib(pid)
        if live is not None:
            self.readings.heap.setdefault(name, []).append((elapsed, live))
        warm = elapsed >= min(HISTOGRAM_START_S, self.args.minutes * 30)
        listed = name in self.first_histogram or self.histogram_at_rest
        if name in HISTOGRAM_TREES and not listed and warm:
            self.first_histogram[name] = (elapsed, self._histogram(pid, name, elapsed))

    def line(self, elapsed: float) -> str:
        """One progress line: the newest RSS of each tree and each table's counts."""
        readings = self.readings
        return (
            f"{elapsed / 60:5.1f} min: RSS MiB "
            + ", ".join(f"{n} {v[-1][1]:.0f}" for n, v in readings.rss.items())
            + "; instants/old slices/snapshot groups "
            + ", ".join(
                f"{t} {s[-1][1].active_instants}/{s[-1][1].old_slices}/{s[-1][1].live_groups}"
                for t, s in readings.tables.items()
                if s
            )
        )

    def at_rest(self, elapsed: float) -> RestReading:
        """The JVMs that run the jobs read with the daemon's launches paused and nothing
        in flight; their class listings taken then too."""
        from freshness_pipeline.runtime.stack import in_flight_filter

        pids = self.stack.pids()
        jvms = {name: pids[name] for name in REST_TREES if name in pids}

        def histograms() -> None:
            for name in HISTOGRAM_TREES:
                if name in jvms:
                    self.rest_listings.setdefault(name, []).append(
                        (elapsed, self._histogram(jvms[name], name, elapsed))
                    )

        in_flight = in_flight_filter(self.stack.started_at)
        with open_instance(self.stack.dagster_home, self.stack.settings) as instance:
            reading = rest_reading(
                pids["dagster"],
                jvms,
                lambda: len(instance.get_runs(in_flight)),
                elapsed / 60,
                at_rest=histograms,
            )
        self.readings.rest.append(reading)
        return reading

    def growth(self, end: float) -> dict[str, tuple[float, float, list[ClassGrowth]]]:
        """What grew in each listed JVM: between the first and the last listing at rest
        (nothing in flight in either), or from its warm listing to the end."""
        if self.histogram_at_rest:
            return {
                name: (
                    listed[0][0] / 60,
                    listed[-1][0] / 60,
                    histogram_growth(listed[0][1], listed[-1][1]),
                )
                for name, listed in self.rest_listings.items()
                if len(listed) >= 2
            }
        pids = self.stack.pids()
        return {
            name: (
                start / 60,
                end / 60,
                histogram_growth(before, self._histogram(pids[name], name, end)),
            )
            for name, (start, before) in self.first_histogram.items()
            if name in pids
        }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="freshness lab soak", description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--interval", type=float, default=30)
    parser.add_argument("--report", type=Path, help="write the soak section of this file")
    parser.add_argument(
        "--section",
        default="soak",
        help="name of the report's section (e.g. soak-no-clustering beside the default)",
    )
    parser.add_argument(
        "--gc-every",
        type=int,
        default=4,
        help="samples between live-heap readings (4: every 2 minutes, five a sixth)",
    )
    parser.add_argument(
        "--rest-every",
        type=float,
        default=REST_EVERY_MIN,
        help="minutes between readings at rest of the JVMs that run the jobs, and one at the "
        "end (0: none, they are judged by their floor under load)",
    )
    return parser


def _soak_stack(settings: Settings, root: Path, rate: float):
    from freshness_pipeline.runtime.stack import Stack, StackConfig
    from freshness_pipeline.stream.generator import StreamConfig

    env = {
        "FRESHNESS_LAKEHOUSE": str(root / "tables"),
        "FRESHNESS_LANDING": str(root / "landing"),
        "FRESHNESS_SPARK_SERVICE_PORT": settings.texts.get("FRESHNESS_SPARK_SERVICE_PORT", "15012"),
    }
    config = StackConfig(
        stream=StreamConfig(rate=rate),
        webserver=False,
        dagster_home=root / "dagster_home",
        logs_dir=root / "logs",
        env=env,
    )
    return Stack(config, settings)


def main(argv: list[str], settings: Settings) -> int:
    args = _parser().parse_args(argv)

    from freshness_pipeline.runtime.stack import StopFlag

    root = Path(tempfile.mkdtemp(prefix="soak_"))
    # Kept afterwards: the runs, their logs and the tables stay there to look into.
    print(f"soak: lakehouse, Dagster home and logs under {root}", flush=True)
    stack = _soak_stack(settings, root, args.rate)
    home = stack.dagster_home
    readings = SoakReadings(
        tables={t: [] for t in (*RAW_TABLES, *JOBS)}, clustered=settings.clustering.tables
    )
    sampler = SoakSampler(stack, root, args, readings)
    stop = StopFlag()
    with stack:
        started = time.monotonic()
        next_rest_s = args.rest_every * 60
        while not stop() and time.monotonic() - started < args.minutes * 60:
            elapsed = time.monotonic() - started
            sampler.sample(elapsed)
            print(sampler.line(elapsed), flush=True)
            readings.restarts += stack.supervise()
            if args.rest_every > 0 and time.monotonic() - started >= next_rest_s:
                _print_rest(sampler.at_rest(time.monotonic() - started))
                next_rest_s += args.rest_every * 60
            stop.wait(args.interval)
        if args.rest_every > 0 and not stop():
            _print_rest(sampler.at_rest(time.monotonic() - started))
        readings.growth = sampler.growth(time.monotonic() - started)
        readings.runs = run_counts(home)
        readings.clustering_runs = clustering_run_counts(home)
        readings.failures = failed_runs(home)
        readings.timings = tick_and_run_times(home)
    text = report(args.minutes, args.rate, readings)
    print(text)
    if args.report:
        write_section(args.report, args.section, text)
    return 0


def _print_rest(reading: RestReading) -> None:
    print(
        f"{reading.minute:5.1f} min: at rest after {reading.waited_s:.0f} s "
        f"({reading.in_flight} in flight): "
        + ", ".join(f"{n} {v:.0f} MiB" for n, v in reading.live_mib.items()),
        flush=True,
    )
