"""The plain Dagster peer as an experiment variant, end to end on the tests' tiny
configuration: its own code location under the real daemon, no Spark service, the stream
on the wall clock, Dagster's eager automation launching its runs, each run's own Spark
counted apart in the machine's budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets_tests.lab.experiment.tiny_experiment import run_tiny_experiment
from freshness_pipeline.lab.experiment.machine_budget import RUN_SPARK
from freshness_pipeline.lab.experiment.run_files import read_runs

pytestmark = pytest.mark.spark
WINDOW_S = 60


def test_the_plain_peer_runs_as_a_variant_of_the_experiment(tmp_path: Path):
    _, out, report, summaries = run_tiny_experiment(tmp_path, "dagster_plain", WINDOW_S)
    summary = summaries["dagster_plain"]
    assert 6 * (WINDOW_S - 5) <= summary.samples <= 6 * (WINDOW_S + 5)
    assert summary.P > 0 and summary.P0 > 0
    assert summary.runs_failed == summary.runs_cut_off_at_stop, summary
    assert summary.job_refreshes >= 1, summary  # a commit with its watermark, sampled
    budget = summary.cpu_by_kind_s or {}
    assert budget.get(RUN_SPARK, 0) > 0, budget  # each run started its own Spark
    assert "Spark service" not in budget, budget
    runs = read_runs(out / "seed1" / "dagster_plain")
    assert runs and {r.launched_by for r in runs} == {"plain_automation"}, runs
    assert {a for r in runs for a in r.assets} <= set(summary.jobs)
    hours = {m["hour"] for r in runs for m in r.metadata_by_asset.values()}
    assert len(hours) in (1, 2), hours  # the wall clock's hour (two across its end)
    assert "| dagster_plain |" in (report / "REPORT.md").read_text()
