"""A few of the wide lakehouse's generated jobs on real Hudi and Spark: the short pipelines
straight off the raw tables (a trade aggregate, its per-minute rollup, a quote aggregate),
run incrementally over two landings, equal to their batch recomputation."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.experiment.wide import wide_jobs, write_wide
from freshness_pipeline.ingestion.feeder import StreamFeeder
from freshness_pipeline.jobs.batch_oracle import batch_recompute, differences
from freshness_pipeline.jobs.run_config import resolve_run
from freshness_pipeline.jobs.runner import JobRunner

pytestmark = pytest.mark.spark


def test_wide_jobs_off_the_raw_tables_equal_their_batch(lakehouse, spark, tmp_path: Path):
    folder = tmp_path / "wide"
    write_wide(folder, 1)
    every = wide_jobs(folder)
    minute = next(n for n in every if n.startswith("trades_") and n.endswith("_minute"))
    trades = every[minute].inputs[0]
    quotes = next(n for n in every if n.startswith("quotes_"))
    jobs = {n: every[n] for n in every if n in (trades, minute, quotes)}  # dependency order
    assert list(jobs).index(trades) < list(jobs).index(minute)
    settings = load_settings()
    lake = settings.lakehouse
    feeder = StreamFeeder(spark, settings, seed=3)
    runner = JobRunner(spark, lake)
    runs = 0
    for _ in range(2):  # two landings, each run reads only what is new to it
        feeder.land(3)
        feeder.ingest()
        for spec in jobs.values():
            resolved = resolve_run(spec, [], None, lake.metadata)
            if not resolved.nothing_to_do:
                runner.run(spec, resolved)
                runs += 1
    assert runs == 2 * len(jobs)
    expected = batch_recompute(spark, lake.table_uri, tmp_path / "batch", lake.metadata, jobs=jobs)
    for name in jobs:
        missing, extra, examples = differences(spark, expected[name], lake.table_uri(name))
        assert missing == extra == 0, (name, missing, extra, examples)
        assert expected[name].count() > 0, name
