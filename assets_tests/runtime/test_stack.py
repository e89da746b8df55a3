"""The stop drains this stack's runs: its queued runs are canceled (nothing would launch
them), and it waits for its started ones. Runs from before the stack started are left
alone, so a run an earlier crashed session left as STARTED cannot hold a stop up."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.events import DagsterEvent, DagsterEventType
from dagster._core.remote_origin import (
    RegisteredCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.storage.dagster_run import DagsterRun

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.runtime.stack import (
    Stack,
    StackConfig,
    exit_on_signals,
    free_slots_of_ended_runs,
)


def _add(instance: dg.DagsterInstance, status: dg.DagsterRunStatus) -> str:
    if status != dg.DagsterRunStatus.QUEUED:
        return instance.add_run(DagsterRun(job_name="trade_aggr_job", status=status)).run_id
    # as the run queue does it: a new run (queued runs need an origin), then the
    # enqueued event
    origin = RemoteJobOrigin(
        RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("freshness"), "__repository__"),
        "trade_aggr_job",
    )
    run = instance.add_run(DagsterRun(job_name="trade_aggr_job", remote_job_origin=origin))
    instance.report_dagster_event(
        DagsterEvent(DagsterEventType.RUN_ENQUEUED.value, job_name=run.job_name), run.run_id
    )
    return run.run_id


def _dagster_home(tmp_path: Path) -> Path:
    """A Dagster home with the project's dagster.yaml."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text((PROJECT_ROOT / "dagster.yaml").read_text())
    return home


def test_drain_cancels_its_queued_runs_and_ignores_older_ones(tmp_path: Path):
    home = _dagster_home(tmp_path)
    stack = Stack(StackConfig(dagster_home=home, logs_dir=tmp_path / "logs"), load_settings())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        old_queued = _add(instance, dg.DagsterRunStatus.QUEUED)
        old_started = _add(instance, dg.DagsterRunStatus.STARTED)
        time.sleep(0.05)
        stack.started_at = datetime.now(UTC)
        time.sleep(0.05)
        new_queued = _add(instance, dg.DagsterRunStatus.QUEUED)
    began = time.monotonic()
    stack.drain_runs(timeout_s=30)
    assert time.monotonic() - began < 10  # the old STARTED run did not hold it up
    with dg.DagsterInstance.from_config(str(home)) as instance:
        status = {r.run_id: r.status for r in instance.get_runs()}
    assert status[new_queued] == dg.DagsterRunStatus.CANCELED
    assert status[old_queued] == dg.DagsterRunStatus.QUEUED
    assert status[old_started] == dg.DagsterRunStatus.STARTED


def test_drain_waits_for_its_started_runs_up_to_the_timeout(tmp_path: Path):
    home = _dagster_home(tmp_path)
    stack = Stack(StackConfig(dagster_home=home, logs_dir=tmp_path / "logs"), load_settings())
    stack.started_at = datetime.now(UTC)
    time.sleep(0.05)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        _add(instance, dg.DagsterRunStatus.STARTED)
    began = time.monotonic()
    stack.drain_runs(timeout_s=3)
    assert 3 <= time.monotonic() - began < 15


def test_drain_does_not_wait_for_a_run_whose_worker_is_gone(tmp_path: Path, monkeypatch):
    """A run whose worker was killed stays STARTED in Dagster; the drain marks it failed
    instead of waiting its whole timeout for it."""
    from freshness_pipeline.runtime import stack as stack_module

    home = _dagster_home(tmp_path)
    stack = Stack(StackConfig(dagster_home=home, logs_dir=tmp_path / "logs"), load_settings())
    stack.started_at = datetime.now(UTC)
    time.sleep(0.05)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        lost = _add(instance, dg.DagsterRunStatus.STARTED)
    monkeypatch.setattr(stack_module, "run_worker_pid", lambda _instance, _run_id: 4_000_000)
    began = time.monotonic()
    stack.drain_runs(timeout_s=60)
    assert time.monotonic() - began < 15
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id(lost).status == dg.DagsterRunStatus.FAILURE


