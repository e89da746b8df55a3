"""Supervision and fault injection pieces that need no Spark: the fault schedule, the
fault files, liveness of a pid, and the sensor's wait while the Spark service is down."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys

import dagster as dg
import pytest

from freshness_pipeline.config.scheduler_settings import SchedulerSettings
from freshness_pipeline.lab.reliability.chaos import (
    FAULT_KINDS,
    GIVE_UP_S,
    ChaosConfig,
    ChaosResult,
    _inject_next_due,
    fault_schedule,
)
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.orchestration.sensor import build_sensor, service_down
from freshness_pipeline.runtime import faults, stack
from freshness_pipeline.runtime.stack import pid_alive


def test_fault_schedule_is_seeded_spread_and_rotates_every_kind():
    config = ChaosConfig(faults=50, duration_s=900)
    first = fault_schedule(config, random.Random(3))
    assert first == fault_schedule(config, random.Random(3))
    times = [t for t, _ in first]
    assert times == sorted(times) and times[0] >= 5 and times[-1] <= 0.9 * 900
    kinds = [k for _, k in first]
    counts = [kinds.count(k) for k in FAULT_KINDS]
    assert sum(counts) == 50 and max(counts) - min(counts) <= 1  # every kind, in turn


def test_a_fault_without_a_target_does_not_hold_up_the_ones_behind_it():
    # kill_run finds no run in flight; the daemon kill due after it must still happen.
    targets = {"kill_run": None, "kill_daemon": "daemon 42", "kill_ingest": "ingest 7"}
    result, config = ChaosResult(config={}), ChaosConfig(faults=3)
    pending = [(1.0, "kill_run"), (2.0, "kill_daemon"), (50.0, "kill_ingest")]
    tried: dict = {}
    _inject_next_due(pending, 10.0, targets.get, result, config, tried)
    assert [(f.kind, f.target) for f in result.faults] == [("kill_daemon", "daemon 42")]
    assert pending == [(1.0, "kill_run"), (50.0, "kill_ingest")]
    _inject_next_due(pending, 20.0, targets.get, result, config, tried)  # kill_ingest not due
    assert len(result.faults) == 1
    _inject_next_due(pending, 10.0 + GIVE_UP_S - 1, targets.get, result, config, tried)
    # kill_run's clock started at its first try (10 s): still waiting; kill_ingest went.
    assert pending == [(1.0, "kill_run")] and result.faults[-1].kind == "kill_ingest"
    _inject_next_due(pending, 10.0 + GIVE_UP_S + 1, targets.get, result, config, tried)
    assert (result.faults[-1].kind, result.faults[-1].injected) == ("kill_run", False)
    assert pending == []


@pytest.mark.parametrize("waiting", ["kill_in_commit", "kill_between_steps"])
def test_a_waiting_fault_holds_the_faults_behind_it_and_they_get_their_own_clock(waiting):
    # No commit (no chain mid-way) in flight: the Spark service kill due behind it waits
    # (it would fail the very runs the waiting fault waits for), then goes once it does.
    targets = {waiting: None, "kill_spark_service": "service 9", "kill_run": None}
    result, config = ChaosResult(config={}), ChaosConfig(faults=3)
    pending = [(1.0, waiting), (2.0, "kill_spark_service"), (3.0, "kill_run")]
    tried: dict = {}
    for now in (5.0, 60.0, 1.0 + GIVE_UP_S):
        _inject_next_due(pending, now, targets.get, result, config, tried)
    assert result.faults == [] and len(pending) == 3
    targets[waiting] = "the run's worker, mid-commit or mid-chain"
    _inject_next_due(pending, 130.0, targets.get, result, config, tried)
    _inject_next_due(pending, 131.0, targets.get, result, config, tried)
    assert [f.target for f in result.faults] == [targets[waiting], "service 9"]
    # kill_run was held from 3 s on and first tried at 132 s: its GIVE_UP_S counts from then.
    assert pending == [(3.0, "kill_run")]
    _inject_next_due(pending, 132.0, targets.get, result, config, tried)
    _inject_next_due(pending, 132.0 + GIVE_UP_S - 1, targets.get, result, config, tried)
    assert pending == [(3.0, "kill_run")]
    _inject_next_due(pending, 132.0 + GIVE_UP_S + 1, targets.get, result, config, tried)
    assert pending == [] and not result.faults[-1].injected


def test_armed_faults_are_taken_once_each(tmp_path):
    assert not faults.take(None, "trade_aggr")
    assert not faults.take(tmp_path, "trade_aggr")
    faults.arm(tmp_path, "trade_aggr", 2)
    assert [faults.take(tmp_path, "trade_aggr") for _ in range(3)] == [True, True, False]
    assert not (tmp_path / "trade_aggr.fail_before_commit").exists()
    assert not faults.take(tmp_path, "price_aggr")


def test_pid_alive_sees_a_killed_child_as_gone():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert pid_alive(child.pid)
    child.kill()
    child.wait()
    assert not pid_alive(child.pid)


def test_pid_alive_sees_a_process_reaped_while_its_stat_is_read_as_gone(monkeypatch):
    class Vanishing:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(stack, "open", lambda *a, **k: Vanishing(), raising=False)
    assert not pid_alive(os.getpid())


class Unused(HudiMetadataResource):
    """The tick must skip before it reads any table."""

    def table(self, table: str):
        raise AssertionError("the sensor read Hudi metadata while the service was down")


def test_sensor_waits_while_the_spark_service_is_unreachable():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert service_down(f"sc://127.0.0.1:{port}") is None
    url = f"sc://127.0.0.1:{port}"  # closed now
    assert service_down(url).startswith(f"waiting for the Spark service at {url}")
    assert service_down(None) is None
    sensor_def = build_sensor(SchedulerSettings(), spark_remote=url)
    with dg.instance_for_test() as instance:
        context = dg.build_sensor_context(instance=instance, resources={"hudi_meta": Unused()})
        result = sensor_def(context)
    assert isinstance(result, dg.SensorResult) and result.skip_reason is not None
    assert "waiting for the Spark service" in result.skip_reason.skip_message
    assert result.cursor == "idle: Spark service not reachable"  # the tick history's row


def test_a_commit_already_hit_does_not_draw_a_second_kill(tmp_path):
    # After a kill during trade_aggr's commit its inflight mark stays, young, until rolled
    # back: the restarted service is not committing it, so it is no target any more.
    from freshness_pipeline.hudi.lakehouse import Lakehouse
    from freshness_pipeline.lab.reliability.chaos import _inflight_commit

    lakehouse = Lakehouse.parse(str(tmp_path / "tables"))
    timeline = lakehouse.table("trade_aggr").local_path() / ".hoodie" / "timeline"
    timeline.mkdir(parents=True)
    (timeline / "20261124020043711.inflight").write_text("")
    (timeline / "20261124010000000_20261124010001000.commit").write_text("")
    found = _inflight_commit(lakehouse)
    assert found == ("trade_aggr", "20261124020043711")
    assert _inflight_commit(lakehouse, exclude={found}) is None
    (timeline / "20261124020050000.inflight").write_text("")  # a new commit begins
    assert _inflight_commit(lakehouse, exclude={found}) == ("trade_aggr", "20261124020050000")


def test_raw_duplicates_counts_every_extra_copy_of_an_event():
    import pandas as pd

    from freshness_pipeline.lab.reliability.chaos import raw_duplicates

    events = pd.DataFrame({"event_id": ["a", "b", "b", "c", "c", "c"], "size": range(6)})
    doubled, keys = raw_duplicates(events, "event_id")
    assert doubled == 3 and sorted(keys) == ["b", "c"]
    assert raw_duplicates(events.drop_duplicates("event_id"), "event_id") == (0, [])
