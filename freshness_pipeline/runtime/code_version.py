"""Which commit of this repository is running: reports name it, and an experiment resumed
with --resume keeps only runs of the same code (a report's seeds run on one commit)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from freshness_pipeline.config.paths import PROJECT_ROOT

UNKNOWN = "unknown"


def _git(where: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", where, *args], capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


def code_version(root: Path | None = None) -> str:
    """The checked-out commit's short hash, with `+changes` when tracked files differ from
    it (the runs then measure code no commit holds); `unknown` outside a git checkout."""
    where = str(root or PROJECT_ROOT)
    try:
        head = _git(where, "rev-parse", "--short=7", "HEAD")
        changed = _git(where, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{head}+changes" if changed else head
