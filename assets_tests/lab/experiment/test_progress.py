"""Every experiment says where it is: run n of N, variant and seed, window position,
elapsed and remaining time."""

from __future__ import annotations

import io

import pytest

from freshness_pipeline.lab.experiment.progress import Progress, clock_text


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("seconds", "text"), [(7, "7s"), (65, "1m05s"), (3723, "1h02m03s"), (-3, "0s"), (59.6, "1m00s")]
)
def test_clock_text(seconds: float, text: str):
    assert clock_text(seconds) == text


def test_progress_lines_through_two_runs():
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(2, window_s=90, out=out, clock=clock, overhead_s=40, every_s=15)
    progress.begin_run(1, "pmb")
    # before any run finished, each counts window + overhead = 130 s
    assert progress.remaining_s() == pytest.approx(260)
    clock.now += 20  # stack started
    progress.window_opened()
    clock.now += 14
    progress.tick()  # under every_s since the last line: silent
    clock.now += 1
    progress.tick()
    # 15 s into the window: 75 s of it left, half the expected 40 s stop, then one more run
    assert progress.remaining_s() == pytest.approx(75 + 20 + 130)
    clock.now += 75
    progress.stopping()
    clock.now += 25
    progress.end_run("P=1")  # this run took 135 s: the next is expected to as well
    assert progress.remaining_s() == pytest.approx(135)
    progress.begin_run(1, "dagster_eager")
    clock.now += 35
    assert progress.remaining_s() == pytest.approx(100)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[experiment 1/2] seed 1, pmb: starting the stack | elapsed 0s")
    assert lines[1] == (
        "[experiment 1/2] seed 1, pmb: window 0/90 s | elapsed 20s | remaining about 4m00s"
    )
    assert lines[2] == (
        "[experiment 1/2] seed 1, pmb: window 15/90 s | elapsed 35s | remaining about 3m45s"
    )
    assert "window closed; stopping" in lines[3]
    assert lines[4].startswith("[experiment 1/2] seed 1, pmb: done: P=1 | elapsed 2m15s")
    assert lines[5].startswith("[experiment 2/2] seed 1, dagster_eager: starting the stack")
    assert len(lines) == 6


def test_kept_runs_count_without_a_time():
    clock, out = FakeClock(), io.StringIO()
    progress = Progress(3, window_s=60, out=out, clock=clock, overhead_s=40)
    progress.kept(1, "pmb")
    assert progress.remaining_s() == pytest.approx(2 * 100)
    assert "[experiment 1/3] seed 1, pmb: kept from an earlier invocation" in out.getvalue()