def test_bad_scheduler_settings_are_refused_before_anything_starts(tmp_path: Path):
    config = StackConfig(
        dagster_home=tmp_path / "dagster_home",
        logs_dir=tmp_path / "logs",
        env={"FRESHNESS_TICK_S": "3"},
    )
    with pytest.raises(
        ValueError, match="FRESHNESS_TICK_S=.3. is not accepted: expected an integer of at least 5"
    ):
        Stack(config, load_settings()).start()
    assert not (tmp_path / "dagster_home").exists()
    assert not (tmp_path / "logs").exists()


def test_pool_slots_of_ended_runs_are_freed_at_once(tmp_path: Path):
    """A run killed outright keeps its `hudi_writer/<asset>` slot until someone frees it;
    the supervisor frees it as soon as the run has ended, and leaves live runs' slots."""
    home = _dagster_home(tmp_path)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        dead = _add(instance, dg.DagsterRunStatus.FAILURE)
        live = _add(instance, dg.DagsterRunStatus.STARTED)
        for pool, run_id in (("hudi_writer/trade_aggr", dead), ("hudi_writer/price_aggr", live)):
            storage.set_concurrency_slots(pool, 1)
            assert storage.claim_concurrency_slot(pool, run_id, pool.split("/")[1]).is_claimed
        events = free_slots_of_ended_runs(instance)
        assert events == [f"freed pool hudi_writer/trade_aggr held by ended run {dead}"]
        assert storage.get_concurrency_info("hudi_writer/trade_aggr").claimed_slots == []
        held = storage.get_concurrency_info("hudi_writer/price_aggr").claimed_slots
        assert [s.run_id for s in held] == [live]


def test_without_the_webserver_the_daemon_reaches_one_code_server_of_the_stack(tmp_path: Path):
    """A bare `dagster-daemon run` would start its own code server and replace it every
    minute; the stack starts one for its life, and the daemon's workspace points at it
    under the location name workspace.yaml gives (run and sensor records name it)."""
    import sys

    from dagster._core.workspace.load import location_origins_from_yaml_paths

    from freshness_pipeline.runtime.stack import CODE_LOCATION

    home = tmp_path / "dagster_home"
    home.mkdir()
    stack = Stack(
        StackConfig(webserver=False, dagster_home=home, logs_dir=tmp_path / "logs"), load_settings()
    )
    try:
        workspace = stack._start_code_server(Path(sys.executable).parent)
        [origin] = location_origins_from_yaml_paths([str(workspace)])
        assert origin.location_name == CODE_LOCATION
        with origin.create_location(dg.DagsterInstance.ephemeral()) as location:
            repository = location.get_repository("__repository__")
            assert repository.has_sensor("freshness_sensor")
        server = stack.process("code-server")
        environ = Path(f"/proc/{server.pid}/environ").read_bytes().split(b"\0")
        assert b"MALLOC_ARENA_MAX=2" in environ
        assert b"ARROW_DEFAULT_MEMORY_POOL=system" in environ
        # Killed, it is started again on the same socket by the supervisor.
        server.kill()
        server.wait()
        stack.supervise()
        assert stack.restarts == {"code-server": 1}
        stack._wait_for_code_server(Path(sys.executable).parent)
    finally:
        stack.stop()
    assert stack.process("code-server").poll() is not None
    assert not stack._code_socket.parent.exists()


def test_a_run_that_ended_as_its_worker_exited_is_not_marked_lost(tmp_path: Path, monkeypatch):
    """The supervisor lists started runs, then finds a worker gone: a run that wrote its
    RUN_SUCCESS between the two stays a success; one still started is marked failed."""
    from freshness_pipeline.runtime import stack

    home = _dagster_home(tmp_path)
    before = datetime.now(UTC)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        finished = _add(instance, dg.DagsterRunStatus.STARTED)
        lost = _add(instance, dg.DagsterRunStatus.STARTED)
        monkeypatch.setattr(stack, "run_worker_pid", lambda _instance, run_id: 4_000_000)

        def gone(_pid: int) -> bool:
            # the worker of `finished` wrote its success just before it exited
            run = instance.get_run_by_id(finished)
            if run is not None and run.status == dg.DagsterRunStatus.STARTED:
                instance.handle_new_event(_success_event(run))
            return False

        monkeypatch.setattr(stack, "pid_alive", gone)
        events = stack.fail_runs_without_worker(instance, before)
        assert events == [f"run {lost} lost its worker (pid 4000000); marked failed"]
        assert instance.get_run_by_id(finished).status == dg.DagsterRunStatus.SUCCESS
        assert instance.get_run_by_id(lost).status == dg.DagsterRunStatus.FAILURE


