"""Epoch microseconds as text, one way for the whole project (UTC always)."""

from __future__ import annotations

from datetime import UTC, datetime

from freshness_pipeline.scheduling.units import US_PER_S


def iso(us: int | None, timespec: str = "microseconds", none: str = "none") -> str:
    """ISO-8601 in UTC; `timespec` as datetime.isoformat takes it, or "clock" for HH:MM:SS."""
    if us is None:
        return none
    moment = datetime.fromtimestamp(us / US_PER_S, tz=UTC)
    if timespec == "clock":
        return moment.strftime("%H:%M:%S")
    return moment.isoformat(timespec=timespec)


def readable_utc(us: int | None, none: str = "none") -> str:
    """For people (tags, tick messages): `2026-11-23 18:09:18.123 UTC`, to the millisecond
    (the exact microseconds stay in run config and metadata)."""
    if us is None:
        return none
    moment = datetime.fromtimestamp(us / US_PER_S, tz=UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d} UTC"
