"""Which commit is running, as reports name it."""

from __future__ import annotations

import subprocess

from freshness_pipeline.lab.experiment.report import _commit_row
from freshness_pipeline.runtime.code_version import UNKNOWN, code_version


def _git(repo, *args):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_commit_and_whether_the_checkout_differs_from_it(tmp_path):
    assert code_version(tmp_path) == UNKNOWN  # not a git checkout
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.txt").write_text("one")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "one")
    head = code_version(tmp_path)
    assert len(head) == 7 and "+" not in head
    (tmp_path / "a.txt").write_text("two")
    assert code_version(tmp_path) == f"{head}+changes"
    (tmp_path / "b.txt").write_text("untracked files do not count")
    (tmp_path / "a.txt").write_text("one")
    assert code_version(tmp_path) == head


def test_a_report_names_its_commit_and_says_when_runs_of_several_are_pooled():
    from freshness_pipeline.lab.experiment.run_files import RunSummary

    same = [RunSummary("pmb", commit="abc1234"), RunSummary("random", commit="abc1234")]
    assert _commit_row({}, same) == "- Code: every run on commit `abc1234`."
    runs = [RunSummary("a", commit="abc1234"), RunSummary("b", commit="def5678"), RunSummary("c")]
    pooled = _commit_row({}, runs)
    assert "runs of 3 commits pooled" in pooled and "`def5678` (1 runs)" in pooled
