"""One writer per table, whoever launches the run (a run counted twice once came from two writers).

A `dagster asset materialize` by hand started beside a run carrying the sensor's decision
(its exact run config, from the real `evaluate_tick`), in both orders: the table's pool
lets one step run at a time, the later run plans from the watermark the earlier one
committed, and trade_aggr equals the batch oracle (no window counted twice). Replaying a
finished run's config commits nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from assets_tests.conftest import child_env
from assets_tests.execution.oracle import batch_recompute, differences
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.scheduler_settings import SchedulerSettings
from freshness_pipeline.config.settings import Settings, load_settings
from freshness_pipeline.execution.run_config import resolve_run
from freshness_pipeline.execution.runner import JobRunner
from freshness_pipeline.ingestion.feeder import StreamFeeder
from freshness_pipeline.orchestration.assets import writer_pool
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.orchestration.sensor import evaluate_tick
from freshness_pipeline.runtime.service_discovery import ServiceAnnouncement, announce

pytestmark = pytest.mark.spark
WRITE_PHASES = ("write_prepare", "index_lookup", "write_files", "after_commit")
JOB = "trade_aggr"


def materialize_cmd(config: dict | None = None, select: str = JOB) -> list[str]:
    dagster = str(Path(sys.executable).parent / "dagster")
    argv = [dagster, "asset", "materialize", "-m", "freshness_pipeline.definitions"]
    argv += ["--select", select]
    if config is not None:
        argv += ["--config-json", json.dumps(config)]
    return argv


def step_interval(
    instance: dg.DagsterInstance, run_id: str, step: str = JOB
) -> tuple[float, float]:
    """When the run's step for `step` started and succeeded."""
    events = {
        e.dagster_event.event_type: e.timestamp
        for e in instance.all_logs(run_id)
        if e.dagster_event is not None and e.step_key == step
    }
    return events[dg.DagsterEventType.STEP_START], events[dg.DagsterEventType.STEP_SUCCESS]


def materialization_of(instance: dg.DagsterInstance, run_id: str, asset: str = JOB) -> dict:
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=20).records
    return next(r.asset_materialization.metadata for r in records if r.run_id == run_id)


def prepared(
    spark, lakehouse: Settings, tmp_path: Path, service_url: str, seed: int, jobs: list[str]
) -> tuple[StreamFeeder, JobRunner, Path, dict[str, str]]:
    """Two landed seconds ingested and `jobs` run over them, three more seconds ingested
    and pending; a DAGSTER_HOME with the project's dagster.yaml and the environment of a
    run through the shared service."""
    feeder = StreamFeeder(spark, lakehouse, seed=seed)
    runner = JobRunner(spark, lakehouse.table_uri)
    feeder.land(2)
    feeder.ingest()
    for job in jobs:
        runner.run(JOBS[job], resolve_run(JOBS[job], [], None, feeder.meta))
    feeder.land(3)
    feeder.ingest()
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    env = child_env(lakehouse)
    env.update({"DAGSTER_HOME": str(home), "FRESHNESS_SPARK_REMOTE": service_url})
    return feeder, runner, home, env


