"""Where the machine's CPU went through an experiment's window, by kind of process (the
Spark service, ingestion's Spark, Kafka, Dagster's daemon, the code server, run workers,
the harness): every process's CPU read from /proc every few seconds, so that a short-lived
run worker is seen too. A process counts its own CPU and its reaped children's (cutime,
cstime), once: a child seen alive is counted as itself, not again in its parent.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

SERVICE = "Spark service"  # the shared Spark service every step runs in
OWN_SPARK = "Spark (ingestion, a run's own)"  # a local driver: ingestion's, or a run's
RUN_SPARK = "Spark (a run's own)"  # a local driver whose parent is a run worker
# A process's kind, by its command line (the first pattern that matches).
KINDS: tuple[tuple[str, str], ...] = (
    (SERVICE, r"java .*(SparkConnectServer|LoopbackConnectServer|freshness_spark_service)"),
    ("Kafka", r"java .*kafka\.Kafka"),
    ("object store, Postgres", r"java .*s3proxy|postgres"),
    (OWN_SPARK, r"^java |/java "),
    ("ingestion", r"freshness_pipeline\.cli ingest"),
    ("stream replay", r"freshness_pipeline\.cli replay"),
    # (a code server starts a run in a spawned or forked Python: Dagster's default, ours)
    ("run workers", r"execute_run|execute_step|multiprocessing\.(forkserver|spawn)|api execute"),
    ("code server", r"code-server start|grpc-server|api grpc"),
    ("Dagster daemon", r"dagster-daemon|dagster dev|dagster-webserver|daemon run"),
)


def process_kind(cmdline: str, harness_pid: int | None = None, pid: int | None = None) -> str:
    if harness_pid is not None and pid == harness_pid:
        return "harness"
    for kind, pattern in KINDS:
        if re.search(pattern, cmdline):
            return kind
    return "other"


def _kind_in_tree(pid: int, processes: Mapping[int, ProcessCpu], harness: int) -> str:
    """A process's kind, a local Spark driver told apart by its parent: a run worker's own
    Spark (a peer's session per run) is not ingestion's."""
    process = processes[pid]
    kind = process_kind(process.cmdline, harness, pid)
    parent = processes.get(process.ppid)
    under_a_run = (
        parent is not None and process_kind(parent.cmdline, harness, parent.pid) == "run workers"
    )
    return RUN_SPARK if kind == OWN_SPARK and under_a_run else kind


@dataclass(frozen=True)
class ProcessCpu:
    pid: int
    ppid: int
    ticks: int  # utime + stime
    children_ticks: int  # cutime + cstime: reaped children
    cmdline: str


def read_processes(proc: Path = Path("/proc")) -> dict[int, ProcessCpu]:
    found = {}
    for stat_path in proc.glob("[0-9]*/stat"):
        try:
            stat = stat_path.read_text()
            raw = (stat_path.parent / "cmdline").read_bytes()
        except OSError:
            continue  # gone while we looked
        fields = stat[stat.rindex(")") + 2 :].split()
        pid = int(stat_path.parent.name)
        found[pid] = ProcessCpu(
            pid,
            int(fields[1]),
            int(fields[11]) + int(fields[12]),
            int(fields[13]) + int(fields[14]),
            raw.replace(b"\0", b" ").decode(errors="replace").strip(),
        )
    return found


def _in_scope(pid: int, processes: Mapping[int, ProcessCpu], root: int) -> bool:
    """Whether `pid` is `root` or one of its descendants."""
    seen = set()
    while pid not in seen:
        if pid == root:
            return True
        seen.add(pid)
        parent = processes.get(pid)
        if parent is None:
            return False
        pid = parent.ppid
    return False


@dataclass
class BudgetSampler:
    """CPU seconds per kind of process, for `root` (the harness) and its descendants,
    between `start` and `stop`; `proc` and `hz` are for tests."""

    root: int = field(default_factory=os.getpid)
    every_s: float = 5.0
    proc: Path = Path("/proc")
    hz: int = field(default_factory=lambda: os.sysconf("SC_CLK_TCK"))
    _first: dict[int, ProcessCpu] = field(default_factory=dict)
    _last: dict[int, ProcessCpu] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _at_start: set[int] = field(default_factory=set)

    def sample(self) -> set[int]:
        """Reads every process of the harness's tree; returns the live ones."""
        processes = read_processes(self.proc)
        live = {pid for pid in processes if _in_scope(pid, processes, self.root)}
        for pid in live:
            self._first.setdefault(pid, processes[pid])
            self._last[pid] = processes[pid]
        return live

    def start(self) -> BudgetSampler:
        self.sample()
        self._at_start = set(self._first)
        self._thread = threading.Thread(target=self._loop, name="budget-sampler", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self.sample()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        live = self.sample()
        return budget(self._first, self._last, self._at_start, live, self.hz, self.root)


def budget(
    first: Mapping[int, ProcessCpu],
    last: Mapping[int, ProcessCpu],
    at_start: set[int],
    live: set[int],
    hz: int,
    harness: int,
) -> dict[str, float]:
    """CPU seconds per kind between the start and the end. A process alive at the start
    counts from its first sample; one born later from 0, to its last sample. A process's
    children reaped in the window add their lifetimes to its cutime and cstime: what of
    that its seen and gone children do not account for (their last ends, and the ones
    too short to be seen) counts for the parent's kind."""
    spent: dict[str, float] = {}
    gone_ticks: dict[int, int] = {}
    for pid, end in last.items():
        start_ticks = first[pid].ticks if pid in at_start else 0
        kind = _kind_in_tree(pid, last, harness)
        spent[kind] = spent.get(kind, 0.0) + (end.ticks - start_ticks) / hz
        if pid not in live:
            gone_ticks[end.ppid] = gone_ticks.get(end.ppid, 0) + end.ticks
    for pid, end in last.items():
        reaped = end.children_ticks - (first[pid].children_ticks if pid in at_start else 0)
        unseen = reaped - gone_ticks.get(pid, 0)
        if unseen > 0:
            kind = _kind_in_tree(pid, last, harness)
            spent[kind] = spent.get(kind, 0.0) + unseen / hz
    return {k: round(v, 3) for k, v in sorted(spent.items(), key=lambda kv: -kv[1])}


def budget_rows(budgets: Iterable[tuple[str, Mapping[str, float], float]]) -> list[str]:
    """Per variant (name, CPU seconds by kind, window seconds): each kind's CPU and share
    of the machine (cores x window)."""
    items = list(budgets)
    kinds = sorted(
        {k for _, b, _ in items for k in b}, key=lambda k: -max(b.get(k, 0) for _, b, _ in items)
    )
    cores = os.cpu_count() or 1
    lines = [
        "| variant | machine busy | " + " | ".join(kinds) + " |",
        "|---|---|" + "---|" * len(kinds),
    ]
    for name, spent, window_s in items:
        total = cores * window_s
        cells = [f"{spent.get(k, 0):.0f} ({spent.get(k, 0) / total:.0%})" for k in kinds]
        lines.append(f"| {name} | {sum(spent.values()) / total:.0%} | " + " | ".join(cells) + " |")
    return lines
