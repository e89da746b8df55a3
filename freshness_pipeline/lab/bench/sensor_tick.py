"""Sensor tick time with 6 jobs and 5,000 pending files (planner + sensor adapter).

    freshness lab sensor-tick [--files 5000] [--repeats 20]
    freshness lab sensor-tick --real-files 5000

The first form builds in-memory metadata for the six jobs (pending files spread over the
jobs, each with a pending arrival range) and times `evaluate_tick` (cost-model fits from an
empty history, job states, PMB plan, RunRequests) against an ephemeral Dagster instance.

`--real-files N` builds a real lakehouse with Spark (all six tables written once, then raw
commits until at least N files are pending) and times whole ticks on it with the real
metadata resource, each in a new process: the first tick there is cold (empty caches,
hudi-rs parses every commit, pyarrow reads every footer), the following ones warm.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from freshness_pipeline.config.settings import Settings, child_environment
from freshness_pipeline.hudi.metadata import PendingFile
from freshness_pipeline.hudi.timeline import FileSlice
from freshness_pipeline.lab.bench.common import scratch
from freshness_pipeline.scheduling.units import US_PER_S


class _Table:
    def __init__(self, name: str, watermark: int, files: list[PendingFile]) -> None:
        self.name, self.watermark, self.files = name, watermark, files

    def watermark_us(self) -> int:
        return self.watermark

    def pending_files(self, t_done, with_footer=False):
        floor = -1 if t_done is None else t_done
        return [f for f in self.files if f.pending_max_us > floor]


def _tick_times(settings: Settings, ticks: int) -> dict[str, Any]:
    """Times `ticks` ticks in a new process on the real lakehouse (first one cold): the
    probe's `times`, `pending` files and `launches`."""
    import json
    import subprocess

    env = child_environment(settings)
    probe = [
        sys.executable,
        "-m",
        "freshness_pipeline.cli",
        "lab",
        "sensor-tick",
        "--tick-probe",
        str(ticks),
    ]
    out = subprocess.run(probe, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def fill_history(instance, jobs: list[str], per_job: int) -> None:
    """`per_job` finished sensor runs and materializations of each job, as hours of a
    deployment leave them (what a tick reads: each job's newest 40 materializations and
    the newest 20 finished runs per job): each run tagged with its job, each
    materialization with the metadata the sensor reads (a cost sample and the run's
    phases)."""
    import dagster as dg
    from dagster._core.utils import make_new_run_id

    from freshness_pipeline.scheduling.run_plan import ASSET_TAG

    for i in range(per_job):
        for job in jobs:
            instance.add_run(
                dg.DagsterRun(
                    job_name="__ASSET_JOB",
                    run_id=make_new_run_id(),
                    status=dg.DagsterRunStatus.SUCCESS,
                    tags={ASSET_TAG: job},
                )
            )
            metadata = {
                "duration_s": 4.0 + (i % 5) * 0.5,
                "bytes_read": 1_000_000 + i * 1_000,
                "files_read": 26,
                "phase_launch_s": 1.0,
                "phase_plan_s": 0.05,
                "phase_session_s": 0.03,
            }
            instance.report_runless_asset_event(dg.AssetMaterialization(job, metadata=metadata))


def tick_probe(settings: Settings, ticks: int, history: int = 0) -> int:
    """`ticks` ticks of the real sensor code on the settings' lakehouse, timed in this
    process (the first one cold): a JSON line for `_tick_times`. With `history`, the
    instance first holds that many past runs and materializations of each job
    (`fill_history`); otherwise it is empty."""
    import json

    import dagster as dg

    from freshness_pipeline.config.scheduler_settings import SchedulerSettings
    from freshness_pipeline.orchestration.resources import HudiMetadataResource
    from freshness_pipeline.orchestration.sensor import evaluate_tick

    hudi_meta = HudiMetadataResource.for_settings(settings)
    times = []
    with dg.instance_for_test() as instance:
        fill_history(instance, list(settings.jobs), history)
        for _ in range(ticks):
            started = time.perf_counter()
            result, requests = evaluate_tick(
                hudi_meta,
                instance,
                SchedulerSettings(),
                int(time.time() * US_PER_S),
                settings.jobs.values(),  # FRESHNESS_JOBS: the bundled six by default
            )
            times.append(time.perf_counter() - started)
    pending = sum(c.pending_files for c in result.ranked)
    print(json.dumps({"times": times, "pending": pending, "launches": len(requests)}))
    return 0


def real_lakehouse(settings: Settings, files: int, ticks: int) -> int:

    from freshness_pipeline.catalog.jobs import JOBS, PIPELINE_ORDER
    from freshness_pipeline.execution.run_config import resolve_run
    from freshness_pipeline.execution.runner import JobRunner
    from freshness_pipeline.hudi.metadata import HudiTableMetadata
    from freshness_pipeline.ingestion.feeder import StreamFeeder
    from freshness_pipeline.runtime.spark import build_spark_session
    from freshness_pipeline.stream.universe import DEFAULT_UNIVERSE_SIZE

    root, where = scratch("bench_tick_")
    settings = settings.changed(where)
    spark = build_spark_session(settings, app_name="bench_tick", remote="")
    feeder = StreamFeeder(spark, settings, seed=7, rate=2000, universe=DEFAULT_UNIVERSE_SIZE)
    feeder.land(2)
    feeder.ingest()
    runner = JobRunner(spark, settings.table_uri)
    for job in PIPELINE_ORDER:  # every table exists and has a watermark
        runner.run(JOBS[job], resolve_run(JOBS[job], [], None, feeder.meta))
    started = time.monotonic()

    def pending() -> int:
        return sum(
            len(
                HudiTableMetadata(settings.lakehouse.table(t)).pending_files(
                    HudiTableMetadata(settings.lakehouse.table(j)).watermark_us()
                )
            )
            for j, t in (("trade_aggr", "trade_raw"), ("price_aggr", "price_raw"))
        )

    while (count := pending()) < files:
        feeder.land(2)
        feeder.ingest()
    print(f"built {root}: {count} pending raw files in {time.monotonic() - started:.0f} s")
    spark.stop()
    runs = [_tick_times(settings, ticks) for _ in range(3)]
    cold = [r["times"][0] for r in runs]
    warm = [t for r in runs for t in r["times"][1:]]
    print(
        f"tick on a real lakehouse ({len(JOBS)} jobs, {runs[0]['pending']} pending files, "
        f"{runs[0]['launches']} run requests), {len(runs)} new processes x {ticks} ticks:\n"
        f"  cold (first tick of a process): median {statistics.median(cold) * 1000:.0f} ms "
        f"({', '.join(f'{c * 1000:.0f}' for c in cold)})\n"
        f"  warm (caches filled, no new commit): median {statistics.median(warm) * 1000:.0f} "
        f"ms, max {max(warm) * 1000:.0f} ms"
    )
    return 0


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab sensor-tick", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--real", help="also time metadata reads of a real lakehouse root")
    parser.add_argument("--real-files", type=int, help="build a real lakehouse (see above)")
    parser.add_argument("--ticks", type=int, default=6, help="ticks per process (--real-files)")
    parser.add_argument(
        "--tick-probe", type=int, help="time this many ticks on FRESHNESS_LAKEHOUSE (a JSON line)"
    )
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        help="with --tick-probe: past runs and materializations of each job in the "
        "instance first (a deployment's steady state: 40 or more)",
    )
    args = parser.parse_args(argv)
    if args.tick_probe:
        return tick_probe(settings, args.tick_probe, args.history)
    if args.real_files:
        return real_lakehouse(settings, args.real_files, args.ticks)

    import dagster as dg

    from freshness_pipeline.catalog.jobs import JOBS
    from freshness_pipeline.config.scheduler_settings import SchedulerSettings
    from freshness_pipeline.orchestration.resources import HudiMetadataResource
    from freshness_pipeline.orchestration.sensor import evaluate_tick

    t0 = 1_700_000_000 * US_PER_S
    input_tables = sorted({t for spec in JOBS.values() for t in spec.inputs})
    per_table = args.files // len(input_tables)
    tables = {}
    for n, name in enumerate(input_tables):
        files = []
        for i in range(per_table):
            lo = t0 + i * US_PER_S // 4
            fs = FileSlice(chr(65 + i % 26), f"{name}-{i}", f"{name}/{i}.parquet", 4 << 20, "1")
            files.append(
                PendingFile(fs, f"/lake/{name}/{i}.parquet", lo, lo + 5 * US_PER_S, ("1",))
            )
        tables[name] = _Table(name, t0 + per_table * US_PER_S // 4 + 5 * US_PER_S + n, files)
    tables["company_master"] = _Table("company_master", 0, [])

    from freshness_pipeline.hudi.metadata import TableNotFound

    class Lake(HudiMetadataResource):
        def table(self, table: str):
            if table not in tables:  # sector_vwap and industry_spike: not written yet
                raise TableNotFound(table)
            return tables[table]

    lake = Lake()
    scheduler = SchedulerSettings()
    timings = []
    with dg.instance_for_test() as instance:
        for _ in range(args.repeats):
            started = time.perf_counter()
            result, requests = evaluate_tick(lake, instance, scheduler, now_us=t0 + 10**9)
            timings.append(time.perf_counter() - started)
    pending = sum(len(t.files) for t in tables.values())
    print(
        f"tick (planner + adapter, in-memory metadata): {len(JOBS)} jobs, {pending} pending "
        f"files, {len(requests)} run requests: median {statistics.median(timings) * 1000:.1f} "
        f"ms, max {max(timings) * 1000:.1f} ms over {args.repeats} ticks"
    )
    if args.real:
        from freshness_pipeline.hudi.lakehouse import Lakehouse
        from freshness_pipeline.hudi.metadata import HudiTableMetadata

        for name in [*input_tables, *JOBS]:
            uri = Lakehouse.parse(args.real).table(name)
            times = []
            for _ in range(3):
                started = time.perf_counter()
                meta = HudiTableMetadata(uri)
                count = len(meta.pending_files(None, with_footer=True))
                meta.watermark_us()
                times.append(time.perf_counter() - started)
            print(
                f"  {name}: {count} pending files; read {times[0] * 1000:.0f} ms cold, "
                f"{statistics.median(times[1:]) * 1000:.0f} ms warm (footer cache)"
            )
    return 0
