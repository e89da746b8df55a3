"""A memory probe inside a long-running Dagster code server (a soak found the code
server's resident memory growing while every cache of ours is bounded, and the process's
RSS alone cannot say what grows).

FRESHNESS_MEMORY_PROBE=<file>: a code server that loads the definitions appends one JSON
line to <file> every FRESHNESS_MEMORY_PROBE_S seconds (settings.py) with
- its resident memory, then again after glibc's `malloc_trim`: memory the heap had freed
  but kept shows as the difference, a leak as growth that survives the trim;
- what Python's allocator holds (tracemalloc) and the allocation sites that grew most since
  the first sample, with their call paths;
- pyarrow's memory pool, the live Python objects by type that grew, and the thread count.
tracemalloc slows allocation: a diagnostic for soaks, off by default. Run workers (which
load the same definitions, and which the code server spawns through multiprocessing with
its own argv) are left alone: they live for one run.
"""

from __future__ import annotations

import ctypes
import gc
import json
import multiprocessing
import os
import sys
import threading
import time
import traceback
import tracemalloc
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

FRAMES = 6  # default call path depth per allocation (tracemalloc's cost grows with it)
TOP_SITES = 12
TOP_TYPES = 12

_started = False
_lock = threading.Lock()


def is_code_server(argv: Sequence[str]) -> bool:
    """Whether this process serves code to Dagster's daemon and webserver (`dagster api
    grpc` under `dagster dev`, or `dagster code-server start`), not a run worker."""
    words = " ".join(argv)
    return ("api grpc" in words or "code-server" in words) and "execute" not in words


def serves_code(argv: Sequence[str] | None = None) -> bool:
    """This process is a code server itself, not one of its run workers: they take the
    code server's argv (spawn and forkserver both hand it over), so the argv alone cannot
    tell them apart; a run worker has a multiprocessing parent."""
    return (
        is_code_server(sys.argv if argv is None else argv)
        and multiprocessing.parent_process() is None
    )


def rss_mib(pid: int | str = "self") -> float:
    """Resident memory of one process (this one by default), in MiB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def malloc_trim() -> bool:
    """Return freed heap to the OS (glibc only); False where there is no such call."""
    try:
        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0))
    except (OSError, AttributeError):
        return False


def live_types(objects: list) -> Counter[str]:
    return Counter(type(o).__qualname__ for o in objects)


# Containers everything uses: their growth names no culprit, their examples would be noise.
GENERIC_TYPES = frozenset({"dict", "list", "tuple", "set", "function", "cell", "ReferenceType"})
EXAMPLES_PER_TYPE = 3
EXAMPLE_TYPES = 6  # how many grown types get examples


def examples_of(objects: list, type_name: str, count: int = EXAMPLES_PER_TYPE) -> list[dict]:
    """The newest live objects of a type (gc lists them roughly in allocation order), each
    with its repr and what refers to it: what a grown type's objects are and who keeps them."""
    found = [o for o in objects if type(o).__qualname__ == type_name][-count:]
    described = []
    for obj in found:
        holders = [o for o in gc.get_referrers(obj) if o is not objects and o is not found]
        described.append(
            {
                "repr": _short_repr(obj),
                "held_by": [f"{type(h).__qualname__}: {_short_repr(h, 120)}" for h in holders[:4]],
            }
        )
    return described


def _short_repr(obj: object, limit: int = 200) -> str:
    try:
        return repr(obj)[:limit]
    except Exception as error:  # a repr may fail on a half-built object
        return f"<repr failed: {error!r}>"[:limit]


def type_growth(first: Counter[str], now: Counter[str], top: int = TOP_TYPES) -> list:
    """The types whose live count grew most since `first`: [name, count now, growth]."""
    grown = [(name, now[name], now[name] - first.get(name, 0)) for name in now]
    grown = [row for row in grown if row[2] > 0]
    return [list(row) for row in sorted(grown, key=lambda row: -row[2])[:top]]


