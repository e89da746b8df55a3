"""run_start.py: a code server starts runs as forks of one process that imported the
definitions, where Dagster would spawn a new Python per run."""

from __future__ import annotations

import inspect
import multiprocessing
import subprocess
import sys
import textwrap

import pytest

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.orchestration.run_start import run_worker_start, use_fork_server


def test_the_default_is_the_fork_server_and_spawn_is_a_choice():
    assert load_settings({}).run_start == "forkserver"
    assert load_settings({"FRESHNESS_RUN_START": "spawn"}).run_start == "spawn"
    with pytest.raises(SettingsError, match="FRESHNESS_RUN_START"):
        load_settings({"FRESHNESS_RUN_START": "fork"})


@pytest.mark.parametrize(
    ("run_start", "argv"),
    [
        ("spawn", ["dagster", "api", "grpc", "--socket", "/tmp/s"]),
        # the CLI and tests load the definitions without serving them
        ("forkserver", ["dagster", "asset", "materialize", "--select", "trade_aggr"]),
        ("forkserver", ["pytest", "assets_tests"]),
    ],
)
def test_left_alone_outside_a_code_server_or_with_spawn(run_start: str, argv: list[str]):
    assert use_fork_server(run_start, argv=argv) is False


def test_dagster_still_keeps_the_run_context_where_run_start_replaces_it():
    """Written against the pinned Dagster: its gRPC server sets `_mp_ctx` in the
    constructor, before it loads the definitions, and StartRun starts the run's process
    from it. If an upgrade moves either, this fails rather than runs quietly going back
    to spawn."""
    from dagster._grpc.server import DagsterApiServer

    constructor = inspect.getsource(DagsterApiServer.__init__)
    assert 'self._mp_ctx = multiprocessing.get_context("spawn")' in constructor
    assert constructor.index("self._mp_ctx") < constructor.index("LoadedRepositories(")
    assert "self._mp_ctx.Process(" in inspect.getsource(DagsterApiServer.StartRun)


CHILD = textwrap.dedent(
    """
    import logging, os, sys, threading
    from dagster._grpc.server import DagsterApiServer
    from freshness_pipeline.orchestration.run_start import run_worker_start, use_fork_server

    def parent_cmdline(queue):
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
            queue.put(handle.read().replace(b"\\0", b" ").decode())
        queue.put("freshness_pipeline.definitions" in sys.modules)
        from freshness_pipeline.orchestration.run_start import run_worker_start
        queue.put(run_worker_start())

    if __name__ == "__main__":
        assert use_fork_server("forkserver", argv=["dagster", "api", "grpc"])
        server = DagsterApiServer(
            server_termination_event=threading.Event(),
            logger=logging.getLogger("test"),
            server_threadpool_executor=None,
            lazy_load_user_code=True,
        )
        context = server._mp_ctx
        print("method", context.get_start_method())
        queue = context.Queue()
        worker = context.Process(target=parent_cmdline, args=(queue,))
        worker.start()
        print("parent", queue.get(timeout=120))
        print("preloaded", queue.get(timeout=10))
        print("started", queue.get(timeout=10))
        worker.join(30)
        print("exit", worker.exitcode)
    """
)


def test_a_code_server_starts_runs_from_a_fork_server_that_preloaded_the_definitions(tmp_path):
    """A real DagsterApiServer built after the definitions asked for the fork server (as in
    a code server: its constructor sets spawn, then loads us) hands out the fork server's
    context; a process started from it is a child of the fork server, which has the
    definitions imported already."""
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines["method"] == "forkserver"
    assert "multiprocessing.forkserver import main" in lines["parent"]
    assert "freshness_pipeline.definitions" in lines["parent"]  # what it preloads
    assert lines["preloaded"] == "True"
    assert lines["started"] == "forkserver"
    assert lines["exit"] == "0"


def _started_as(queue) -> None:
    from freshness_pipeline.orchestration.run_start import run_worker_start

    queue.put(run_worker_start())


def test_a_run_says_how_its_process_was_started():
    """Through the real start methods: pytest is nobody's child; a spawned child's OS
    parent is its multiprocessing parent; a fork server's child's is the fork server."""
    assert run_worker_start() == "in process"
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    worker = context.Process(target=_started_as, args=(queue,))
    worker.start()
    assert queue.get(timeout=120) == "spawn"
    worker.join(30)
