"""The short chaos campaign (`make chaos` runs 50 faults): one fault of every kind on a
live pipeline (replayer, ingestion, the Spark service and the real Dagster daemon with the
sensor on), then the drain, and both oracles find nothing lost and nothing doubled.

The same stack answers what a fault-free pipeline must also hold, checked on its Dagster
instance afterwards: at most K runs ever overlapped, each run processed what its tags say,
a job armed to fail was retried after its backoff under a new run key and then succeeded,
and the sensor's runs went through the run queue and a fork server."""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.execution.run_config import iso
from freshness_pipeline.lab.reliability.chaos import (
    FAULT_KINDS,
    ChaosConfig,
    report_markdown,
    run_chaos,
)
from freshness_pipeline.runtime.code_version import code_version
from freshness_pipeline.scheduling.run_plan import LAUNCHED_BY_TAG, SENSOR, RunPlan

pytestmark = pytest.mark.spark


def test_short_chaos_loses_and_doubles_nothing(tmp_path):
    settings = load_settings()
    config = ChaosConfig(
        faults=len(FAULT_KINDS),
        duration_s=75,
        seed=2,
        rate=200,
        universe_size=120,
        drain_timeout_s=600,
        out_dir=tmp_path,
    )
    result = run_chaos(config, settings)
    report = report_markdown(result, "test")
    injected = {f.kind for f in result.faults if f.injected}
    assert injected >= {"kill_spark_service", "kill_ingest", "kill_daemon", "fail_write"}, report
    assert result.drained, report
    assert {"price_raw", "trade_raw"} <= set(result.oracle), report  # raw events checked too
    assert result.rows_lost == 0 and result.rows_doubled == 0, report
    assert result.survived, report
    assert any("restarted" in e for e in result.supervisor_events), report
    # the report names the code it measured and how the sensor planned
    assert f"Code: commit `{code_version()}`; chains `planned`" in report, report

    run_dir = Path(result.config["out_dir"])
    assert not list((run_dir / "faults").glob("*")), "an armed failure was never consumed"
    armed = [f.target.split()[1] for f in result.faults if f.kind == "fail_write" and f.injected]
    home = run_dir / "dagster_home"
    check_runs(home, settings.scheduler.k)
    check_retried(home, armed)
    check_launch_phases(home)


def check_runs(home: Path, k: int) -> None:
    """At most K runs overlapped, and each successful run processed what its tags say."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        plans = {r.run_id: RunPlan.from_run(r) for r in instance.get_runs()}
        runs = [r for r in instance.get_runs() if plans[r.run_id] is not None]
        records = instance.get_run_records(filters=dg.RunsFilter(run_ids=[r.run_id for r in runs]))
        intervals = [
            (r.start_time, r.end_time or time.time()) for r in records if r.start_time is not None
        ]
        events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
        overlap = peak = 0
        for _, step in events:
            overlap += step
            peak = max(peak, overlap)
        assert 1 <= peak <= k
        successes = [r for r in records if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS]
        assert successes
        for record in successes:
            run = record.dagster_run
            plan = plans[run.run_id]
            materialization = instance.fetch_materializations(dg.AssetKey(plan.asset), limit=200)
            by_run = {m.run_id: m.asset_materialization.metadata for m in materialization.records}
            meta = by_run[run.run_id]
            if "nothing_to_do" in meta:
                continue
            assert meta["files_read"].value == plan.file_count
            assert meta["spark"].value.startswith("shared Spark service")
            assert meta["t_done_after"].value == iso(plan.cutoff_us)


def check_retried(home: Path, armed: list[str]) -> None:
    """Each job armed to fail failed a sensor run (as its root or a step of a chain) and a
    later sensor run of it succeeded: retried after the backoff, under a new run key."""
    assert armed
    with dg.DagsterInstance.from_config(str(home)) as instance:
        sensor_runs = instance.get_runs(filters=dg.RunsFilter(tags={LAUNCHED_BY_TAG: SENSOR}))
        for job in set(armed):
            runs = [r for r in sensor_runs if dg.AssetKey(job) in (r.asset_selection or ())]
            failed = [r for r in runs if r.status == dg.DagsterRunStatus.FAILURE]
            assert failed, (job, [(r.tags, r.status) for r in runs])
            last_failure = max(instance.get_run_record_by_id(r.run_id).end_time for r in failed)
            later = [
                r
                for r in runs
                if r.status == dg.DagsterRunStatus.SUCCESS
                and instance.get_run_record_by_id(r.run_id).create_timestamp.timestamp()
                > last_failure
            ]
            assert later, f"{job} never ran again after its failure"
            assert len({r.tags.get("dagster/run_key") for r in runs}) == len(runs), job


def check_launch_phases(home: Path) -> None:
    """A run's root step records its queue wait (the sensor's runs go through the run
    queue), a chain's later steps no launch of their own, and the daemon's code server
    started every run as a fork of its fork server (run_start.py).

    Checked on every step that worked (files read, not `nothing_to_do`), whichever jobs
    those were: in a short campaign a job's only work can be a run killed after its commit
    (its retry then finds nothing to do), or a step of a chain rooted at another job. Its
    write's timeline phases are left out when the commit's marks could not be read
    (runner._timeline_times: timing never fails a committed run), so they are asked of the
    campaign, not of each step."""
    worked = []
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for job in JOBS:
            records = instance.fetch_materializations(dg.AssetKey(job), limit=1000).records
            worked += [
                (job, r.asset_materialization.metadata)
                for r in records
                if "files_read" in r.asset_materialization.metadata
            ]
    rooted = [(job, m) for job, m in worked if m["launched_by"].value == SENSOR]
    assert rooted, f"no sensor run's root step worked: {[job for job, _ in worked]}"
    for job, m in rooted:
        assert m["phase_queue_wait_s"].value >= 0, (job, m)
        assert m["run_worker"].value == "forkserver", (job, m)
    later = [(job, m) for job, m in worked if m["launched_by"].value != SENSOR]
    assert all("phase_launch_s" not in m for _, m in later), later[:1]
    assert any("phase_write_files_s" in m for _, m in worked), "no step timed its write"