class LateImports:
    """Top-level packages first imported after the probe started, each with the call path
    of its first import: a code server that imports a large library in its 31st minute
    (the soaks saw pandas arrive, ~60 MiB) shows a step, not a leak, and this names who
    asked for it. An audit hook (it cannot be removed; it returns at once for a package
    already seen)."""

    def __init__(self, limit: int = 30) -> None:
        self.known = {name.partition(".")[0] for name in sys.modules}
        self.found: dict[str, str] = {}
        self.limit = limit
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple) -> None:
        if event != "import":
            return
        top = str(args[0]).partition(".")[0]
        if top in self.known:
            return
        self.known.add(top)
        frames = traceback.format_stack(limit=self.limit)[:-1]  # without this hook
        self.found[top] = "".join(frames)


def _pyarrow_bytes() -> int | None:
    pyarrow = sys.modules.get("pyarrow")
    return None if pyarrow is None else int(pyarrow.total_allocated_bytes())


class MemoryProbe:
    """Samples this process; the first sample is the baseline growth is measured from."""

    def __init__(self, path: Path, interval_s: float) -> None:
        self.path = path
        self.interval_s = interval_s
        self._first_snapshot: tracemalloc.Snapshot | None = None
        self._first_types: Counter[str] | None = None
        self._started_at = time.monotonic()
        self.stopped = threading.Event()
        self.late_imports = LateImports()

    def sample(self) -> dict:
        gc.collect()
        rss = rss_mib()
        trimmed = malloc_trim()
        objects = gc.get_objects()
        types = live_types(objects)
        if self._first_types is None:
            self._first_types = types
        grown_types = type_growth(self._first_types, types)
        examples = {
            name: examples_of(objects, name)
            for name, _, _ in [row for row in grown_types if row[0] not in GENERIC_TYPES][
                :EXAMPLE_TYPES
            ]
        }
        del objects
        sites: list[tracemalloc.StatisticDiff] = []
        if tracemalloc.is_tracing():
            snapshot = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(False, tracemalloc.__file__)]
            )
            if self._first_snapshot is None:
                self._first_snapshot = snapshot
            sites = snapshot.compare_to(self._first_snapshot, "traceback")[:TOP_SITES]
        current, peak = tracemalloc.get_traced_memory()
        return {
            "pid": os.getpid(),
            "elapsed_s": round(time.monotonic() - self._started_at, 1),
            "rss_mib": round(rss, 1),
            "rss_after_trim_mib": round(rss_mib(), 1) if trimmed else None,
            "traced_mib": round(current / 2**20, 1),
            "traced_peak_mib": round(peak / 2**20, 1),
            "pyarrow_bytes": _pyarrow_bytes(),
            "threads": threading.active_count(),
            "gc_objects": sum(types.values()),
            "grown_sites": [
                {
                    "growth_kib": round(site.size_diff / 1024, 1),
                    "kib": round(site.size / 1024, 1),
                    "blocks": site.count,
                    "path": [f"{frame.filename}:{frame.lineno}" for frame in site.traceback],
                }
                for site in sites
                if site.size_diff > 0
            ],
            "grown_types": grown_types,
            "examples": examples,
            "late_imports": dict(self.late_imports.found),
        }

    def run(self) -> None:
        while not self.stopped.is_set():
            try:
                line = json.dumps(self.sample())
                with self.path.open("a") as out:
                    out.write(line + "\n")
            except Exception:  # a probe never takes the code server down
                pass
            self.stopped.wait(self.interval_s)


def start_if_requested(
    target: Path | None,
    interval_s: float,
    frames: int = FRAMES,
    argv: Sequence[str] | None = None,
) -> MemoryProbe | None:
    """Start the probe's thread in a code server when `target` (settings.memory_probe) is
    set; once per process (the definitions may be loaded more than once). `frames` 0: no
    tracemalloc."""
    global _started
    if target is None or not serves_code(argv):
        return None
    with _lock:
        if _started:
            return None
        _started = True
    if frames > 0 and not tracemalloc.is_tracing():
        tracemalloc.start(frames)
    probe = MemoryProbe(Path(target), interval_s)
    threading.Thread(target=probe.run, name="memory-probe", daemon=True).start()
    return probe
