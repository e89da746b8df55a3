"""The experiment report's recovery condition: how long the tables took to come back after
Dagster's hold, and the staleness summed by phase of the hold."""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from freshness_pipeline.lab.experiment.run_files import RunSummary, read_samples, samples_path
from freshness_pipeline.scheduling.units import US_PER_S

RECOVERY_TIME_LIMIT = 0.70  # time until every table is within target, pmb / eager


def recovery_rows(
    runs: list[RunSummary], order: list[str], config: Mapping
) -> tuple[list[str], dict]:
    """After the hold: seconds until every table was within the target, per variant and
    seed, and the target on pmb / dagster_eager (a variant that did not recover in some
    seed's window has no mean)."""
    start, end = config["hold_s"]
    target = config.get("recovery_target_s", 300.0)
    by_variant: dict[str, dict[int, float | None]] = defaultdict(dict)
    for run in runs:
        by_variant[run.variant][run.seed] = run.recovered_s
    seeds = sorted({run.seed for run in runs})
    lines = [
        "## Recovery after the hold",
        "",
        f"Dagster's daemon was stopped from {start:g} s to {end:g} s into the window (no "
        "sensor tick, no automation, no dequeue; runs in flight finished; ingestion went "
        f"on). Recovered: the first sample after the hold at which every table was within "
        f"{target:g} s of staleness; '-': not within the window.",
        "",
        "| variant | " + " | ".join(f"seed {s} (s)" for s in seeds) + " | mean (s) |",
        "|---|" + "---|" * (len(seeds) + 1),
    ]
    means: dict[str, float | None] = {}
    for variant in order:
        values = [by_variant[variant].get(s) for s in seeds]
        done = [v for v in values if v is not None]
        means[variant] = statistics.mean(done) if done and len(done) == len(values) else None
        cells = ["-" if v is None else f"{v:.0f}" for v in values]
        mean = means[variant]
        lines.append(
            f"| {variant} | " + " | ".join(cells) + f" | {'-' if mean is None else f'{mean:.0f}'} |"
        )
    verdicts: dict[str, dict] = {}
    pmb, eager = means.get("pmb"), means.get("dagster_eager")
    if pmb is not None and eager:
        value = pmb / eager
        met = value <= RECOVERY_TIME_LIMIT
        verdicts["recovered pmb/dagster_eager"] = {
            "value": value,
            "limit": RECOVERY_TIME_LIMIT,
            "met": met,
        }
        lines += [
            "",
            f"- Time to recover, pmb / dagster_eager = {value:.2f}, target <= "
            f"{RECOVERY_TIME_LIMIT}: **{'met' if met else 'missed'}**.",
        ]
    elif "pmb" in by_variant and "dagster_eager" in by_variant:
        lines += [
            "",
            f"- Time to recover, pmb / dagster_eager, target <= {RECOVERY_TIME_LIMIT}: "
            "**no value** (a variant did not recover within a seed's window).",
        ]
    return [*lines, ""], verdicts


# After the hold, the first stretch (the backlog's runs) apart from the rest of the window.
AFTER_HOLD_S = 120.0


HOLD_PHASES = ("before the hold", "the hold", f"first {AFTER_HOLD_S:g} s after", "the rest")


def summed_staleness(rows: Iterable[Mapping[str, str]]) -> list[tuple[int, float]]:
    """Per sampling instant, the staleness summed over the tables: (at_us, seconds)."""
    totals: dict[int, float] = defaultdict(float)
    for row in rows:
        totals[int(row["at_us"])] += float(row["staleness_s"])
    return sorted(totals.items())


def hold_phase_sums(
    totals: Iterable[tuple[int, float]], start_us: int, hold_s: tuple[float, float]
) -> dict[str, float]:
    """P cut into the window's phases: before the hold, the hold, the first AFTER_HOLD_S
    after it, and the rest (seconds of summed staleness, one sample a second)."""
    bounds = (hold_s[0], hold_s[1], hold_s[1] + AFTER_HOLD_S)
    found = dict.fromkeys(HOLD_PHASES, 0.0)
    for at_us, total in totals:
        at_s = (at_us - start_us) / US_PER_S
        found[HOLD_PHASES[bisect.bisect_right(bounds, at_s)]] += total
    return found


def backlog_cleared_s(
    totals: Sequence[tuple[int, float]], start_us: int, hold_s: tuple[float, float]
) -> float | None:
    """Seconds from the hold's end until the summed staleness was first back at or below
    its value when the hold began (the backlog worked off, on a lakehouse whose tables are
    never all within a fixed target at once); None: not within the window."""
    begin_us = start_us + int(hold_s[0] * US_PER_S)
    end_us = start_us + int(hold_s[1] * US_PER_S)
    level = next((total for at_us, total in reversed(totals) if at_us <= begin_us), None)
    if level is None:
        return None
    for at_us, total in totals:
        if at_us >= end_us and total <= level:
            return (at_us - end_us) / US_PER_S
    return None


def hold_phase_rows(runs: list[RunSummary], order: list[str], config: Mapping) -> list[str]:
    """Where each variant's staleness went, phase by phase, and when its backlog was
    worked off (mean over seeds)."""
    hold = (float(config["hold_s"][0]), float(config["hold_s"][1]))
    sums: dict[str, list[dict[str, float]]] = defaultdict(list)
    cleared: dict[str, list[float | None]] = defaultdict(list)
    for run in runs:
        if not samples_path(run.dir).exists():
            continue
        totals = summed_staleness(read_samples(run.dir))
        sums[run.variant].append(hold_phase_sums(totals, run.start_us, hold))
        cleared[run.variant].append(backlog_cleared_s(totals, run.start_us, hold))
    lines = [
        "### Where the staleness went",
        "",
        f"P per phase of the window (mean over seeds, thousands of table-seconds): before "
        f"the hold, the hold, the first {AFTER_HOLD_S:g} s after it (the backlog's runs) and "
        "the rest. Backlog worked off: seconds from the hold's end until the summed "
        "staleness was first back at or below its value when the hold began ('-': not "
        "within the window in some seed).",
        "",
        "| variant | " + " | ".join(HOLD_PHASES) + " | backlog worked off (s) |",
        "|---|" + "---|" * (len(HOLD_PHASES) + 1),
    ]
    for variant in (v for v in order if sums.get(v)):
        cells = [
            f"{statistics.mean(s[name] for s in sums[variant]) / 1000:,.1f}" for name in HOLD_PHASES
        ]
        times = cleared[variant]
        done = [t for t in times if t is not None]
        mean = f"{statistics.mean(done):.0f}" if done and len(done) == len(times) else "-"
        lines.append(f"| {variant} | " + " | ".join(cells) + f" | {mean} |")
    return [*lines, ""]
