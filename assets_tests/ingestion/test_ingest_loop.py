"""The ingestion loop's pacing: the interval between commits, a quick look after a cycle
that found nothing landed."""

import pytest

from freshness_pipeline.ingestion.ingest import EMPTY_POLL_S, pause_after


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
