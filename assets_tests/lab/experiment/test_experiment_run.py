"""The experiment command end to end on a tiny configuration, as a user runs it: PMB (with
chains) and a peer, Dagster's eager automation, replay the same recorded stream through
the whole stack (Spark service, ingestion, Dagster daemon and sensors), staleness is
sampled from the Hudi timelines, and the report is generated. One invocation covers all
of it: each variant costs a stack start and a window on 2 cores, so the other peer (the
interval, one automation switch away: orchestration/test_automation.py) and the long
mode's calibration run (--warm-cost: test_calibration.py) are tested without a stack."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets_tests.lab.experiment.tiny_experiment import run_tiny_experiment
from freshness_pipeline.lab.experiment.run_files import read_runs

pytestmark = pytest.mark.spark
WINDOW_S = 60


def test_short_experiment_with_chains_peers_and_a_warm_start(tmp_path: Path):
    run, out, report, summaries = run_tiny_experiment(tmp_path, "pmb,dagster_eager", WINDOW_S)
    assert set(summaries) == {"pmb", "dagster_eager"}
    for name, summary in summaries.items():
        # one sample per second per job table over the window
        assert 6 * (WINDOW_S - 5) <= summary.samples <= 6 * (WINDOW_S + 5)
        assert summary.P > 0 and summary.P0 > 0
        # the stop drains runs in flight for up to 240 s; a six-step run can outlast that
        # on a loaded machine and is then cut off: the only failures allowed
        assert summary.runs_failed == summary.runs_cut_off_at_stop, summary
        assert summary.job_refreshes >= 1, (name, summary)  # did work, not only no-ops
    # every variant replayed the same stream file (the calibration its own seed's)
    assert len(list(out.glob("stream-seed1-*.jsonl.gz"))) == 1

    pmb_runs = read_runs(out / "seed1" / "pmb")
    sensor_runs = [r for r in pmb_runs if r.launched_by == "freshness_sensor"]
    assert sensor_runs
    # before any run measured L, the sensor plans on its prior (3 s)
    assert any(r.tags["freshness/run_cost_s"] == "3.000" for r in sensor_runs)
    # Whichever runs the sensor chose (one table or a chain: which, and how many fit in
    # the window, is the machine's timing), each selected exactly its planned asset and
    # the steps its chain tag names, and each successful one committed every step.
    for r in sensor_runs:
        chained = r.tags.get("freshness/chained", "")
        steps = {r.tags["freshness/asset"], *filter(None, chained.split(","))}
        assert steps == set(r.assets), r
        if r.status == "SUCCESS":
            assert set(r.metadata_by_asset) == steps, r

    # the peer: launched by Dagster's asset daemon, not ours
    eager = read_runs(out / "seed1" / "dagster_eager")
    assert eager and {r.launched_by for r in eager} == {"eager_automation_sensor"}
    assert {r.tags.get("freshness/automation") for r in eager} == {"dagster_eager"}
    # Dagster's own runs are the market tables, whichever it chose to refresh
    assert {a for r in eager for a in r.assets} <= set(summaries["pmb"].jobs), eager

    text = (report / "REPORT.md").read_text()
    headings = (
        "Total staleness P",
        "Summed staleness over time",
        "marginal benefit",
        "Subset selections",
        "Files written per commit",
        "candidate table",
        "What a run costs",
        "## Beside what a Dagster user would pick",
    )
    for heading in headings:
        assert heading in text
    assert "Cost models: each variant's sensor started from the built-in guess" in text
    # the code each run measured (one commit, unless files changed while it ran)
    assert "- Code: " in text and all(s.commit for s in summaries.values())
    peers = text.split("## Beside what a Dagster user would pick")[1].split("\n## ")[0]
    assert "| pmb |" in peers and "| dagster_eager |" in peers
    for figure in ("staleness_over_time.png", "marginal_benefit.png"):
        assert (report / figure).stat().st_size > 10_000
    # progress as it ran: run n of N, variant, seed, window, elapsed and remaining
    assert f"[experiment 2/2] seed 1, dagster_eager: window 0/{WINDOW_S} s | elapsed" in run.stdout
    assert "remaining about" in run.stdout
