"""The sensor's reads of the instance's history (orchestration/history.py): after the
first read of an instance, a tick asks only for what is new, and what it holds is what a
whole read would give."""

from __future__ import annotations

import dagster as dg
from dagster._core.test_utils import create_run_for_test

from freshness_pipeline.orchestration import history
from freshness_pipeline.scheduling.run_plan import ASSET_TAG, CHAINED_TAG


class Counting:
    """The instance, counting the calls that read records."""

    def __init__(self, instance) -> None:
        self._instance = instance
        self.calls: list[str] = []

    def __getattr__(self, name: str):
        found = getattr(self._instance, name)
        if name in ("fetch_materializations", "get_run_records", "get_records_for_run"):
            self.calls.append(name)
        return found


def _materialize(instance, job: str, duration_s: float) -> None:
    instance.report_runless_asset_event(
        dg.AssetMaterialization(job, metadata={"duration_s": duration_s})
    )


def _durations(records: list) -> list[float]:
    return [r.asset_materialization.metadata["duration_s"].value for r in records]


def test_materializations_are_read_whole_once_then_only_the_new_ones():
    with dg.instance_for_test() as instance:
        counting = Counting(instance)
        for i in range(5):
            _materialize(instance, "trade_aggr", float(i))
        first = history.materializations(counting, ["trade_aggr", "price_aggr"], limit=3)
        assert _durations(first["trade_aggr"]) == [4.0, 3.0, 2.0]  # newest first, at most 3
        assert first["price_aggr"] == []  # never materialized: no read of its records
        assert counting.calls == ["fetch_materializations"]
        counting.calls.clear()
        again = history.materializations(counting, ["trade_aggr", "price_aggr"], limit=3)
        assert again == first and counting.calls == []  # nothing new: nothing read
        _materialize(instance, "trade_aggr", 5.0)
        _materialize(instance, "price_aggr", 9.0)
        moved = history.materializations(counting, ["trade_aggr", "price_aggr"], limit=3)
        assert _durations(moved["trade_aggr"]) == [5.0, 4.0, 3.0]
        assert _durations(moved["price_aggr"]) == [9.0]
        assert counting.calls == ["fetch_materializations"] * 2  # only the new records
        history.forget(instance)
        whole = history.materializations(instance, ["trade_aggr", "price_aggr"], limit=3)
        assert {j: _durations(r) for j, r in whole.items()} == {
            j: _durations(r) for j, r in moved.items()
        }


def test_a_wiped_history_is_read_again():
    with dg.instance_for_test() as instance:
        _materialize(instance, "trade_aggr", 1.0)
        assert _durations(history.materializations(instance, ["trade_aggr"])["trade_aggr"])
        instance.wipe_assets([dg.AssetKey("trade_aggr")])
        assert history.materializations(instance, ["trade_aggr"])["trade_aggr"] == []
        _materialize(instance, "trade_aggr", 2.0)
        assert _durations(history.materializations(instance, ["trade_aggr"])["trade_aggr"]) == [2.0]


def _run(instance, job: str, status: dg.DagsterRunStatus, chained: str = ""):
    tags = {ASSET_TAG: job, **({CHAINED_TAG: chained} if chained else {})}
    return create_run_for_test(instance, job_name="x", status=status, tags=tags)


def test_finished_runs_add_the_runs_finished_since_and_keep_the_newest():
    with dg.instance_for_test() as instance:
        counting = Counting(instance)
        ok = _run(instance, "trade_aggr", dg.DagsterRunStatus.SUCCESS)
        running = _run(instance, "price_aggr", dg.DagsterRunStatus.STARTED)
        first = history.finished_runs(counting, ["trade_aggr", "price_aggr"], per_job=2)
        assert [r.dagster_run.run_id for r in first] == [ok.run_id]
        instance.report_run_failed(running)  # finished since: found by its update
        later = _run(instance, "trade_aggr", dg.DagsterRunStatus.CANCELED)
        _run(instance, "sector_vwap", dg.DagsterRunStatus.SUCCESS)  # not one of the jobs
        found = history.finished_runs(counting, ["trade_aggr", "price_aggr"], per_job=2)
        assert [r.dagster_run.run_id for r in found] == [later.run_id, running.run_id, ok.run_id]
        statuses = [r.dagster_run.status for r in found]
        assert statuses[1] == dg.DagsterRunStatus.FAILURE
        for _ in range(3):
            _run(instance, "trade_aggr", dg.DagsterRunStatus.SUCCESS)
        kept = history.finished_runs(counting, ["trade_aggr", "price_aggr"], per_job=2)
        assert len(kept) == 4  # per_job * jobs, the newest
        history.forget(instance)
        whole = history.finished_runs(instance, ["trade_aggr", "price_aggr"], per_job=2)
        assert [r.dagster_run.run_id for r in whole] == [r.dagster_run.run_id for r in kept]


def test_a_chained_runs_step_outcomes_are_read_once():
    with dg.instance_for_test() as instance:
        counting = Counting(instance)
        run = _run(instance, "trade_aggr", dg.DagsterRunStatus.FAILURE, "market_features")
        assert history.chain_steps(run) == {"trade_aggr", "market_features"}
        assert history.step_outcomes(counting, run.run_id) == (set(), set())
        assert history.step_outcomes(counting, run.run_id) == (set(), set())
        assert counting.calls == ["get_records_for_run"]
