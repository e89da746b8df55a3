"""Two limits every reader of the method shares: how far a job may read (its input cap)
and how many runs the planner keeps in flight (its launch limit)."""

from __future__ import annotations

from collections.abc import Iterable


def input_cap(watermarks: Iterable[int | None]) -> int | None:
    """A job's cap: the lowest watermark among its inputs, the furthest arrival time every
    one of them has committed; None while any input has none yet (or there is none)."""
    marks = list(watermarks)
    if not marks or any(mark is None for mark in marks):
        return None
    return min(mark for mark in marks if mark is not None)


def launch_limit(k: int, runs_at_once: int | None) -> int:
    """How many runs the planner fills: K (Dagster's run queue), or fewer where the
    machine runs fewer at full speed (FRESHNESS_RUNS_AT_ONCE; None: K)."""
    return k if runs_at_once is None else min(k, runs_at_once)
