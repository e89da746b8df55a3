"""What a sensor tick says: its decision for every job in words, the tables past their
staleness target, a one-line summary, and which tables' staleness to record now.

Dagster's tick history shows, per tick, a status, a cursor and "N runs requested"; the
per-job reasons sit one hover (skip reason) or one click (logs) away. So a tick says the
same decision three ways: the skip reason (when nothing launched), one log line per job
(always, launching or not), and a short summary the sensor stores as its cursor, which the
history shows in the tick's row (the sensor keeps no state: everything it needs is read
again from Hudi and the run history every tick, so the cursor is free to say what the tick
did).

Pure Python: no dagster here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from freshness_pipeline.scheduling.planner import JobChoice, Plan
from freshness_pipeline.scheduling.run_plan import files_text
from freshness_pipeline.scheduling.staleness_target import StalenessTarget
from freshness_pipeline.scheduling.timefmt import readable_utc
from freshness_pipeline.scheduling.units import US_PER_S

# Every table's staleness is recorded as an asset observation on the first tick of each
# wall-clock minute, and a table's at once on the tick it crosses its warn or fail line.
# A point a minute draws the curve between materializations (and, for a table that stopped
# materializing, the only curve there is) at 6 events a minute for the pipeline, where one
# per tick (10 s) would add 36 and bury each asset's event list. Both rules read only the
# clock and the previous tick's time: no query and no state (measured: reading each
# table's last observation back instead cost 34 ms a tick on SQLite, a third of a warm
# tick). A crossing back down needs no observation: only a commit lowers staleness, and
# the materialization records it.
OBSERVE_EVERY_S = 60
SUMMARY_CHARS = 200  # the cursor column shows about the first 50; the sensor page all of it


@dataclass(frozen=True)
class TickReport:
    lines: tuple[str, ...]  # one per job, in pipeline order: "<job>: launch|waits: why"
    past_target: tuple[str, ...]  # "<job> <staleness> s", for the tables failing the target
    summary: str  # one short line: what launched, what is late, why the rest waits
    free_slots: int

    def skip_reason(self) -> str:
        """The whole decision, for a tick that launched nothing."""
        slots = f"{self.free_slots} free slot{'' if self.free_slots == 1 else 's'}"
        return f"Nothing launched ({slots}). {self.late_text()} " + (
            " ".join(f"{line}." for line in self.lines)
        )

    def late_text(self) -> str:
        if not self.past_target:
            return "No table past its staleness target."
        return f"Past the staleness target: {', '.join(self.past_target)}."


def input_lag_s(t_done_us: int | None, cap_us: int | None) -> float | None:
    """How far a table is behind what its inputs hold: their watermark (the newest arrival
    it could reflect) minus its own, in seconds; 0: caught up. None: either is unknown.
    Staleness (METHOD 1) keeps growing over an input that went quiet; this does not."""
    if t_done_us is None or cap_us is None:
        return None
    return max(0.0, (cap_us - t_done_us) / US_PER_S)


def staleness_words(
    staleness_s: float | None, target: StalenessTarget, lag_s: float | None = None
) -> str:
    state = target.state(staleness_s, lag_s)
    if staleness_s is None:
        return "no watermark yet (never refreshed)"
    behind = "" if lag_s is None else f", {lag_s:.0f} s behind its inputs"
    if state == "caught up":
        return (
            f"staleness {staleness_s:.0f} s, caught up with its inputs (nothing newer has "
            "arrived in them)"
        )
    if state == "fail":
        return f"staleness {staleness_s:.0f} s, PAST its {target.fail_s} s target{behind}"
    if state == "warn":
        return f"staleness {staleness_s:.0f} s, past the {target.warn_s:g} s warning{behind}"
    return f"staleness {staleness_s:.0f} s{behind}"


def _launch_words(choice: JobChoice, rank: int, runnable: int) -> str:
    aged = f", ahead of eta's order by aging: {choice.aged}" if choice.aged else ""
    chain = (
        f"; then {', '.join(choice.descendants)} in the same run: the run removes "
        f"{choice.gain_s:.1f} s in about {choice.cost_s:.1f} s with "
        f"{choice.run_cost_s:.1f} s of launch and session once"
        if choice.descendants
        else ""
    )
    own = choice.chain[0] if choice.chain else None
    gain = own.gain_s if own else choice.gain_s
    cost = own.cost_s if own else choice.cost_s
    return (
        f"launch: {files_text(len(choice.files), choice.pending_files)} up to "
        f"{readable_utc(choice.cutoff_us)}, removes {gain:.1f} s of staleness in about "
        f"{cost:.1f} s{chain} (eta {choice.eta:.3g}, {_ordinal(rank)} of {runnable} "
        f"runnable{aged})"
    )


def _step_words(choice: JobChoice, job: str) -> str:
    """A table another run's chain commits: its part of that run's plan."""
    step = next(s for s in choice.chain if s.job == job)
    source = f"{step.files} chosen files" if not step.after else f"after {', '.join(step.after)}"
    return (
        f"in the run of {choice.job}: {source}, up to {readable_utc(step.cutoff_us)}, "
        f"removes {step.gain_s:.1f} s of staleness in about {step.cost_s:.1f} s"
    )


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _short(reason: str) -> str:
    """A skip reason's gist for the summary: `no free slot (K=3, 0 running)` -> `no free slot`."""
    return reason.split(":")[0].split(" (")[0]


