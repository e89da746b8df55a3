"""The ingestion loop's pacing: the interval between commits, a quick look after a cycle
that found nothing landed."""

import pytest

from freshness_pipeline.ingestion.ingest import EMPTY_POLL_S, pause_after, wait_until


@pytest.mark.parametrize(
    ("committed", "interval_s", "elapsed_s", "pause_s"),
    [
        (True, 10.0, 3.0, 7.0),  # commits are paced by the interval, their time included
        (True, 10.0, 12.0, 0.0),  # a commit longer than the interval: the next at once
        (False, 10.0, 0.1, EMPTY_POLL_S - 0.1),  # nothing landed: look again within 1 s
        (False, 0.5, 0.1, 0.4),  # never longer than the interval itself
    ],
)
def test_pause_after_a_cycle(committed: bool, interval_s: float, elapsed_s: float, pause_s: float):
    assert pause_after(committed, interval_s, elapsed_s) == pytest.approx(pause_s)


def test_the_wait_ends_when_the_deadline_passes_between_two_readings():
    # The clock reads 9.95 (0.05 s left: one short sleep), then 10.3, past the deadline:
    # the wait ends instead of asking for a negative sleep.
    readings = iter([9.95, 10.3])
    slept: list[float] = []
    wait_until(10.0, lambda: False, clock=lambda: next(readings), sleep=slept.append)
    assert slept == [pytest.approx(0.05)]


def test_the_wait_sleeps_in_short_steps_and_stops_when_asked():
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    wait_until(0.5, lambda: False, clock=lambda: now[0], sleep=sleep)
    assert slept == [pytest.approx(s) for s in (0.2, 0.2, 0.1)]
    wait_until(10.0, lambda: True, clock=lambda: now[0], sleep=sleep)
    assert len(slept) == 3  # a stop already asked for: no sleep at all
