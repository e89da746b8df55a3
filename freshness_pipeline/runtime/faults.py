"""Fault injection for the reliability tests and the chaos campaign.

Off unless `FRESHNESS_FAULTS_DIR` is set. A file `<dir>/<asset>.fail_before_commit`
holding a count N makes the asset's next N runs fail after writing their data files and
before their Hudi commit (the worst moment for a writer); each run takes one. The runs
fail as a real fault would: Dagster marks them failed, nothing is committed, and the
sensor must retry them. `<dir>/<table>.fail_in_clustering` (clustering_exec.FAULT_KIND)
makes the table's next clustering runs fail after writing their files, before the
replacecommit completes: the plan stays pending and the next run resumes it.
"""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path

FAIL_BEFORE_COMMIT = "fail_before_commit"


def arm(faults_dir: Path, asset: str, count: int, kind: str = FAIL_BEFORE_COMMIT) -> None:
    faults_dir.mkdir(parents=True, exist_ok=True)
    (faults_dir / f"{asset}.{kind}").write_text(str(count))


def take(faults_dir: Path | None, asset: str, kind: str = FAIL_BEFORE_COMMIT) -> bool:
    """True if a fault of `kind` is armed for `asset`; consumes one (safe across processes)."""
    if faults_dir is None:
        return False
    path = faults_dir / f"{asset}.{kind}"
    if not path.exists():
        return False
    with path.open("r+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        text = handle.read().strip()
        left = int(text) if text.isdigit() else 0
        if left <= 0:
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(str(left - 1))
    if left - 1 == 0:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    return True
