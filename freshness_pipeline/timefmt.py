"""Epoch microseconds as text, one way for the whole project (UTC always)."""

from __future__ import annotations

from datetime import datetime, timezone


def iso(us: int | None, timespec: str = "microseconds", none: str = "none") -> str:
    """ISO-8601 in UTC; `timespec` as datetime.isoformat takes it, or "clock" for HH:MM:SS."""
    if us is None:
        return none
    moment = datetime.fromtimestamp(us / 1_000_000, tz=timezone.utc)
    if timespec == "clock":
        return moment.strftime("%H:%M:%S")
    return moment.isoformat(timespec=timespec)
