"""A stale plan never commits: two runs planned from the same watermark, the
second one to reach its commit is refused by Hudi under the table lock, and the table
still equals the oracle; a replayed finished config is refused before Spark starts."""

from __future__ import annotations

import pytest

from assets_tests.execution.oracle import ORDER, batch_recompute, differences
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.execution import oracle as independent_oracle
from freshness_pipeline.execution.run_config import RunConfigError, resolve_run
from freshness_pipeline.execution.runner import InjectedFailure, JobRunner, StalePlan
from freshness_pipeline.ingestion.feeder import StreamFeeder

pytestmark = pytest.mark.spark


def test_second_run_from_the_same_watermark_is_refused(spark, lakehouse, tmp_path):
    feeder = StreamFeeder(spark, lakehouse, seed=5)
    runner = JobRunner(spark, lakehouse.table_uri)
    feeder.land(2)
    feeder.ingest()
    spec = JOBS["trade_aggr"]
    runner.run(spec, resolve_run(spec, [], None, feeder.meta))  # t_done exists from here
    feeder.land(2)
    feeder.ingest()
    # Both plan from the same t_done, as a hand materialize beside a sensor run did.
    first = resolve_run(spec, [], None, feeder.meta)
    second = resolve_run(spec, [], None, feeder.meta)
    assert first.t_done_us == second.t_done_us and not first.nothing_to_do
    runner.run(spec, first)
    watermark = feeder.meta(spec.name).watermark_us()
    commits = len(feeder.meta(spec.name).commits())
    with pytest.raises(StalePlan, match="STALE_PLAN"):
        runner.run(spec, second)
    assert feeder.meta(spec.name).watermark_us() == watermark
    assert len(feeder.meta(spec.name).commits()) == commits  # nothing committed
    # The same finished config replayed: refused before Spark, it would not move t_done.
    with pytest.raises(RunConfigError, match="at or below"):
        resolve_run(spec, [], first.cutoff_us, feeder.meta)

    # A plan from an older watermark than the one committed since is refused too, even
    # when its cutoff is newer (it would re-add the window the other run committed).
    feeder.land(1)
    feeder.ingest()
    stale = resolve_run(spec, [], None, feeder.meta)
    runner.run(spec, resolve_run(spec, [], stale.cutoff_us - 1, feeder.meta))
    with pytest.raises(StalePlan):
        runner.run(spec, stale)
    # Drain everything and compare with the batch oracle: no window counted twice.
    for job in ORDER:
        resolved = resolve_run(JOBS[job], [], None, feeder.meta)
        if not resolved.nothing_to_do:
            runner.run(JOBS[job], resolved)
    expected = batch_recompute(spark, lakehouse.table_uri, tmp_path / "oracle")
    for job in ORDER:
        missing, extra, examples = differences(spark, expected[job], lakehouse.table_uri(job))
        assert (missing, extra) == (0, 0), f"{job} differs: {examples}"
    for difference in independent_oracle.check_lakehouse(lakehouse.lakehouse.table):
        assert difference.equal, difference


def test_a_failed_first_run_leaves_nothing_behind(spark, lakehouse, tmp_path):
    """Under optimistic concurrency failed writes are rolled back lazily; a table's first
    run failing must not leave rows that Hudi later reads as committed."""
    feeder = StreamFeeder(spark, lakehouse, seed=6)
    runner = JobRunner(spark, lakehouse.table_uri)
    feeder.land(2)
    feeder.ingest()
    spec = JOBS["trade_aggr"]
    with pytest.raises(InjectedFailure):
        runner.run(spec, resolve_run(spec, [], None, feeder.meta), fail_before_commit=True)
    assert feeder.meta(spec.name).watermark_us() is None
    runner.run(spec, resolve_run(spec, [], None, feeder.meta))
    feeder.land(1)
    feeder.ingest()
    runner.run(spec, resolve_run(spec, [], None, feeder.meta))
    expected = batch_recompute(spark, lakehouse.table_uri, tmp_path / "oracle")
    missing, extra, examples = differences(
        spark, expected[spec.name], lakehouse.table_uri(spec.name)
    )
    assert (missing, extra) == (0, 0), f"trade_aggr differs: {examples}"


def test_a_table_whose_empty_first_commit_never_completed_starts_afresh(spark, lakehouse, tmp_path):
    """A run killed during the table's empty first commit, then a run killed before its
    data commit: no commit ever completed, and the next run must not read the failed
    write's files as committed (make chaos found sector_vwap's first second twice)."""
    feeder = StreamFeeder(spark, lakehouse, seed=8)
    runner = JobRunner(spark, lakehouse.table_uri)
    feeder.land(2)
    feeder.ingest()
    spec = JOBS["trade_aggr"]
    # Killed earlier still, while Hudi created the table: `.hoodie/` without its
    # properties (make chaos: Hudi then refused every write of industry_spike).
    hoodie = lakehouse.lakehouse.table(spec.name).local_path() / ".hoodie"
    for folder in (".aux", ".schema", ".temp", "timeline"):
        (hoodie / folder).mkdir(parents=True)
    with pytest.raises(InjectedFailure):
        runner.run(spec, resolve_run(spec, [], None, feeder.meta), fail_before_commit=True)
    timeline = lakehouse.lakehouse.table(spec.name).local_path() / ".hoodie" / "timeline"
    completed = [p for p in timeline.iterdir() if p.name.endswith(".commit") and "_" in p.name]
    assert len(completed) == 1  # the empty commit; as if killed before it completed:
    completed[0].unlink()
    assert feeder.meta(spec.name).commits() == []
    runner.run(spec, resolve_run(spec, [], None, feeder.meta))
    expected = batch_recompute(spark, lakehouse.table_uri, tmp_path / "oracle")
    missing, extra, examples = differences(
        spark, expected[spec.name], lakehouse.table_uri(spec.name)
    )
    assert (missing, extra) == (0, 0), f"trade_aggr differs: {examples}"
