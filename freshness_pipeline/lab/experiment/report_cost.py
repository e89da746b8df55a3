"""The experiment report's cost tables: what a run cost in wall time (queue, launch, each
phase) and in CPU (the machine by kind of process, each step as its JVM counts it)."""

from __future__ import annotations

import statistics
from collections.abc import Collection, Mapping

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.execution.run_phases import PHASES, from_metadata, median_phases
from freshness_pipeline.lab.experiment.machine_budget import SERVICE, budget_rows
from freshness_pipeline.lab.experiment.run_files import RunSummary, read_runs, refreshes_by
from freshness_pipeline.scheduling.run_plan import ASSET_TAG

PHASES_TEXT = (
    "Each materialization records its phases (`phase_<name>_s`, run_phases.py): queue "
    "wait (run queue: K and the writer pools), launch (run process, code, resources), plan "
    "(run config against Hudi metadata), session (Spark), read (input deltas), transform "
    "(the job's SQL), then the Hudi write: write_prepare (until the commit is requested), "
    "index_lookup (requested to inflight: every record tagged with its file group), "
    "write_files (inflight to completed: files rewritten, commit under the lock) and "
    "after_commit (clean and archive until the write returns; `clean` is the timeline's "
    "clean when one ran). A phase a run lacks is left out of its median, not counted as 0."
)