def _success_event(run: DagsterRun):
    from dagster._core.events.log import EventLogEntry

    event = DagsterEvent(DagsterEventType.RUN_SUCCESS.value, job_name=run.job_name)
    return EventLogEntry(
        error_info=None,
        level="INFO",
        user_message="",
        run_id=run.run_id,
        timestamp=time.time(),
        dagster_event=event,
    )


def test_the_code_servers_allocator_settings_yield_to_the_users():
    from freshness_pipeline.runtime.stack import code_server_environment

    assert code_server_environment({"PATH": "/bin"}) == {
        "PATH": "/bin",
        "MALLOC_ARENA_MAX": "2",
        "ARROW_DEFAULT_MEMORY_POOL": "system",
    }
    mine = code_server_environment({"MALLOC_ARENA_MAX": "8"})
    assert mine["MALLOC_ARENA_MAX"] == "8"


def test_a_terminated_campaign_unwinds_so_it_stops_what_it_started():
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    stopped = []
    try:
        exit_on_signals()
        with pytest.raises(SystemExit) as exited:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(5)  # the handler raises in this frame
            finally:
                stopped.append(True)
        assert exited.value.code == 128 + signal.SIGTERM
        assert stopped == [True]
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_a_paused_child_stays_down_until_resumed(tmp_path: Path):
    # The recovery condition's outage: Dagster's daemon stopped on purpose is neither a
    # crash (exited) nor restarted by the supervisor; resumed, it runs as it first did.
    import sys

    stack = Stack(
        StackConfig(dagster_home=tmp_path / "home", logs_dir=tmp_path / "logs"), load_settings()
    )
    (tmp_path / "logs").mkdir()
    (tmp_path / "home").mkdir()  # the daemon's working directory
    stack._spawn("dagster", [sys.executable, "-c", "import time; time.sleep(120)"], 5)
    first = stack.process("dagster")
    try:
        stack.pause("dagster")
        assert first.poll() is not None
        assert stack.exited() == [] and stack.paused == {"dagster"}
        assert stack.supervise() == [] and stack.process("dagster") is first  # left down
        stack.resume("dagster")
        again = stack.process("dagster")
        assert again is not first and again.poll() is None and again.args == first.args
        assert stack.paused == set()
    finally:
        for _, proc, _ in stack.children:
            proc.kill()
            proc.wait()


def test_the_instance_storage_is_created_before_any_child_opens_it(tmp_path: Path):
    """Dagster's SQLite storages created by two processes at once can each stamp a schema
    version, after which every open fails; the stack creates them before its children,
    which then open them side by side."""
    import subprocess
    import sys

    home = tmp_path / "dagster_home"
    stack = Stack(StackConfig(dagster_home=home, logs_dir=tmp_path / "logs"), load_settings())
    stack._prepare_dagster_home(stack.settings)
    try:
        for storage in ("history/runs.db", "schedules/schedules.db"):
            assert (home / storage).exists(), storage
        opener = (
            "import dagster as dg; "
            f"i = dg.DagsterInstance.from_config({str(home)!r}); "
            "i.get_runs(); i.all_instigator_state(); i.dispose()"
        )
        children = [subprocess.Popen([sys.executable, "-c", opener]) for _ in range(3)]
        assert [child.wait(timeout=120) for child in children] == [0, 0, 0]
    finally:
        stack.stop(drain_timeout_s=1)
