"""Which commit of this repository is running: reports name it, and an experiment resumed
with --resume keeps only runs of the same code (a report's seeds run on one commit)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from freshness_pipeline.config.settings import PROJECT_ROOT

UNKNOWN = "unknown"


def code_version(root: Path | None = None) -> str:
    """The checked-out commit's short hash, with `+changes` when tracked files differ from
    it (the runs then measure code no commit holds); `unknown` outside a git checkout."""
    where = str(root or PROJECT_ROOT)
    try:
        head = subprocess.run(
            ["git", "-C", where, "rev-parse", "--short=7", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    return f"{head}+changes" if changed else head
