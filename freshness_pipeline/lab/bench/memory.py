"""Memory of the long-running processes over a long demo run (target: flat).

    freshness lab memory [--minutes 60] [--rate 2000]

Runs the demo's stack (shared Spark service, replayer, ingestion, Dagster with the
sensor on) on a throwaway lakehouse and samples, every 30 s, the resident memory (RSS)
of each child's whole process tree: the Spark service JVM, ingestion (Python + its JVM)
and Dagster (webserver, daemon, code server and the run workers alive at that moment).
It prints the median and max RSS per sixth of the run for each process tree, and for the
Dagster tree also per role (webserver, daemon, code server with the sensor, run workers).

RSS alone cannot tell a leak from a JVM growing its heap toward -Xmx, which it does lazily
and never gives back. So every `--gc-every` samples it also forces a full GC in each JVM
(`jcmd GC.run`) and records the heap still in use afterwards: the live data. Flat live
heap with RSS at a plateau below the heap limit is the bound; growing live heap is a leak.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.lab.bench.common import scratch
from freshness_pipeline.runtime.memory_probe import rss_mib

MIB = 1024 * 1024


def _children_by_parent() -> dict[int, list[int]]:
    """One scan of /proc: every process's children, by parent pid."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def tree_rss_mib(pid: int) -> float:
    """RSS of a process and all its descendants, in MiB (0 if it is gone)."""
    return sum(rss_mib(member) for member in tree_pids(pid))


# Which Dagster process a command line belongs to, first match wins.
DAGSTER_ROLES = (
    # A run launched through the code server is a multiprocessing child of it; each run
    # also has log tailers (`tail -F`, watch_orphans.py) while it lives.
    (
        "run workers",
        (
            "execute_run",
            "execute_step",
            "multiprocessing.spawn import spawn_main",
            "watch_orphans",
            "tail -F",
        ),
    ),
    ("code server", ("grpc", "code-server")),  # `dagster dev`: a proxy and its server
    ("daemon", ("dagster._daemon", "dagster-daemon")),  # `dagster dev` runs -m dagster._daemon
    ("webserver", ("dagster_webserver", "dagster-webserver")),
)  # the rest ("other"): the `dagster dev` supervisor and anything unmatched


# The code server's fork server (run_start.py) and the run workers forked from it share
# its command line; a worker is the one whose parent is a fork server too.
FORK_SERVER_MARK = "multiprocessing.forkserver import main"


def role_of(cmdline: str, parent_cmdline: str = "") -> str:
    """The Dagster role of a process, from its command line before the first `--` option:
    `dagster dev` passes the webserver and the daemon `--code-server-log-level`, which
    must not make them code servers."""
    command = cmdline.split(" --", 1)[0]
    if FORK_SERVER_MARK in command:
        return "run workers" if FORK_SERVER_MARK in parent_cmdline else "run fork server"
    return next((r for r, marks in DAGSTER_ROLES if any(m in command for m in marks)), "other")


def _cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None


def role_rss_mib(pid: int) -> dict[str, float]:
    """RSS of a Dagster tree by role (webserver, daemon, code server, its run fork
    server, run workers)."""
    totals: dict[str, float] = {}
    children = _children_by_parent()
    stack: list[tuple[int, str]] = [(pid, "")]
    while stack:
        member, parent_cmdline = stack.pop()
        cmdline = _cmdline(member)
        if cmdline is None:
            continue
        role = role_of(cmdline, parent_cmdline)
        totals[role] = totals.get(role, 0.0) + rss_mib(member)
        stack.extend((child, cmdline) for child in children.get(member, ()))
    return totals


DAGSTER_CHILDREN = ("dagster", "code-server")  # the stack's children that run Dagster


def dagster_role_rss_mib(pids: Mapping[str, int]) -> dict[str, float]:
    """RSS by role over the stack's Dagster trees: `dagster dev`'s, or a lone daemon's and
    the code server the stack starts beside it (stack.py)."""
    totals: dict[str, float] = {}
    for name in DAGSTER_CHILDREN:
        if name in pids:
            for role, mib in role_rss_mib(pids[name]).items():
                totals[role] = totals.get(role, 0.0) + mib
    return totals


def tree_pids(pid: int) -> list[int]:
    """A process and all its descendants (one /proc scan, not one per member)."""
    children = _children_by_parent()
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, ()))
    return found


