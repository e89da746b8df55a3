"""The runs' executor (orchestration/step_executor.py): steps in the run's process unless
the run config asks for them side by side, then each in a process of its own, at most
`max_concurrent` at once, a child only after its parents. Real Dagster runs on a temporary
instance, with assets that record where and when they ran (no Spark)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from dagster import (
    DagsterInstance,
    Definitions,
    asset,
    define_asset_job,
    execute_job,
    reconstructable,
)

from freshness_pipeline.orchestration.step_executor import steps_executor
from freshness_pipeline.scheduling.run_plan import execution_config

LOG_ENV = "STEP_EXECUTOR_TEST_LOG"


def _record(name: str, wait_s: float = 0.0) -> None:
    started = time.time()
    time.sleep(wait_s)
    line = {"asset": name, "pid": os.getpid(), "start": started, "end": time.time()}
    with open(os.environ[LOG_ENV], "a") as log:
        log.write(json.dumps(line) + "\n")


@asset
def parent() -> None:
    _record("parent")


@asset(deps=[parent])
def view_a() -> None:
    _record("view_a", 1.0)


@asset(deps=[parent])
def view_b() -> None:
    _record("view_b", 1.0)


@asset(deps=[parent])
def view_c() -> None:
    _record("view_c", 1.0)


def chain_job():
    return Definitions(
        assets=[parent, view_a, view_b, view_c],
        jobs=[define_asset_job("chain", selection=[parent, view_a, view_b, view_c])],
        executor=steps_executor,
    ).resolve_job_def("chain")


def _run(tmp_path: Path, run_config: dict) -> list[dict]:
    log = tmp_path / "steps.jsonl"
    os.environ[LOG_ENV] = str(log)
    (tmp_path / "home").mkdir()
    try:
        with (
            DagsterInstance.local_temp(str(tmp_path / "home")) as instance,
            execute_job(reconstructable(chain_job), instance, run_config=run_config) as result,
        ):
            assert result.success
    finally:
        del os.environ[LOG_ENV]
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_steps_run_in_the_runs_process_by_default(tmp_path: Path):
    steps = _run(tmp_path, {})
    assert [s["asset"] for s in steps][0] == "parent"
    assert {s["pid"] for s in steps} == {os.getpid()}  # execute_job runs in this process
    # one at a time
    views = sorted((s for s in steps if s["asset"] != "parent"), key=lambda s: s["start"])
    assert all(a["end"] <= b["start"] for a, b in zip(views, views[1:], strict=False))


# forks a server and three processes that import dagster (about 10 s on 2 busy cores)
def test_a_run_config_sets_its_steps_side_by_side_after_their_parent(tmp_path: Path):
    steps = _run(tmp_path, execution_config(3))
    by_name = {s["asset"]: s for s in steps}
    assert len({s["pid"] for s in steps} | {os.getpid()}) == 5  # a process per step
    views = [by_name[v] for v in ("view_a", "view_b", "view_c")]
    assert all(v["start"] >= by_name["parent"]["end"] for v in views)  # after the parent
    overlap = min(v["end"] for v in views) - max(v["start"] for v in views)
    assert overlap > 0  # all three under way at one moment


def test_one_step_at_a_time_needs_no_executor_config():
    assert execution_config(1) == {}
    config = execution_config(3)["execution"]["config"]["multiprocess"]
    assert config == {"max_concurrent": 3, "start_method": {"forkserver": {}}}