def run_cost_rows(runs: list[RunSummary], variants: list[str], jobs: int = len(JOBS)) -> list[str]:
    """What one run costs under these conditions: the bound on every table's staleness.
    Runs in flight when the window closed finish (the stop drains them): they count as
    launched and succeeded, not in the rate, which is per minute of window."""
    lines = [
        "| variant | runs launched | succeeded | failed | finished after the window | "
        "queue and launch (s, median) | run (s, median) | runs per job per minute |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for variant in variants:
        launched, succeeded, failed, late, in_window = 0, 0, 0, 0, 0
        waits: list[float] = []
        times: list[float] = []
        minutes = 0.0
        for run in runs:
            if run.variant != variant:
                continue
            minutes += run.window_s / 60
            window_end = run.window_end_s
            for r in read_runs(run.dir):
                launched += 1
                failed += r.status == "FAILURE"
                if r.start and r.created:
                    waits.append(r.start - r.created)
                in_window += refreshes_by(r, window_end)
                wall = r.wall_s
                if r.succeeded and wall is not None and r.end is not None:
                    succeeded += 1
                    times.append(wall)
                    late += r.end > window_end
        rate = f"{in_window / jobs / minutes:.2f}" if minutes else "-"
        wait = f"{statistics.median(waits):.1f}" if waits else "-"
        took = f"{statistics.median(times):.1f}" if times else "-"
        lines.append(
            f"| {variant} | {launched} | {succeeded} | {failed} | {late} | {wait} | "
            f"{took} | {rate} |"
        )
    return lines


def phase_rows(runs: list[RunSummary], jobs: Collection[str] = JOBS.keys()) -> list[str]:
    """Per job, the median of each phase over its successful runs in every variant
    (run_phases.py; runs recorded before the phases existed have none)."""
    by_job: dict[str, list[dict[str, float]]] = {}
    for run in runs:
        for r in read_runs(run.dir):
            if not r.succeeded:
                continue
            metadata = r.metadata_by_asset
            if not metadata and r.metadata:
                metadata = {str(r.tags.get(ASSET_TAG, "")): r.metadata}
            for job, meta in metadata.items():
                phases = from_metadata(meta)
                if job in jobs and phases:
                    by_job.setdefault(job, []).append(phases)
    if not by_job:
        return ["No run recorded its phases."]
    medians = {job: median_phases(by_job[job]) for job in jobs if job in by_job}
    names = [n for n in (*PHASES, "write", "clean") if any(n in m for m in medians.values())]
    lines = [
        "| job | runs | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for job, found in medians.items():
        cells = [f"{found[n]:.2f}" if n in found else "-" for n in names]
        lines.append(f"| {job} | {len(by_job[job])} | " + " | ".join(cells) + " |")
    return lines


CPU_TEXT = (
    "Each step records what it cost in the JVM that ran it (hudi/step_cpu.py, the JVM's "
    "own counters): its Spark tasks' executor CPU, and the whole JVM's CPU, JIT "
    "compilation and GC while it ran (the driver's planning, code generation and Hudi's "
    "own work, and whatever ran beside it in that JVM). Per variant and job: the steps "
    "measured, the median of each, and the window's sum of the JVM's CPU over them."
)


CPU_FIELDS = ("task_cpu_s", "jvm_cpu_s", "jvm_jit_s", "jvm_gc_s")


BUDGET_TEXT = (
    "Every process's CPU through the window, read from /proc every 5 s "
    "(experiment/machine_budget.py), by kind of process: CPU-seconds, mean over seeds, "
    "and the share of the machine (cores x window)."
)


def machine_budget_rows(runs: list[RunSummary], order: list[str]) -> list[str]:
    """Per variant, the mean over seeds of each kind's CPU-seconds in the window."""
    by_variant: dict[str, list[RunSummary]] = {}
    for run in runs:
        if run.cpu_by_kind_s:
            by_variant.setdefault(run.variant, []).append(run)
    if not by_variant:
        return ["No run sampled its processes' CPU (runs recorded before that)."]
    rows = []
    for variant in (v for v in order if v in by_variant):
        found = by_variant[variant]
        budgets = [r.cpu_by_kind_s or {} for r in found]
        kinds = {k for budget in budgets for k in budget}
        mean = {k: statistics.mean(b.get(k, 0.0) for b in budgets) for k in kinds}
        rows.append((variant, mean, statistics.mean(r.window_s for r in found)))
    return budget_rows(rows)


PER_REFRESH_TEXT = (
    "The Spark service's CPU through the window divided by the job refreshes that landed "
    "in it, per seed and the median over seeds: what a refresh cost the shared Spark, "
    "its JVM's compiling and collecting included."
)


def service_per_refresh_rows(runs: list[RunSummary], order: list[str]) -> list[str]:
    """Per variant, the Spark service's CPU-seconds per job refresh, seed by seed."""
    found: dict[str, list[RunSummary]] = {}
    for run in runs:
        if run.cpu_by_kind_s and SERVICE in run.cpu_by_kind_s and run.job_refreshes:
            found.setdefault(run.variant, []).append(run)
    if not found:
        return ["No run sampled the Spark service's CPU with a refresh in its window."]
    lines = [
        "| variant | CPU-s per refresh, by seed | median |",
        "|---|---|---|",
    ]
    for variant in (v for v in order if v in found):
        items = sorted(found[variant], key=lambda r: r.seed)
        costs = [(r.cpu_by_kind_s or {})[SERVICE] / r.job_refreshes for r in items]
        by_seed = ", ".join(f"{r.seed}: {c:.1f}" for r, c in zip(items, costs, strict=True))
        lines.append(f"| {variant} | {by_seed} | {statistics.median(costs):.1f} |")
    return lines


def step_cpu_rows(
    runs: list[RunSummary], order: list[str], jobs: Collection[str] = JOBS.keys()
) -> list[str]:
    """Per variant and job, the medians of each step's CPU fields (successful runs)."""
    found: dict[tuple[str, str], list[Mapping]] = {}
    for run in runs:
        for r in read_runs(run.dir):
            if not r.succeeded:
                continue
            for job, meta in r.metadata_by_asset.items():
                if job in jobs and "cpu_jvm_cpu_s" in meta:
                    found.setdefault((run.variant, job), []).append(meta)
    if not found:
        return ["No step recorded its CPU (runs recorded before steps measured it)."]
    lines = [
        "| variant | job | steps | task CPU (s) | JVM CPU (s) | JIT (s) | GC (s) | JVM CPU, sum "
        "| classes generated |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant in order:
        for job in jobs:
            steps = found.get((variant, job))
            if not steps:
                continue
            cells = [
                f"{statistics.median(float(m.get('cpu_' + f, 0)) for m in steps):.2f}"
                for f in CPU_FIELDS
            ]
            total = sum(float(m["cpu_jvm_cpu_s"]) for m in steps)
            # classes Spark's code generation compiled a step (median; steps before it: -)
            generated = [float(m["cpu_jvm_codegen_classes"]) for m in steps if _has_classes(m)]
            classes = f"{statistics.median(generated):.0f}" if generated else "-"
            lines.append(
                f"| {variant} | {job} | {len(steps)} | "
                + " | ".join(cells)
                + f" | {total:.1f} | {classes} |"
            )
    return lines


def _has_classes(meta: Mapping) -> bool:
    return "cpu_jvm_codegen_classes" in meta


RUN_COST_TEXT = (
    "From the Dagster run records: queue and launch is creation to run start (the "
    "daemon's queue, a new run-worker process, code load); run is start to end. A "
    "table cannot be fresher than about one run of its job plus one of each ancestor, "
    "which is what bounds P / P0. Runs in flight when the window closed finish before "
    "the stack stops; they are counted as finished after the window. The rate per minute "
    "counts job refreshes that landed inside the window, each at its own materialization "
    "(a run of several assets, or one that failed later, refreshed what it committed)."
)