def live_heap_mib(pid: int, settle_s: float = 3.0) -> float | None:
    """Heap in use right after a forced full GC, summed over the JVMs in a process tree.

    Two full GCs `settle_s` apart: Spark frees a dead broadcast's or an uncached table's
    blocks (heap arrays in its memory store) only when its ContextCleaner thread sees the
    owner collected, after a GC, and unpersists asynchronously. One GC alone read 800 MiB
    of a service at rest whose class listing a few seconds later held 117 MiB."""
    total, seen = 0.0, False
    for candidate in _java_pids(pid):
        try:
            _jcmd(candidate, "GC.run", timeout_s=60)
            time.sleep(settle_s)
            _jcmd(candidate, "GC.run", timeout_s=60)
            info = _jcmd(candidate, "GC.heap_info", timeout_s=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        # "garbage-first heap   total 262144K, used 81234K [...]"
        match = re.search(r"heap\s+total \d+K, used (\d+)K", info)
        if match:
            total += int(match.group(1)) / 1024
            seen = True
    return total if seen else None


# `jcmd <pid> GC.class_histogram` rows: "   1:   123456   12345678  [B (java.base@17)"
_HISTOGRAM_ROW = re.compile(r"^\s*\d+:\s+(\d+)\s+(\d+)\s+(\S+)")


def parse_class_histogram(text: str) -> dict[str, tuple[int, int]]:
    """Class name -> (instances, bytes) from a `jcmd GC.class_histogram` listing."""
    found: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        match = _HISTOGRAM_ROW.match(line)
        if match:
            instances, size, name = int(match.group(1)), int(match.group(2)), match.group(3)
            old = found.get(name, (0, 0))  # a class loaded twice is one row per loader
            found[name] = (old[0] + instances, old[1] + size)
    return found


def class_histogram(pid: int) -> str | None:
    """The live objects by class of the first JVM in a process tree (the listing forces a
    full GC first, so it counts what is still reachable), or None without a JVM."""
    for candidate in _java_pids(pid):
        try:
            return _jcmd(candidate, "GC.class_histogram", timeout_s=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
    return None


def _java_pids(pid: int) -> list[int]:
    """The JVMs in a process tree (a process that is gone is left out)."""
    found = []
    for candidate in tree_pids(pid):
        try:
            if Path(f"/proc/{candidate}/comm").read_text().strip() == "java":
                found.append(candidate)
        except OSError:
            continue
    return found


def _jcmd(pid: int, command: str, timeout_s: float) -> str:
    return subprocess.run(
        ["jcmd", str(pid), command], capture_output=True, text=True, timeout=timeout_s
    ).stdout


@dataclass(frozen=True)
class ClassGrowth:
    name: str
    mib_before: float
    mib_after: float
    instances_before: int
    instances_after: int


def histogram_growth(
    before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]], top: int = 12
) -> list[ClassGrowth]:
    """The `top` classes whose live bytes grew most from `before` to `after`."""
    rows = [
        ClassGrowth(
            name,
            before.get(name, (0, 0))[1] / MIB,
            after[name][1] / MIB,
            before.get(name, (0, 0))[0],
            after[name][0],
        )
        for name in after
    ]
    rows.sort(key=lambda r: r.mib_after - r.mib_before, reverse=True)
    return [r for r in rows[:top] if r.mib_after > r.mib_before]


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab memory", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--rate", type=float, default=2000)
    parser.add_argument("--interval", type=float, default=30)
    parser.add_argument(
        "--gc-every", type=int, default=10, help="samples between live-heap readings"
    )
    args = parser.parse_args(argv)

    root, where = scratch("bench_memory_")
    from freshness_pipeline.runtime.stack import Stack, StackConfig, StopFlag
    from freshness_pipeline.stream.generator import StreamConfig

    env = {
        **where,
        "FRESHNESS_SPARK_SERVICE_PORT": settings.texts.get("FRESHNESS_SPARK_SERVICE_PORT", "15012"),
    }
    stack = Stack(
        StackConfig(
            stream=StreamConfig(rate=args.rate),
            webserver=True,
            port=3077,
            dagster_home=root / "dagster_home",
            logs_dir=root / "logs",
            env=env,
        ),
        settings,
    )
    stop = StopFlag()
    samples: dict[str, list[tuple[float, float]]] = {}
    heaps: dict[str, list[tuple[float, float]]] = {}
    readings = 0
    with stack:
        started = time.monotonic()
        while not stop() and time.monotonic() - started < args.minutes * 60:
            elapsed = time.monotonic() - started
            pids = stack.pids()
            for name, pid in pids.items():
                if name != "replay" and name not in DAGSTER_CHILDREN:
                    samples.setdefault(name, []).append((elapsed, tree_rss_mib(pid)))
            # One walk of the Dagster trees gives both their total and their roles.
            roles = dagster_role_rss_mib(pids)
            samples.setdefault("dagster", []).append((elapsed, sum(roles.values())))
            for role in [r for r, _ in DAGSTER_ROLES] + ["other"]:
                samples.setdefault(f"  {role}", []).append((elapsed, roles.get(role, 0.0)))
            line = ", ".join(
                f"{n} {v[-1][1]:.0f}" for n, v in samples.items() if not n.startswith(" ")
            )
            if readings % args.gc_every == 0:
                for name, pid in stack.pids().items():
                    heap = live_heap_mib(pid) if name != "replay" else None
                    if heap is not None:
                        heaps.setdefault(name, []).append((elapsed, heap))
                line += "; live heap MiB " + ", ".join(
                    f"{n} {v[-1][1]:.0f}" for n, v in heaps.items()
                )
            print(f"{elapsed / 60:5.1f} min: RSS MiB {line}", flush=True)
            readings += 1
            crashed = [(n, c) for n, c in stack.exited() if n != "replay" or c]
            if crashed:
                print(f"exited: {crashed}; logs in {root / 'logs'}")
                return 1
            stop.wait(args.interval)
    # Median / max RSS per window: the trend across windows is the verdict (the first one
    # holds the warm-up: JVM heaps growing, caches filling).
    window = args.minutes * 60 / 6
    print(
        f"\nmachine: {os.cpu_count()} cores; {args.minutes:.0f} min at {args.rate:.0f} ev/s; "
        f"RSS MiB, median / max per {window / 60:.1f}-minute window:"
    )
    for name, values in samples.items():
        cells = []
        for index in range(6):
            inside = [v for t, v in values if index * window <= t < (index + 1) * window]
            median = statistics.median(inside) if inside else 0.0
            cells.append(f"{median:6.0f} / {max(inside):6.0f}" if inside else "-")
        print(f"  {name:14s} " + " | ".join(cells))
    print("live JVM heap after a full GC, every reading:")
    for name, values in heaps.items():
        series = ", ".join(f"{t / 60:.0f} min {v:.0f}" for t, v in values)
        print(f"  {name:14s} {series} MiB")
    return 0
