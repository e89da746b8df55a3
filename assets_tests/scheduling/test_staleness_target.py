"""The staleness target: pass, warn and fail at the configured staleness, and the windows
Dagster's freshness policy accepts."""

from __future__ import annotations

import pytest

from freshness_pipeline.scheduling.staleness_target import StalenessTarget


def test_states_at_the_boundaries():
    target = StalenessTarget(fail_s=300, warn_fraction=0.5)
    assert target.state(None) == "no data yet"
    assert target.state(0.0) == "pass"
    assert target.state(149.9) == "pass"
    assert target.state(150.0) == "warn"
    assert target.state(299.9) == "warn"
    assert target.state(300.0) == "fail"


def test_no_warn_window_goes_from_pass_to_fail():
    target = StalenessTarget(fail_s=120, warn_fraction=0)
    assert target.warn_s is None
    assert target.state(119) == "pass" and target.state(120) == "fail"
    assert target.describe() == "staleness target 120 s"


@pytest.mark.parametrize(
    ("fail_s", "fraction", "message"),
    [
        (59, 0.5, "at least 60"),
        (300, 1.0, "below 1"),
        (300, -0.1, "at least 0"),
        (100, 0.5, "warn window of 50 s"),
    ],
)
def test_windows_dagster_would_refuse_are_refused_here(fail_s, fraction, message):
    with pytest.raises(ValueError, match=message):
        StalenessTarget(fail_s=fail_s, warn_fraction=fraction)
