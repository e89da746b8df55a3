"""The correctness oracle as a seeded property test: random sequences of runs with random
subsets and cutoffs, empty runs, interleaved ingestion, and runs that fail after writing
their files but before committing (then retried). After draining, each of the six tables
equals a batch recomputation of its SQL over all raw data."""

from __future__ import annotations

import dataclasses
import random

import pytest

from assets_tests.execution.conftest import StreamFeeder
from assets_tests.execution.oracle import ORDER, batch_recompute, differences
from freshness_pipeline.catalog.jobs import JOBS, laid_out
from freshness_pipeline.execution import oracle as independent_oracle
from freshness_pipeline.execution.handoff import HANDOFF_PREFIX, Handoffs
from freshness_pipeline.execution.run_config import RunConfigError, resolve_run
from freshness_pipeline.execution.runner import InjectedFailure, JobRunner
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.lab.bench.memory import class_histogram, parse_class_histogram

pytestmark = pytest.mark.spark

CACHED_DATA = "org.apache.spark.sql.execution.CachedData"  # one per entry in Spark's cache


def watermark(feeder: StreamFeeder, table: str) -> int | None:
    try:
        return feeder.meta(table).watermark_us()
    except TableNotFound:
        return None


def _has_work(feeder: StreamFeeder, job: str) -> bool:
    try:
        return not resolve_run(JOBS[job], [], None, feeder.meta).nothing_to_do
    except RunConfigError:
        return False  # an input does not exist yet


def random_config(rng: random.Random, feeder: StreamFeeder, job: str):
    """A closed random selection: a random candidate cutoff u, every pending file that may
    hold arrivals <= u, plus some random extra pending files (which add nothing)."""
    spec = JOBS[job]
    full = resolve_run(spec, [], None, feeder.meta)
    if full.nothing_to_do:
        return None
    pending = [p for t in spec.inputs for p in feeder.meta(t).pending_files(full.t_done_us)]
    candidates = sorted({min(p.pending_max_us, full.cap_us) for p in pending} | {full.cap_us})
    candidates = [u for u in candidates if full.t_done_us is None or u > full.t_done_us]
    u = rng.choice(candidates)
    files = [p.uri for p in pending if p.pending_min_us <= u]
    extra = [p.uri for p in pending if p.pending_min_us > u]
    files += rng.sample(extra, k=rng.randint(0, len(extra)))
    rng.shuffle(files)
    return files, u


def _temp_views(spark) -> list[str]:
    # Hudi's SQL pre-commit validator, used here only to inject failures, registers its
    # own `staged_table_*` views; the runner's are the rest, but for the results kept for
    # later runs (a run of the runner's would drop those at its end).
    return [
        t.name
        for t in spark.catalog.listTables()
        if t.isTemporary and not t.name.startswith(("staged_table_", HANDOFF_PREFIX))
    ]


SEED = 12


