"""End to end: replayer, ingestion and the real Dagster daemon with the sensor on, on a
short stream. Without a hand on it all six tables advance until they reflect the whole
stream, at most K runs ever overlap, and each run's tags match what it processed.

Then a second short burst lands while trade_aggr is armed to fail its next two runs: with
the stream quiet, the sensor's decision is the same each tick, and the pipeline must
still drain (the failed runs retried after a backoff, under new run keys).

Runs go through the shared Spark service, as in the demo; ingestion keeps its own Spark.
On two cores the stream is kept short: it lasts 20 s and the test waits for the drain."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from assets_tests.conftest import child_env
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import PROJECT_ROOT, Settings
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.jobs.run_config import iso
from freshness_pipeline.runtime import faults
from freshness_pipeline.runtime.stack import stop_child
from freshness_pipeline.scheduling.run_plan import LAUNCHED_BY_TAG, SENSOR, RunPlan

pytestmark = pytest.mark.spark
K = 3


def watermark(settings: Settings, table: str) -> int | None:
    try:
        return HudiTableMetadata(settings.table_uri(table)).watermark_us()
    except TableNotFound:
        return None


def start(argv, env, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        argv,
        env=env,
        cwd=PROJECT_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_daemon_keeps_all_six_tables_fresh(lakehouse: Settings, tmp_path: Path, spark_service):
    env = child_env(lakehouse)
    env["FRESHNESS_SPARK_REMOTE"] = spark_service.url
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env.update({"DAGSTER_HOME": str(home), "FRESHNESS_TICK_S": "5", "FRESHNESS_K": str(K)})
    faults_dir = tmp_path / "faults"
    env["FRESHNESS_FAULTS_DIR"] = str(faults_dir)
    python = sys.executable
    cli = [python, "-m", "freshness_pipeline.cli"]
    subprocess.run(
        [*cli, "load-master", "--universe-size", "80"],
        env=env,
        check=True,
        cwd=PROJECT_ROOT,
        capture_output=True,
    )
    procs = [
        start(
            [*cli, "replay", "--rate", "200", "--universe-size", "80", "--duration", "20"],
            env,
            tmp_path / "replay.log",
        ),
        start(
            [*cli, "ingest", "--commit-interval", "5"], env, tmp_path / "ingest.log"
        ),  # own Spark
        start(
            [
                str(Path(python).parent / "dagster-daemon"),
                "run",
                "-w",
                str(PROJECT_ROOT / "workspace.yaml"),
            ],
            env,
            tmp_path / "daemon.log",
        ),
    ]
    seen: dict[str, list[int]] = {job: [] for job in JOBS}
    try:
        final = wait_for_drain(lakehouse, procs, seen, tmp_path)
        # Phase 2: a short burst, then a quiet stream, with trade_aggr failing twice.
        faults.arm(faults_dir, "trade_aggr", 2)
        procs[0] = start(
            [*cli, "replay", "--rate", "200", "--universe-size", "80", "--duration", "3"],
            env,
            tmp_path / "replay2.log",
        )
        second = wait_for_drain(lakehouse, procs, seen, tmp_path)
        assert second > final
    finally:
        for proc in procs:
            stop_child("child", proc, timeout=60)
    assert not (faults_dir / "trade_aggr.fail_before_commit").exists(), "faults not consumed"
    check_runs(home)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        # trade_aggr's step ran in the sensor's runs, as their root or as a co-root of
        # price_aggr's (chains, METHOD 8): both injected failures failed a run, and a
        # later run of it succeeded after the backoff
        trade_runs = [
            r
            for r in instance.get_runs(filters=dg.RunsFilter(tags={LAUNCHED_BY_TAG: SENSOR}))
            if dg.AssetKey("trade_aggr") in (r.asset_selection or ())
        ]
        failed = [r for r in trade_runs if r.status == dg.DagsterRunStatus.FAILURE]
        assert len(failed) == 2, [(r.tags, r.status) for r in trade_runs]
        last_failure = max(instance.get_run_record_by_id(r.run_id).end_time for r in failed)
        later = [
            r
            for r in trade_runs
            if r.status == dg.DagsterRunStatus.SUCCESS
            and instance.get_run_record_by_id(r.run_id).create_timestamp.timestamp() > last_failure
        ]
        assert later, "trade_aggr never ran again after its failures"
        # The sensor's runs went through the run queue: their phases include its wait.
        records = instance.fetch_materializations(dg.AssetKey("trade_aggr"), limit=50).records
        phases = [r.asset_materialization.metadata for r in records]
        worked = [m for m in phases if "phase_write_files_s" in m]
        # as a run's root (as another root's co-root, its step has no launch of its own)
        rooted = [m for m in worked if m["launched_by"].value == SENSOR]
        assert rooted and all("phase_queue_wait_s" in m for m in rooted), phases[:1]
        assert all("phase_launch_s" not in m for m in worked if m not in rooted)
        worked = rooted
        assert all(m["phase_queue_wait_s"].value >= 0 for m in worked)
        # The daemon's code server started them as forks of its fork server (run_start.py).
        assert {m["run_worker"].value for m in worked} == {"forkserver"}, phases[:1]


def wait_for_drain(lakehouse: Settings, procs, seen: dict[str, list[int]], tmp_path: Path) -> int:
    """Waits until the replayer (procs[0]) has finished, every landed file is ingested and
    all six tables reflect the raw tables' final watermark; returns that watermark."""
    final = None
    deadline = time.monotonic() + 1200
    while time.monotonic() < deadline:
        for job in JOBS:
            mark = watermark(lakehouse, job)
            if mark is not None and (not seen[job] or seen[job][-1] != mark):
                seen[job].append(mark)
        if procs[0].poll() is not None and not any(lakehouse.landing_dir.rglob("*.jsonl")):
            final = min(watermark(lakehouse, "trade_raw"), watermark(lakehouse, "price_raw"))
            if all(marks and marks[-1] == final for marks in seen.values()):
                return final
        daemon_log = (tmp_path / "daemon.log").read_text()[-3000:]
        assert all(p.poll() is None for p in procs[1:]), daemon_log
        time.sleep(2)
    raise AssertionError(
        f"not every table reached the stream's end {final}: {seen}\n"
        + (tmp_path / "daemon.log").read_text()[-3000:]
    )


def check_runs(home: Path) -> None:
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
        assert 1 <= peak <= K
        successes = [r for r in records if r.dagster_run.status == dg.DagsterRunStatus.SUCCESS]
        assert successes
        for record in successes:
            run = record.dagster_run
            plan = plans[run.run_id]
            job = plan.asset
            materialization = instance.fetch_materializations(dg.AssetKey(job), limit=100)
            by_run = {m.run_id: m.asset_materialization.metadata for m in materialization.records}
            meta = by_run[run.run_id]
            if "nothing_to_do" in meta:
                continue
            assert meta["files_read"].value == plan.file_count
            assert meta["spark"].value.startswith("shared Spark service")
            assert meta["t_done_after"].value == iso(plan.cutoff_us)
