"""How a code server starts a run's worker process (FRESHNESS_RUN_START).

Dagster's code server starts every run in a fresh `spawn` process: a new Python that
imports Dagster, PySpark and these definitions again before the run's first step, 2-3 s
of CPU per run on this machine's 2 cores (the `launch` phase, docs/BENCHMARKS.md, "Where a
run's time goes"), paid by every sensor run. With `forkserver`, the code server starts one
fork server that has imported the definitions once, and each run's worker is a fork of it:
the same process a spawn would give (a fresh interpreter state for the run, no threads of
the code server inherited, the same arguments pickled to it), minus the imports.

Dagster 1.13 has no option for this: its gRPC server keeps the multiprocessing context it
starts runs with in `DagsterApiServer._mp_ctx`, set to `spawn` in its constructor, before it
loads these definitions. `use_fork_server` puts a data descriptor of that name on the
class, which Python looks up ahead of the instance's own attribute, so the server that is
loading us (and any later one in this process) starts runs from the fork server. The pinned
Dagster (requirements.lock) is what this was written against;
`assets_tests/orchestration/test_run_start.py` fails if a Dagster upgrade moves the
attribute, and a real code server's run is checked to be a fork server's child in
`assets_tests/runtime/test_stack.py`.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import threading
from collections.abc import Sequence

from freshness_pipeline.runtime.memory_probe import serves_code

# What the fork server imports once: the definitions (and with them Dagster and PySpark),
# and PySpark's Spark Connect client, which a run imports when it opens its session (about
# 0.5-0.9 s of each run's session phase on 2 cores otherwise).
PRELOAD = ("freshness_pipeline.definitions", "pyspark.sql.connect.session")

_lock = threading.Lock()
_context: multiprocessing.context.BaseContext | None = None


def fork_server_context() -> multiprocessing.context.BaseContext:
    """The forkserver context, its server preloading the definitions (one per process)."""
    global _context
    with _lock:
        if _context is None:
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(list(PRELOAD))
            _context = context
        return _context


def _server_class() -> type:
    from dagster._grpc.server import DagsterApiServer

    return DagsterApiServer


def use_fork_server(run_start: str, argv: Sequence[str] | None = None) -> bool:
    """In a code server with run_start `forkserver`: make Dagster's gRPC server start runs
    from the fork server, and start that server now, while the code server starts, rather
    than on the first run. Returns whether it did (not in a run worker, the CLI or tests,
    which load the definitions without serving them)."""
    if run_start != "forkserver":
        return False
    if not serves_code(argv):
        return False  # the CLI, tests, or a run worker (they take the code server's argv)
    fork_server_context()  # the preload is set before the fork server starts
    server = _server_class()
    if not isinstance(server.__dict__.get("_mp_ctx"), _ForkServerContext):
        # Dagster's private class attribute: the context its server starts runs from.
        setattr(server, "_mp_ctx", _ForkServerContext())  # noqa: B010
    # The fork server's own start is a spawn: start it in the background so the code
    # server answers the daemon while the fork server imports the definitions.
    threading.Thread(target=_ensure_running, name="fork-server-start", daemon=True).start()
    return True


def run_worker_start() -> str:
    """How this run's process was started, for its materialization's metadata: `in
    process` (a hand `dagster asset materialize`, tests), `spawn` (Dagster's own start) or
    `forkserver`. Both children take the code server's argv, and both name the code server
    as their multiprocessing parent; only a fork server's child has another process (the
    fork server) as its parent in the operating system's sense."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return "in process"
    return "spawn" if parent.pid == os.getppid() else "forkserver"


class _ForkServerContext:
    """A data descriptor: reads give the fork server's context; the constructor's own
    assignment (`self._mp_ctx = get_context("spawn")`) is accepted and ignored."""

    def __get__(self, instance: object, owner: type | None = None) -> object:
        return fork_server_context()

    def __set__(self, instance: object, value: object) -> None:
        pass


def _ensure_running() -> None:
    from multiprocessing import forkserver

    forkserver.ensure_running()