def describe_tick(
    result: Plan,
    staleness_s: Mapping[str, float | None],
    target: StalenessTarget,
    jobs: Sequence[str],
    lag_s: Mapping[str, float | None] | None = None,
) -> TickReport:
    """The tick's decision for each of `jobs` (pipeline order), with its staleness and,
    where known, its lag behind its inputs (`input_lag_s`)."""
    lag_s = lag_s or {}
    ranked = {c.job: i + 1 for i, c in enumerate(result.ranked)}
    launched = {c.job: c for c in result.launches}
    in_run = {d: c for c in result.launches for d in c.descendants}
    skipped = {s.job: s.reason for s in result.skipped}
    by_job = {c.job: c for c in result.ranked}
    lines, late = [], []
    for job in jobs:
        if job in launched:
            words = _launch_words(launched[job], ranked[job], len(result.ranked))
        elif job in in_run:
            words = _step_words(in_run[job], job)
        else:
            words = f"waits: {skipped.get(job, 'not considered')}"
            if job in by_job:  # runnable, but the slots went to better ones
                choice = by_job[job]
                words += f", eta {choice.eta:.3g} ranks {_ordinal(ranked[job])}"
                # Aged but still without a slot: it takes the next one that frees.
                words += f", {choice.aged}" if choice.aged else f", waited {choice.waited_s:.0f} s"
        seconds = staleness_s.get(job)
        lag = lag_s.get(job)
        lines.append(f"{job}: {words}; {staleness_words(seconds, target, lag)}")
        if target.state(seconds, lag) == "fail":
            late.append(f"{job} {seconds:.0f} s")
    waits = Counter(
        _short(skipped[j]) for j in jobs if j not in launched and j not in in_run and j in skipped
    )
    names = [
        f"{job}{f' +{len(c.descendants)}' if c.descendants else ''}{' (aging)' if c.aged else ''}"
        for job, c in launched.items()
    ]
    parts = [f"launch {', '.join(names)}" if launched else "idle"]
    if late:
        parts.append(f"past target: {', '.join(late)}")
    parts.append(", ".join(f"{n} {why}" for why, n in waits.most_common()) or "none waits")
    summary = "; ".join(parts)
    if len(summary) > SUMMARY_CHARS:
        summary = summary[: SUMMARY_CHARS - 1] + "…"
    return TickReport(tuple(lines), tuple(late), summary, result.free_slots)


def observations_due(
    now_us: int,
    previous_tick_us: int | None,
    staleness_s: Mapping[str, float | None],
    target: StalenessTarget,
    every_s: int = OBSERVE_EVERY_S,
) -> list[str]:
    """The tables whose staleness to record on this tick: all of them on the sensor's first
    tick and on the first tick of each `every_s` window of the clock; otherwise the ones
    that crossed their warn or fail line since the previous tick (staleness grows one second
    per second between commits). A table with no watermark has no staleness to record."""
    measured = [job for job, seconds in staleness_s.items() if seconds is not None]
    window = every_s * US_PER_S
    if previous_tick_us is None or now_us // window != previous_tick_us // window:
        return measured
    elapsed_s = (now_us - previous_tick_us) / US_PER_S
    lines = [line for line in (target.warn_s, target.fail_s) if line is not None]
    due = []
    for job in measured:
        seconds = staleness_s[job]
        assert seconds is not None
        if any(seconds >= line > seconds - elapsed_s for line in lines):
            due.append(job)
    return due
