"""The run-overhead bench's sides each run their own code: the `against` side's session
probe imports the checkout its PYTHONPATH names, not the one the bench runs from."""

from __future__ import annotations

import os
from pathlib import Path

from freshness_pipeline.lab.bench import run_overhead


def test_the_session_probe_runs_the_code_its_pythonpath_names(tmp_path: Path, monkeypatch):
    other = tmp_path / "other_checkout" / "freshness_pipeline"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    marker = tmp_path / "ran_the_other_code"
    (other / "cli.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('yes')\nprint(1.0)\n"
    )
    neutral = tmp_path / "home"
    neutral.mkdir()
    env = {**os.environ, "PYTHONPATH": str(other.parent)}
    # run from the checkout, as `freshness lab run-overhead` is: the probe's cwd is its own
    monkeypatch.chdir(Path(run_overhead.__file__).parents[3])
    seconds = run_overhead._session_seconds(env, neutral)
    assert marker.read_text() == "yes" and seconds > 0
