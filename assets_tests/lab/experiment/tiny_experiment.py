"""The experiment command on the tests' tiny configuration (300 events/s over 300
companies, a 5 s tick), run as a user runs it, and what it left behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.lab.experiment.run_files import SUMMARY_FILE, RunSummary, read_summary


def run_tiny_experiment(
    tmp_path: Path, variants: str, duration_s: int, *flags: str
) -> tuple[subprocess.CompletedProcess, Path, Path, dict[str, RunSummary]]:
    """(the finished command, its raw output folder, its report folder, each variant's
    summary of seed 1); fails the test with the command's stderr if it did not succeed."""
    out, report = tmp_path / "raw", tmp_path / "report"
    command = [sys.executable, "-m", "freshness_pipeline.cli", "experiment"]
    command += ["--variants", variants, "--duration", str(duration_s)]
    command += ["--rate", "300", "--universe-size", "300", "--tick", "5"]
    # A run still in flight 30 s after the window is cut off (counted apart from the
    # variant's failures, `runs_cut_off_at_stop`): the tests assert nothing of it, and the
    # default drain (240 s, for a campaign's long chains) was most of each stop in CI.
    command += ["--drain", "30"]
    command += ["--out", str(out), "--report-dir", str(report), *flags]
    run = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=1500)
    assert run.returncode == 0, run.stderr[-4000:]
    summaries = {}
    for path in out.glob(f"seed1/*/{SUMMARY_FILE}"):
        summary = read_summary(path.parent)
        summaries[summary.variant] = summary
    return run, out, report, summaries
