"""What an experiment is doing while it runs: which run of how many,
its variant and seed, where it is in its measurement window, and the experiment's elapsed
and estimated remaining time.

Pure: the clock and the output stream are passed in, so the estimate is unit-tested. The
remaining time counts each run still to go at the mean wall time of the runs finished so
far (window plus start, drain and stop), or at window + `overhead_s` before any finished.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

DEFAULT_OVERHEAD_S = 40.0  # start and stop around a window, before one has been measured
WINDOW_EVERY_S = 15.0  # how often a line is printed during a window


def clock_text(seconds: float) -> str:
    """1h02m03s / 4m05s / 7s."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


@dataclass
class Progress:
    total_runs: int
    window_s: float
    out: TextIO = field(default_factory=lambda: sys.stdout)
    clock: Callable[[], float] = time.monotonic
    overhead_s: float = DEFAULT_OVERHEAD_S
    every_s: float = WINDOW_EVERY_S
    started: float | None = None
    done: int = 0  # runs finished or kept from an earlier invocation
    walls: list[float] = field(default_factory=list)  # wall time of each run measured here
    current: str = ""  # "seed 1, pmb"
    run_started: float | None = None
    window_started: float | None = None
    last_line: float | None = None

    def __post_init__(self) -> None:
        if self.started is None:
            self.started = self.clock()

    @property
    def per_run_s(self) -> float:
        return statistics.mean(self.walls) if self.walls else self.window_s + self.overhead_s

    def remaining_s(self) -> float:
        """This run's rest at the expected per-run time, plus every run after it."""
        now = self.clock()
        left_after = max(0, self.total_runs - self.done - (1 if self.run_started else 0))
        this_run = 0.0
        if self.run_started is not None:
            this_run = max(0.0, self.per_run_s - (now - self.run_started))
            if self.window_started is not None:
                # In the window its end is known exactly; the stop after it is not.
                in_window = now - self.window_started
                stop_s = max(0.0, self.per_run_s - self.window_s) / 2
                this_run = max(0.0, self.window_s - in_window) + stop_s
        return this_run + left_after * self.per_run_s

    def line(self, what: str) -> str:
        now = self.clock()
        number = min(self.total_runs, self.done + (1 if self.run_started else 0))
        return (
            f"[experiment {number}/{self.total_runs}] {self.current or '-'}: {what} | "
            f"elapsed {clock_text(now - (self.started or now))} | "
            f"remaining about {clock_text(self.remaining_s())}"
        )

    def say(self, what: str) -> None:
        print(self.line(what), file=self.out, flush=True)

    def begin_run(self, seed: int, variant: str) -> None:
        self.current = f"seed {seed}, {variant}"
        self.run_started, self.window_started, self.last_line = self.clock(), None, None
        self.say("starting the stack")

    def kept(self, seed: int, variant: str) -> None:
        """A run finished by an earlier invocation (--resume): counted, not timed."""
        self.current = f"seed {seed}, {variant}"
        self.done += 1
        self.say("kept from an earlier invocation")

    def window_opened(self) -> None:
        self.window_started = self.last_line = self.clock()
        self.say(f"window 0/{self.window_s:.0f} s")

    def tick(self) -> None:
        """Called often during the window; prints a line every `every_s`."""
        if self.window_started is None:
            return
        now = self.clock()
        if self.last_line is not None and now - self.last_line < self.every_s:
            return
        self.last_line = now
        in_window = min(self.window_s, now - self.window_started)
        self.say(f"window {in_window:.0f}/{self.window_s:.0f} s")

    def stopping(self) -> None:
        self.window_started = None
        self.say("window closed; stopping (runs in flight finish) and collecting")

    def end_run(self, result: str) -> None:
        if self.run_started is not None:
            self.walls.append(self.clock() - self.run_started)
        self.done += 1
        self.run_started = self.window_started = None
        self.say(f"done: {result}")