def test_oracle_holds_under_random_schedules(request, lakehouse, tmp_path):
    """Through the shared Spark service (Spark Connect), with the raw tables packed
    (FRESHNESS_RAW_PACKING) and the jobs' published layout: the thesis's regime whole. A
    pending raw file then also holds rows the jobs have already read, which the arrival
    filter must leave out. (Runs on a local Spark session are in jobs/test_run_config,
    test_stale_plan, test_rebuild and experiment/test_wide_spark; a second seeded run on
    one, unpacked, took three minutes of CI and found nothing this one misses.)"""
    spark = request.getfixturevalue("connect_spark")
    seed = SEED
    rng = random.Random(seed)
    lakehouse = dataclasses.replace(lakehouse, raw_packing=True)
    jobs = laid_out(JOBS, "published")
    feeder = StreamFeeder(spark, lakehouse, seed=seed)
    # Every committed result is kept, as in one long run: a later run whose window over a
    # table is exactly a kept one reads it from memory (execution/handoff.py), the rest from Hudi.
    handoffs = Handoffs()
    runner = JobRunner(spark, lakehouse.table_uri, handoffs=handoffs)
    log = []
    feeder.land(3)
    feeder.ingest()
    # Every kind of step at least twice, then random ones, in a seeded random order.
    kinds_of_step = ["ingest", "full", "subset", "fail", "partial_ingest", "empty"]
    steps = kinds_of_step * 2 + rng.choices(kinds_of_step, weights=[2, 3, 4, 2, 1, 1], k=4)
    rng.shuffle(steps)
    for action in steps:
        if action in ("ingest", "partial_ingest"):
            feeder.land(rng.randint(1, 3))
            feeder.ingest(
                ("price", "trade") if action == "ingest" else (rng.choice(["price", "trade"]),)
            )
            log.append(action)
            continue
        runnable = [j for j in ORDER if _has_work(feeder, j)]
        if action == "empty":
            runnable = [j for j in runnable if watermark(feeder, j) is not None]
        if not runnable:
            log.append(f"{action}: no job has work")
            continue
        job = rng.choice(runnable)
        spec = jobs[job]
        try:
            if action == "full":
                resolved = resolve_run(spec, [], None, feeder.meta)
            elif action == "empty":
                # one microsecond past t_done: no input rows, yet the watermark moves
                t_done = watermark(feeder, job)
                if t_done is None or resolve_run(spec, [], None, feeder.meta).nothing_to_do:
                    log.append(f"{job}: no room for an empty run")
                    continue
                resolved = resolve_run(spec, [], t_done + 1, feeder.meta)
                assert resolved.file_count == 0 or all(
                    p.pending_min_us <= t_done + 1 for v in resolved.files.values() for p in v
                )
            else:
                picked = random_config(rng, feeder, job)
                if picked is None:
                    log.append(f"{job}: nothing pending")
                    continue
                resolved = resolve_run(spec, picked[0], picked[1], feeder.meta)
        except RunConfigError as exc:
            # only inputs that do not exist yet may refuse a well-formed config here
            assert "does not exist" in str(exc) or "no watermark" in str(exc), exc
            log.append(f"{job}: {exc}")
            continue
        if resolved.nothing_to_do:
            log.append(f"{job}: nothing to do")
            continue
        if action == "fail":
            before = watermark(feeder, job)
            with pytest.raises(InjectedFailure):
                runner.run(spec, resolved, fail_before_commit=True)
            assert _temp_views(spark) == [], "a failed run left its views in the session"
            assert watermark(feeder, job) == before  # the failed run changed nothing
            resolved = resolve_run(
                spec,
                [p.uri for v in resolved.files.values() for p in v],
                resolved.cutoff_us,
                feeder.meta,
            )
        report = runner.run(spec, resolved, keep_result=True)
        assert watermark(feeder, job) == resolved.cutoff_us
        # Each round trip to the service counted; the write is one.
        assert report.connect_calls["read"] > 0 and report.connect_call_s > 0, report
        assert "command:write_operation" in report.connect_by_kind, report.connect_by_kind
        # A shared service keeps the session after the run: nothing of the run stays in it
        # (the views go in the background, once the run has committed).
        runner.wait_for_release()
        assert _temp_views(spark) == [], job
        memory = f", from memory: {report.inputs_in_memory}" if report.inputs_in_memory else ""
        log.append(f"{action} {job}: {report.files_read} files, u={resolved.cutoff_us}{memory}")

    kinds = {entry.split()[0] for entry in log}
    assert {"ingest", "full", "subset", "fail", "empty"} <= kinds, log
    # Packing rewrote files: a raw table's latest files hold several commits' rows.
    groups = feeder.meta("trade_raw").latest_file_slices()
    assert len(groups) <= 26, len(groups)  # at most one file per symbol partition

    # Drain: the last landed second reaches both raw tables with the same arrival stamp.
    feeder.land(2)
    feeder.ingest()
    final = watermark(feeder, "trade_raw")
    assert final == watermark(feeder, "price_raw")
    for job in ORDER:
        resolved = resolve_run(jobs[job], [], None, feeder.meta)
        assert not resolved.nothing_to_do
        runner.run(jobs[job], resolved, keep_result=True)
        assert watermark(feeder, job) == final, job
    # Once more, every table caught up: each job's window over its parents is exactly
    # the parents' last runs, so every input that is a job's table is read from memory.
    feeder.land(2)
    feeder.ingest()
    final = watermark(feeder, "trade_raw")
    for job in ORDER:
        resolved = resolve_run(jobs[job], [], None, feeder.meta)
        report = runner.run(jobs[job], resolved, keep_result=True)
        assert watermark(feeder, job) == final, job
        jobs_read = tuple(t for t in JOBS[job].inputs if t in JOBS)
        assert report.inputs_in_memory == jobs_read, (job, report.inputs_in_memory)
    # (listing the session's views while the last run's are dropped would race)
    runner.wait_for_release()
    assert {t.name for t in spark.catalog.listTables() if t.isTemporary} >= {
        f"{HANDOFF_PREFIX}{job}" for job in ORDER if any(job in JOBS[j].inputs for j in ORDER)
    }
    handoffs.release(spark)
    runner.wait_for_release()
    assert _temp_views(spark) == [] and not [
        t for t in spark.catalog.listTables() if t.name.startswith(HANDOFF_PREFIX)
    ]
    # The service's cache is shared by all sessions and outlives them: no run may
    # leave an entry in it (`df.cache()` through Connect left one per SQL with a CTE).
    service = request.getfixturevalue("spark_service")
    histogram = class_histogram(service.process.pid)
    assert histogram is not None, "no JVM found under the Spark service"
    cached = parse_class_histogram(histogram).get(CACHED_DATA, (0, 0))[0]
    assert cached == 0, f"{cached} cache entries left in the Spark service"

    expected = batch_recompute(spark, lakehouse.table_uri, tmp_path / "oracle", jobs=jobs)
    for job in ORDER:
        missing, extra, examples = differences(spark, expected[job], lakehouse.table_uri(job))
        assert (missing, extra) == (0, 0), f"{job} differs: {examples}\nschedule: {log}"
    # And the independent oracle (pandas from the column definitions, not the SQL).
    for difference in independent_oracle.check_lakehouse(lakehouse.lakehouse.table):
        assert difference.equal, f"{difference}\nschedule: {log}"

    # Repeating runs changes nothing: a plain run finds nothing to do, and the same
    # explicit cutoff is refused because it no longer moves the watermark.
    for job in ORDER:
        again = resolve_run(jobs[job], [], None, feeder.meta)
        assert again.nothing_to_do, job
        with pytest.raises(RunConfigError, match="at or below"):
            resolve_run(jobs[job], [], final, feeder.meta)
    for job in ORDER:
        missing, extra, _ = differences(spark, expected[job], lakehouse.table_uri(job))
        assert (missing, extra) == (0, 0)
