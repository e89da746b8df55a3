"""A small real wide graph: one of each of the wide lakehouse's generated job templates, with
the six market jobs they read, on real Hudi and Spark, run incrementally over two landings
and equal to their batch recomputation."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.execution.batch_oracle import batch_recompute, differences
from freshness_pipeline.execution.run_config import resolve_run
from freshness_pipeline.execution.runner import JobRunner
from freshness_pipeline.ingestion.feeder import StreamFeeder
from freshness_pipeline.lab.experiment.wide import wide_jobs, write_wide

pytestmark = pytest.mark.spark

TEMPLATES = ("sector_", "industry_window_", "symbol_window_", "letter_", "trades_", "quotes_")


def _one_of_each(every: dict) -> set[str]:
    """The first job of each template, the per-minute rollups over a picked one, and the
    six market jobs they read."""
    picked = set(JOBS) | {"sector_vwap_minute", "industry_spike_minute"}
    for prefix in TEMPLATES:
        below = [n for n in every if n.startswith(prefix) and not n.endswith("_minute")]
        rolled = [n for n in below if f"{n}_minute" in every]
        first = (rolled or below)[0]
        picked |= {first, f"{first}_minute"} & set(every)
    return picked


def test_one_of_each_wide_template_equals_its_batch(lakehouse, spark, tmp_path: Path):
    folder = tmp_path / "wide"
    write_wide(folder, 1)
    every = wide_jobs(folder)
    picked = _one_of_each(every)
    jobs = {n: every[n] for n in every if n in picked}  # dependency order
    assert sum(n.endswith("_minute") for n in jobs) >= 3 and len(jobs) >= 15, sorted(jobs)
    settings = load_settings()
    lake = settings.lakehouse
    feeder = StreamFeeder(spark, settings, seed=4)
    runner = JobRunner(spark, lake)
    for _ in range(2):  # two landings: each run reads only what is new to it
        feeder.land(3)
        feeder.ingest()
        for spec in jobs.values():
            resolved = resolve_run(spec, [], None, lake.metadata)
            if not resolved.nothing_to_do:
                runner.run(spec, resolved)
    expected = batch_recompute(spark, lake.table_uri, tmp_path / "batch", lake.metadata, jobs=jobs)
    wrong = []
    for name in jobs:
        missing, extra, examples = differences(spark, expected[name], lake.table_uri(name))
        if missing or extra or expected[name].count() == 0:
            wrong.append((name, missing, extra, examples[:2]))
    assert not wrong, wrong
