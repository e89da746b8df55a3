"""The experiment command end to end on a tiny configuration: two policies replay the same
recorded stream through the whole stack (Spark service, ingestion, Dagster daemon and
sensor), staleness is sampled from the Hudi timelines, and the report is generated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from freshness_pipeline.settings import PROJECT_ROOT

pytestmark = pytest.mark.spark


def test_short_experiment_produces_the_report(tmp_path: Path):
    out, report = tmp_path / "raw", tmp_path / "report"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "freshness_pipeline.cli",
            "experiment",
            "--variants",
            "pmb,random",
            "--duration",
            "75",
            "--rate",
            "300",
            "--universe-size",
            "300",
            "--tick",
            "5",
            "--out",
            str(out),
            "--report-dir",
            str(report),
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    summaries = {
        json.loads(p.read_text())["variant"]: json.loads(p.read_text())
        for p in out.glob("seed1/*/summary.json")
    }
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
