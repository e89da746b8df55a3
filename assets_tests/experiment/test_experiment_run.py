"""The experiment command end to end on a tiny configuration: two policies replay the same
recorded stream through the whole stack (Spark service, ingestion, Dagster daemon and
sensor), staleness is sampled from the Hudi timelines, and the report is generated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assets_tests.experiment.tiny_experiment import run_tiny_experiment

pytestmark = pytest.mark.spark


def test_short_experiment_produces_the_report(tmp_path: Path):
    run, out, report, summaries = run_tiny_experiment(tmp_path, "pmb,random", 75)
    assert set(summaries) == {"pmb", "random"}
    for summary in summaries.values():
        # one sample per second per job table over the 75 s window
        assert 6 * 70 <= summary["samples"] <= 6 * 80
        assert 0 < summary["P0"] <= summary["P"]
        assert summary["runs_succeeded"] >= 1, summary
        # the stop drains runs in flight: none fails because the stack stopped under it
        assert summary["runs_failed"] == 0, summary
    # both replayed the same stream file
    streams = list(out.glob("stream-seed1-*.jsonl.gz"))
    assert len(streams) == 1
    text = (report / "REPORT.md").read_text()
    headings = (
        "Total staleness P",
        "Summed staleness over time",
        "marginal benefit",
        "Subset selections",
        "Files written per commit",
        "candidate table",
        "What a run costs",
    )
    for heading in headings:
        assert heading in text
    assert "| pmb |" in text and "| random |" in text and "P(pmb) / P(random)" in text
    for figure in ("staleness_over_time.png", "marginal_benefit.png"):
        assert (report / figure).stat().st_size > 10_000
    results = json.loads((report / "results.json").read_text())
    missed = not all(target["met"] for target in results["targets"].values())
    assert ("Which conditions would change the verdict" in text) == missed
    ratio = results["stats"]["pmb"]["ratio_random"]
    assert ratio == pytest.approx(summaries["pmb"]["P"] / summaries["random"]["P"])
