"""Warm cost models for the experiment: the coefficients every variant starts from,
fitted on a calibration run that no reported seed uses.

A fresh Dagster instance has no run history, so the sensor plans its first decisions on
the built-in guess (20 s a step): in a long-mode window 55 of 68 decisions were. Each
variant starts on a fresh instance, so without this the comparison is between policies
planning on a guess; with it, all start from the same measured coefficients
(`FRESHNESS_COST_PRIOR`), and the report says where they came from.
"""

from __future__ import annotations

from collections.abc import Iterable

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.execution.run_phases import RUN_COST_PHASES
from freshness_pipeline.lab.experiment.run_files import MATERIALIZED_AT, DagsterRunRecord
from freshness_pipeline.scheduling.cost_model import (
    CostPrior,
    RunSample,
    fit_cost_model,
    fit_run_cost,
)

CALIBRATION_SEED = 98  # no reported seed; 99 tunes the interval peer


def job_steps(runs: Iterable[DagsterRunRecord], jobs: Iterable[str]) -> dict[str, list[RunSample]]:
    """Each job's steps (bytes and files read, seconds) in the order they materialized,
    from a campaign's recorded runs (`runs.json`: every asset's metadata per run)."""
    steps: dict[str, list[tuple[float, RunSample]]] = {job: [] for job in jobs}
    for run in runs:
        for job, meta in run.metadata_by_asset.items():
            if job in steps and all(k in meta for k in ("duration_s", "bytes_read", "files_read")):
                sample = RunSample(
                    int(meta["bytes_read"]), int(meta["files_read"]), float(meta["duration_s"])
                )
                steps[job].append((float(meta.get(MATERIALIZED_AT) or 0), sample))
    return {
        job: [sample for _, sample in sorted(found, key=lambda pair: pair[0])]
        for job, found in steps.items()
    }


def cost_prior_from_runs(
    runs: Iterable[DagsterRunRecord], source: str, jobs: Iterable[str] = JOBS
) -> CostPrior:
    """Each job's three-term model and L from a run's recorded materializations
    (`runs.json`: every asset's metadata per run)."""
    runs, jobs = list(runs), list(jobs)
    run_costs = [
        sum(float(meta[k]) for k in RUN_COST_PHASES)
        for run in runs
        for job, meta in run.metadata_by_asset.items()
        if job in jobs and all(meta.get(k) is not None for k in RUN_COST_PHASES)
    ]
    models = []
    counts = []
    for job, history in job_steps(runs, jobs).items():
        fitted = fit_cost_model(history, "three_term")
        models.append((job, fitted.model))
        counts.append(f"{job} {fitted.source} on {fitted.samples_used} steps")
    described = f"{source}; {'; '.join(counts)}; L from {len(run_costs)} runs"
    return CostPrior(tuple(models), fit_run_cost(run_costs), described)
