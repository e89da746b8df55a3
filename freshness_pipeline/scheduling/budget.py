"""The machine as the budget (METHOD 10): whether a planned run is worth launching now, given
the runs in flight it would slow.

On one shared machine a run launched beside others takes part of the machine from each of
them: on 2 cores two steps side by side each take about twice as long. Filling every free
slot of K is then a choice with a price, which the published rule never counts. Here the
machine is modelled as processor sharing: it does `capacity` runs' worth of work at once
(1: one run alone saturates it; a run that waits on I/O or on its driver leaves room, so
capacity can exceed 1), and the runs working share it equally beyond that. A run is its
steps in order, each `work_s` seconds of the run alone and removing `gain_s` of staleness
when it commits (METHOD 8: each step commits its own table).

P is the integral of staleness, so a commit that removes g seconds of staleness and lands
d seconds later costs g * d of P. Hence the rule, decided for one candidate at a time:

  now   = sum over every commit of (gain * time of commit), the candidate launched now
  later = the same, the candidate launched when the first run in flight ends
  launch iff now <= later.

With room on the machine the candidate slows nobody and commits sooner, so it launches;
on a saturated machine it launches only if its own earlier commits save more staleness
than the delay it puts on the runs in flight costs (Smith's rule for weighted completion
times, made for runs that cannot be preempted). On a machine saturated by one run of the
same length, waiting always wins: sharing delays the first run by the whole second one and
brings the second one forward by nothing. K stays an upper bound, not a target.

Pure Python: frozen dataclasses in, a verdict out; no clock (times are seconds from now).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

# A forecast ends a step when its work left is within this (floating-point dust).
_EPS_S = 1e-9


@dataclass(frozen=True)
class Work:
    """A run as the forecast sees it: its steps not yet committed, in the order they commit,
    each (work_s, gain_s); `starts_in_s` before it works (queue, process start: no share
    of the machine)."""

    steps: tuple[tuple[float, float], ...]
    starts_in_s: float = 0.0
    # Each step's fixed work (the cost model's a: paid whatever the batch), for the larger
    # batch; empty: unknown, and the batch is not counted.
    fixed_s: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.starts_in_s < 0:
            raise ValueError(f"starts_in_s must not be negative, got {self.starts_in_s}")
        for work_s, gain_s in self.steps:
            if work_s < 0 or gain_s < 0:
                raise ValueError(f"a step's work and gain must not be negative: {self.steps}")
        if self.fixed_s and len(self.fixed_s) != len(self.steps):
            raise ValueError(f"fixed_s needs one value a step: {self.fixed_s} for {self.steps}")
        if any(fixed < 0 for fixed in self.fixed_s):
            raise ValueError(f"a step's fixed work must not be negative: {self.fixed_s}")

    def _per_gain_s(self) -> list[tuple[float, float]]:
        """Each step's (fixed work, variable work per second of gain); a step that removes
        nothing has no variable part (its work does not grow with the batch)."""
        return [
            (min(fixed, work), (work - min(fixed, work)) / gain if gain > 0 else 0.0)
            for (work, gain), fixed in zip(self.steps, self.fixed_s, strict=True)
        ]

    def grown(self, wait_s: float) -> Work:
        """The same run launched `wait_s` later: every step that removes staleness removes
        `wait_s` more, for its variable work on that much more data."""
        steps = tuple(
            (work + per_s * wait_s, gain + wait_s) if gain > 0 else (work, 0.0)
            for (work, gain), (_, per_s) in zip(self.steps, self._per_gain_s(), strict=True)
        )
        return replace(self, steps=steps, starts_in_s=self.starts_in_s + wait_s)

    def follow_up(self, wait_s: float, starts_in_s: float) -> Work:
        """The next run of the same steps, for the `wait_s` seconds of data that arrive
        after this one launched: each step's fixed work again and its variable work on that
        data; L again before it works."""
        steps = tuple(
            (fixed + per_s * wait_s, wait_s) if gain > 0 else (0.0, 0.0)
            for (_, gain), (fixed, per_s) in zip(self.steps, self._per_gain_s(), strict=True)
        )
        return Work(steps, starts_in_s=starts_in_s)

    @property
    def gain_s(self) -> float:
        return sum(gain for _, gain in self.steps)

    @property
    def work_s(self) -> float:
        return sum(work for work, _ in self.steps)


def forecast(runs: Sequence[Work], capacity: float) -> list[list[float]]:
    """Seconds from now until each step of each run commits, the runs sharing the machine:
    a working run advances at min(1, capacity / runs working) of its speed alone."""
    if capacity <= 0:
        raise ValueError(f"capacity must be positive, got {capacity}")
    left = [[work for work, _ in run.steps] for run in runs]
    done: list[list[float]] = [[] for _ in runs]
    position = [0] * len(runs)
    now = 0.0
    while True:
        active = [i for i, run in enumerate(runs) if position[i] < len(run.steps)]
        if not active:
            return done
        working = [i for i in active if runs[i].starts_in_s <= now + _EPS_S]
        starts = [runs[i].starts_in_s for i in active if runs[i].starts_in_s > now + _EPS_S]
        rate = min(1.0, capacity / len(working)) if working else 0.0
        # The next event: a step's end at this rate, or a run that starts working.
        horizon = min(starts, default=float("inf"))
        for i in working:
            horizon = min(horizon, now + left[i][position[i]] / rate)
        elapsed = horizon - now
        for i in working:
            left[i][position[i]] -= elapsed * rate
        now = horizon
        for i in working:
            # A step with no work left commits now, and so does any zero-work step after it.
            while position[i] < len(runs[i].steps) and left[i][position[i]] <= _EPS_S:
                done[i].append(now)
                position[i] += 1


def weighted_commits(runs: Sequence[Work], capacity: float) -> float:
    """Sum over every step of (its gain * seconds until it commits): the staleness (P) the
    runs leave before their commits, the part a launch decision changes."""
    times = forecast(runs, capacity)
    return sum(
        gain * at
        for run, ends in zip(runs, times, strict=True)
        for (_, gain), at in zip(run.steps, ends, strict=True)
    )


@dataclass(frozen=True)
class Verdict:
    launch: bool
    now_s: float  # weighted commits, launched now
    later_s: float  # weighted commits, launched when the first run in flight ends
    wait_s: float  # how long "later" waits
    reason: str  # "" when it launches


def judge(
    candidate: Work, in_flight: Sequence[Work], capacity: float, batch: bool = False
) -> Verdict:
    """Whether `candidate` is worth launching now beside `in_flight` (module docstring);
    with `batch` and the candidate's fixed work known, counting the larger batch waiting
    would take."""
    if not in_flight:
        return Verdict(True, 0.0, 0.0, 0.0, "")
    ends = forecast(in_flight, capacity)
    wait = min((run_ends[-1] for run_ends in ends if run_ends), default=0.0)
    if batch and candidate.fixed_s and wait > _EPS_S:
        now_runs = [*in_flight, candidate]
        candidate_ends = forecast(now_runs, capacity)[-1]
        done = candidate_ends[-1] if candidate_ends else 0.0
        follow = candidate.follow_up(wait, max(wait, done) + candidate.starts_in_s)
        now = weighted_commits([*now_runs, follow], capacity)
        later = weighted_commits([*in_flight, candidate.grown(wait)], capacity)
        what = ("with its next run for the data meanwhile", "one larger run")
    else:
        now = weighted_commits([*in_flight, candidate], capacity)
        deferred = replace(candidate, starts_in_s=candidate.starts_in_s + wait)
        later = weighted_commits([*in_flight, deferred], capacity)
        what = ("", "")
    if now <= later + _EPS_S:
        return Verdict(True, now, later, wait, "")
    with_next, larger = (f" {words}" if words else "" for words in what)
    reason = (
        f"held for the machine: beside {len(in_flight)} run(s) in flight it{with_next} would "
        f"cost {now - later:.0f} s more staleness than{larger} starting in {wait:.0f} s "
        f"(capacity {capacity:.2g} runs)"
    )
    return Verdict(False, now, later, wait, reason)


@dataclass(frozen=True)
class MachineBudget:
    """What a tick knows of the machine: how many runs' worth of work it does at once, and
    the runs in flight (the jobs' runs, queued or working) as forecasts see them."""

    capacity: float
    in_flight: tuple[Work, ...] = ()
    batch: bool = False  # count the larger batch a run that waits takes (`judge`)

    def __post_init__(self) -> None:
        if self.capacity <= 0:
            raise ValueError(f"capacity must be positive, got {self.capacity}")

    def judge(self, candidate: Work, chosen: Sequence[Work] = ()) -> Verdict:
        """`judge` beside the runs in flight and those chosen earlier this tick."""
        return judge(candidate, [*self.in_flight, *chosen], self.capacity, self.batch)


def step_left_s(planned_s: float, elapsed_s: float, slowdown: float = 1.0) -> float:
    """A working step's work left, in seconds alone: what its plan gave it less what it has
    done (`elapsed_s` of wall time at `slowdown` times its speed alone), and never less than
    a tenth of the plan (a step past its estimate is not about to end for sure)."""
    done = elapsed_s / max(1.0, slowdown)
    return max(0.1 * planned_s, planned_s - done)


# When the planner launches (FRESHNESS_LAUNCH_RULE): "slots" fills every free slot of K (the
# published rule); "budget" launches a run only where this module's rule says so; "batch"
# the same, counting the larger batch a run that waits takes.
LAUNCH_RULES = ("slots", "budget", "batch")
BUDGET_RULES = ("budget", "batch")
# The capacity a planner assumes before its runs have measured one: one run saturates.
DEFAULT_CAPACITY = 1.0
# Capacities the fit tries, in runs' worth of work: 1 to 4 in steps of 0.05. Not below 1:
# a step alone defines the unit, and below 1 every capacity explains the steps alike (the
# slowdown is then the same factor at every load, which each job's level absorbs).
CAPACITY_GRID = tuple(round(1.0 + 0.05 * i, 2) for i in range(61))
CAPACITY_MIN_SAMPLES = 8


@dataclass(frozen=True)
class CapacityFit:
    """The machine's capacity as the runs measured it: `capacity` runs' worth of work at
    once, from `samples` steps; None while too few steps ran beside others to say."""

    capacity: float | None
    samples: int
    spread: float | None = None  # the fit's root mean square error of log seconds


def slowdown(beside: float, capacity: float) -> float:
    """How much longer a step takes with `beside` other steps working: processor sharing."""
    return max(1.0, (1.0 + beside) / capacity)


def fit_capacity(steps: Mapping[str, Sequence[tuple[float, float]]]) -> CapacityFit:
    """The capacity that best explains each job's steps, given per job its (seconds,
    beside) pairs: seconds = alone_j * slowdown(beside, capacity), in log space (a step's
    noise is a factor, not an offset), each job's alone_j the geometric mean that fits it
    best; of capacities that explain the steps equally well, the smallest (the machine is
    not assumed to have room the steps never showed). Needs steps at two loads at least
    and CAPACITY_MIN_SAMPLES of them; otherwise no capacity (the caller keeps its prior)."""
    pairs = [
        (job, math.log(seconds), beside)
        for job, found in steps.items()
        for seconds, beside in found
        if seconds > 0 and beside >= 0
    ]
    loads = {round(beside, 1) for _, _, beside in pairs}
    if len(pairs) < CAPACITY_MIN_SAMPLES or len(loads) < 2:
        return CapacityFit(None, len(pairs))
    best: tuple[float, float] | None = None
    for capacity in CAPACITY_GRID:
        by_job: dict[str, list[float]] = {}
        for job, log_s, beside in pairs:
            by_job.setdefault(job, []).append(log_s - math.log(slowdown(beside, capacity)))
        error = sum(
            (value - sum(values) / len(values)) ** 2
            for values in by_job.values()
            for value in values
        )
        if best is None or error < best[0] - 1e-12:
            best = (error, capacity)
    assert best is not None
    return CapacityFit(best[1], len(pairs), math.sqrt(best[0] / len(pairs)))


def beside_each(intervals: Sequence[tuple[float, float]]) -> list[float]:
    """For each step's (start, end) in seconds, the other steps working beside it on average
    over its time: the sum of their overlaps with it over its length (0 for a step of no
    length). Only steps that start within the longest step's length before it can overlap,
    found by bisection, so a deployment's history stays cheap."""
    order = sorted(range(len(intervals)), key=lambda i: intervals[i][0])
    starts = [intervals[i][0] for i in order]
    longest = max((end - start for start, end in intervals), default=0.0)
    found = [0.0] * len(intervals)
    for i, (start, end) in enumerate(intervals):
        if end <= start:
            continue
        overlap = 0.0
        first = bisect.bisect_left(starts, start - longest)
        last = bisect.bisect_left(starts, end)
        for j in order[first:last]:
            other_start, other_end = intervals[j]
            if j != i and other_end > start:
                overlap += min(end, other_end) - max(start, other_start)
        found[i] = overlap / (end - start)
    return found
