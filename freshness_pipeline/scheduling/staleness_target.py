"""The staleness target: how stale a derived table may get (METHOD 1: now minus the newest
arrival it reflects) before it warns and then fails. Built by settings.py from
FRESHNESS_STALENESS_TARGET_S and FRESHNESS_STALENESS_WARN_FRACTION; the assets turn it into
Dagster's freshness policy, the sensor compares each table's staleness with it every tick.

Pure Python: no dagster here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from freshness_pipeline.scheduling.units import US_PER_S

# Dagster's time-window freshness policy refuses a fail or warn window under a minute
# (dagster/_core/definitions/freshness.py, TimeWindowFreshnessPolicy.from_timedeltas).
MIN_WINDOW_S = 60

TargetState = Literal["pass", "warn", "fail", "no data yet", "caught up"]


@dataclass(frozen=True)
class StalenessTarget:
    """Fail past `fail_s` seconds of staleness; warn past `warn_fraction` of it (0: never)."""

    fail_s: int = 300
    warn_fraction: float = 0.5

    def __post_init__(self) -> None:
        if self.fail_s < MIN_WINDOW_S:
            raise ValueError(
                f"FRESHNESS_STALENESS_TARGET_S must be at least {MIN_WINDOW_S} (Dagster's "
                f"freshness policy takes no shorter window), got {self.fail_s}"
            )
        if not 0 <= self.warn_fraction < 1:
            raise ValueError(
                f"FRESHNESS_STALENESS_WARN_FRACTION must be at least 0 and below 1, "
                f"got {self.warn_fraction}"
            )
        if self.warn_s is not None and self.warn_s < MIN_WINDOW_S:
            raise ValueError(
                f"FRESHNESS_STALENESS_WARN_FRACTION={self.warn_fraction} of "
                f"FRESHNESS_STALENESS_TARGET_S={self.fail_s} is a warn window of "
                f"{self.warn_s:g} s; Dagster's freshness policy takes no window under "
                f"{MIN_WINDOW_S} s (raise the target, raise the fraction, or set it to 0 "
                f"for no warning)"
            )

    @property
    def warn_s(self) -> float | None:
        """Staleness at which a table warns; None: no warning, only pass or fail."""
        return self.fail_s * self.warn_fraction if self.warn_fraction else None

    def state(self, staleness_s: float | None, lag_s: float | None = None) -> TargetState:
        """Where a table of this staleness stands (None: it has no watermark yet). With
        `lag_s`, how far it is behind what its inputs hold: a table past the warning that
        reflects everything its inputs hold is `caught up` (its inputs went quiet; no run
        can make it fresher), not failing."""
        if staleness_s is None:
            return "no data yet"
        if staleness_s >= self.fail_s:
            state: TargetState = "fail"
        elif self.warn_s is not None and staleness_s >= self.warn_s:
            state = "warn"
        else:
            return "pass"
        return "caught up" if lag_s is not None and lag_s <= 0 else state

    def describe(self) -> str:
        warn = f", warn past {self.warn_s:g} s" if self.warn_s is not None else ""
        return f"staleness target {self.fail_s} s{warn}"


def staleness_s(now_us: int, reflected_us: int) -> float:
    """METHOD 1: `S_i(now) = now - t_i_latest`, in seconds, never negative (a watermark a
    clock tick ahead of the reader is fresh, not fresher). The one definition: the sampler,
    the assets' materialization metadata and the sensor's observations all use it."""
    return max(0.0, (now_us - reflected_us) / US_PER_S)