@pytest.mark.parametrize("sensor_first", [True, False], ids=["sensor-first", "hand-first"])
def test_hand_materialize_beside_a_sensor_run(
    spark, spark_service, lakehouse: Settings, tmp_path: Path, sensor_first: bool
):
    feeder, _, home, env = prepared(spark, lakehouse, tmp_path, spark_service.url, 21, [JOB])
    # The hand run is typed the README's way, without FRESHNESS_SPARK_REMOTE: it finds the
    # service the demo announced in DAGSTER_HOME instead of starting its own Spark.
    hand_env = {k: v for k, v in env.items() if k != "FRESHNESS_SPARK_REMOTE"}
    announce(
        home,
        ServiceAnnouncement(spark_service.url, spark_service.process.pid, lakehouse.lakehouse_root),
    )

    with dg.DagsterInstance.from_config(str(home)) as instance:
        _, requests = evaluate_tick(
            HudiMetadataResource.for_settings(load_settings()),
            instance,
            SchedulerSettings(),
            int(time.time() * 1e6),
            jobs=[JOBS[JOB]],
        )
    assert len(requests) == 1
    sensor_config = requests[0].run_config
    commands = {"sensor": materialize_cmd(sensor_config), "hand": materialize_cmd()}
    order = ["sensor", "hand"] if sensor_first else ["hand", "sensor"]
    procs = {}
    for name in order:
        log = (tmp_path / f"{name}.log").open("wb")
        procs[name] = subprocess.Popen(
            commands[name],
            env=hand_env if name == "hand" else env,
            cwd=PROJECT_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        time.sleep(4)  # the first one claims the pool slot first
    for name, proc in procs.items():
        assert proc.wait(timeout=600) == 0, (tmp_path / f"{name}.log").read_text()[-4000:]

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = {
            "sensor" if "t_done_planned" in json.dumps(r.run_config) else "hand": r.run_id
            for r in instance.get_runs()
        }
        assert set(runs) == {"sensor", "hand"}
        first, second = (step_interval(instance, runs[name]) for name in order)
        # One writer at a time: the second step started after the first one ended.
        assert second[0] >= first[1], (first, second)
        pool_limits = {p.name: p.limit for p in instance.event_log_storage.get_pool_limits()}
        assert pool_limits.get(writer_pool(JOB)) == 1
        later = materialization_of(instance, runs[order[1]])
        earlier = materialization_of(instance, runs[order[0]])
        hand = materialization_of(instance, runs["hand"])
    if not sensor_first:  # first, the hand run has work (second, the sensor's may leave none)
        assert hand["spark"].value.startswith(f"shared Spark service {spark_service.url}")
        assert "found running" in hand["spark"].value
        assert hand["run_worker"].value == "in process"  # the CLI runs it in its own process
        # Where its time went, from its own marks and the commit's on the Hudi timeline.
        phases = {k: v.value for k, v in hand.items() if k.startswith("phase_")}
        for phase in ("launch", "plan", "session", "read", "transform", "index_lookup"):
            assert phases[f"phase_{phase}_s"] >= 0, phases
        assert phases["phase_write_files_s"] > 0, phases  # inflight to completed
        write = sum(phases[f"phase_{p}_s"] for p in WRITE_PHASES)
        assert write <= hand["duration_s"].value + 0.01, phases
    # The later run planned from the watermark the earlier one committed.
    assert later["t_done_before"].value == earlier["t_done_after"].value
    if order[1] == "sensor":
        # Its plan was made before the hand run committed: re-planned, never run stale.
        assert later["stale_plans_refused"].value == 1
        assert "nothing_to_do" in later or later["rows_written"].value >= 0

    # Replaying the finished sensor run's config commits nothing.
    watermark = feeder.meta(JOB).watermark_us()
    commits = len(feeder.meta(JOB).commits())
    replay = subprocess.run(
        materialize_cmd(sensor_config),
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert replay.returncode == 0, replay.stderr[-3000:]
    assert feeder.meta(JOB).watermark_us() == watermark
    assert len(feeder.meta(JOB).commits()) == commits

    # Drain and compare with the batch oracle: no window counted twice.
    resolved = resolve_run(JOBS[JOB], [], None, feeder.meta)
    if not resolved.nothing_to_do:
        JobRunner(spark, lakehouse.table_uri).run(JOBS[JOB], resolved)
    expected = batch_recompute(spark, lakehouse.table_uri, tmp_path / "oracle")
    missing, extra, examples = differences(spark, expected[JOB], lakehouse.table_uri(JOB))
    assert (missing, extra) == (0, 0), f"{JOB} differs: {examples}"


MIDDLE = "market_features"  # a step of the chain with steps before and after it


def test_hand_materialize_beside_a_chain(spark, spark_service, lakehouse: Settings, tmp_path: Path):
    """The sensor's chained run (its exact run config: every step's part of the plan) and,
    while it works on its first steps, a hand `dagster asset materialize` of a table in the
    middle of the chain: the table's pool lets one step write at a time, whichever comes
    second plans from the watermark the first committed (a chain's descendant step resolves
    its input when its turn comes) or finds nothing left, and after a drain all six equal
    the batch oracle."""
    feeder, runner, home, env = prepared(
        spark, lakehouse, tmp_path, spark_service.url, 22, list(JOBS)
    )
    # The aggregates move ahead of market_features, and two more seconds land: the chain
    # has work at every step, and a hand run of market_features has work at once.
    for job in ("trade_aggr", "price_aggr"):
        runner.run(JOBS[job], resolve_run(JOBS[job], [], None, feeder.meta))
    feeder.land(2)
    feeder.ingest()

    with dg.DagsterInstance.from_config(str(home)) as instance:
        _, requests = evaluate_tick(
            HudiMetadataResource.for_settings(load_settings()),
            instance,
            SchedulerSettings(k=1),
            int(time.time() * 1e6),
        )
    (chain,) = requests
    steps = [key.to_user_string() for key in chain.asset_selection or ()]
    assert MIDDLE in steps and steps.index(MIDDLE) > 0 and steps[-1] != MIDDLE, steps
    commands = {
        "chain": materialize_cmd(chain.run_config, select=",".join(steps)),
        "hand": materialize_cmd(select=MIDDLE),
    }
    procs = {}
    for name in ("chain", "hand"):
        log = (tmp_path / f"{name}.log").open("wb")
        procs[name] = subprocess.Popen(
            commands[name], env=env, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT
        )
        time.sleep(4)  # the chain starts first; the hand run comes while it works
    for name, proc in procs.items():
        assert proc.wait(timeout=600) == 0, (tmp_path / f"{name}.log").read_text()[-4000:]

    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = {
            "chain" if len(r.asset_selection or ()) > 1 else "hand": r.run_id
            for r in instance.get_runs()
        }
        assert set(runs) == {"chain", "hand"}
        spans = {name: step_interval(instance, run_id, MIDDLE) for name, run_id in runs.items()}
        first, second = sorted(spans, key=lambda name: spans[name][0])
        # One writer at a time: the second step started after the first one ended.
        assert spans[second][0] >= spans[first][1], spans
        meta = {name: materialization_of(instance, run_id, MIDDLE) for name, run_id in runs.items()}
        # every other step of the chain committed in it
        for step in steps:
            done = instance.fetch_materializations(dg.AssetKey(step), limit=20).records
            assert any(r.run_id == runs["chain"] for r in done), step
    # The first committed; the second planned from the watermark it committed (and ran,
    # or found nothing left: the first may have taken everything its inputs then held).
    assert "t_done_after" in meta[first], meta[first]
    assert meta[second]["t_done_before"].value == meta[first]["t_done_after"].value

    # Drain and compare all six with the batch oracle: no window counted twice or lost.
    for spec in JOBS.values():
        resolved = resolve_run(spec, [], None, feeder.meta)
        if not resolved.nothing_to_do:
            runner.run(spec, resolved)
    expected = batch_recompute(spark, lakehouse.table_uri, tmp_path / "oracle")
    for job in JOBS:
        missing, extra, examples = differences(spark, expected[job], lakehouse.table_uri(job))
        assert (missing, extra) == (0, 0), f"{job} differs: {examples}"
