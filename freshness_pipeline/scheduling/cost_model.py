"""Per-job cost model E = a + b*bytes (+ c*files), fitted online from the job's own runs.

Pure Python + numpy. METHOD 5.8: the per-file term is ours (dispersion makes per-file
overhead the cost that matters); the published two-term model stays available. Before a
job has enough history the prior is used; the fit uses a recent window, drops outliers
(residual beyond 3 median absolute deviations, e.g. a run that waited on a busy JVM) and
keeps every coefficient non-negative (a negative per-byte cost would make the planner
prefer bigger scans).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from freshness_pipeline.scheduling.planner import DEFAULT_RUN_COST_S, MIB, CostModel

CostMode = Literal["three_term", "two_term"]
COST_MODES: tuple[CostMode, ...] = ("three_term", "two_term")
# Before history: about 20 s per run on a local JVM, 10 s per GiB, 50 ms per file.
DEFAULT_PRIOR = CostModel(a_s=20.0, b_s_per_byte=10.0 / 1024**3, c_s_per_file=0.05)


RUN_COST_MIN_SAMPLES = 3


def fit_run_cost(overheads_s: Sequence[float], prior_s: float = DEFAULT_RUN_COST_S) -> float:
    """L from the recent runs' launch + plan + session seconds: their median (a run that
    waited on a busy machine should not set it), the prior until a few runs have run."""
    measured = sorted(s for s in overheads_s if s >= 0)
    if len(measured) < RUN_COST_MIN_SAMPLES:
        return prior_s
    middle = len(measured) // 2
    if len(measured) % 2:
        return measured[middle]
    return (measured[middle - 1] + measured[middle]) / 2


@dataclass(frozen=True)
class CostPrior:
    """Coefficients to start from instead of DEFAULT_PRIOR and DEFAULT_RUN_COST_S: per job
    its step model, and L. A fresh instance has no run history, so without this every
    decision of its first minutes is planned on the built-in guess (in a long-mode window
    55 of 68 decisions were); an experiment carries a fit from a calibration run so that
    every variant starts from the same, measured coefficients."""

    jobs: tuple[tuple[str, CostModel], ...] = ()
    run_cost_s: float = DEFAULT_RUN_COST_S
    source: str = ""  # where the coefficients came from, for people

    def model(self, job: str) -> CostModel:
        return dict(self.jobs).get(job, DEFAULT_PRIOR)

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "run_cost_s": self.run_cost_s,
            "jobs": {
                job: {
                    "a_s": m.a_s,
                    "b_s_per_mib": m.b_s_per_byte * MIB,
                    "c_s_per_file": m.c_s_per_file,
                }
                for job, m in self.jobs
            },
        }

    @classmethod
    def from_json(cls, data: object) -> CostPrior:
        """Raises ValueError naming what is wrong."""
        if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
            raise ValueError('expected {"jobs": {job: {"a_s", "b_s_per_mib", "c_s_per_file"}}}')
        jobs = []
        for job, coef in data["jobs"].items():
            try:
                values = [float(coef[k]) for k in ("a_s", "b_s_per_mib", "c_s_per_file")]
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(
                    f"job {job!r}: needs numbers a_s, b_s_per_mib, c_s_per_file"
                ) from exc
            if min(values) < 0:
                raise ValueError(f"job {job!r}: a coefficient is negative")
            jobs.append((str(job), CostModel(values[0], values[1] / MIB, values[2])))
        run_cost = float(data.get("run_cost_s", DEFAULT_RUN_COST_S))
        if run_cost < 0:
            raise ValueError("run_cost_s is negative")
        return cls(tuple(jobs), run_cost, str(data.get("source", "")))


@dataclass(frozen=True)
class RunSample:
    scan_bytes: int
    files: int
    seconds: float
    # Other runs' steps working beside it, on average over its wall time (0: alone); the
    # machine's capacity is fitted from how a job's steps stretch with it (budget.py).
    beside: float = 0.0


def typical_input(history: Sequence[RunSample]) -> tuple[int, int]:
    """The median (bytes, files) a job's steps read: a chained step's expected input,
    which its parent has not written yet when the run is planned."""
    if not history:
        return (0, 0)
    middle = sorted(history, key=lambda s: (s.scan_bytes, s.files))[len(history) // 2]
    return (middle.scan_bytes, middle.files)


@dataclass(frozen=True)
class FittedCost:
    model: CostModel
    mode: CostMode
    # "prior": no run yet; "level": the prior's slopes at the runs' level; "fit": all terms
    source: Literal["prior", "level", "fit"]
    samples_used: int
    rmse_s: float | None  # fit error on the samples used


def _solve_nonnegative(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least squares with coefficients >= 0 by dropping negative terms (tiny active set)."""
    active = list(range(x.shape[1]))
    while True:
        coef = np.zeros(x.shape[1])
        sol, *_ = np.linalg.lstsq(x[:, active], y, rcond=None)
        coef[active] = sol
        negative = [i for i in active if coef[i] < 0]
        if not negative:
            return coef
        active = [i for i in active if i not in negative]
        if not active:
            return np.zeros(x.shape[1])


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _level(prior: CostModel, mode: CostMode, recent: Sequence[RunSample]) -> FittedCost:
    """Too few runs to fit every term: the prior moved to what the runs measured. A job's
    fixed cost is most of a small run here, and the built-in 20 s guess can be off
    several-fold, so one or two measured runs are worth more than the guess.

    Runs dearer than the prior's slopes alone predict keep those slopes and move the fixed
    term to the median residual. Runs cheaper than that (a backlog of 900 files at 0.05
    s/file is 45 s; such runs took 11-25 s) cannot be met by a fixed term, which is never
    negative: the whole prior is scaled by the median of measured over estimated, so the
    model meets its runs and keeps the prior's split between a run's fixed and per-file
    cost. Clamping the fixed term at 0 instead (the rule before) put a level's estimates
    at 1.65x the steps they planned (median; 1.33x scaled, the wide recovery campaign's
    steps replayed by bench/cost_fit.py) and made a prefix of a backlog look as cheap per
    file as all of it, with nothing fixed to share out."""
    level = _median(
        [
            s.seconds - prior.b_s_per_byte * s.scan_bytes - prior.c_s_per_file * s.files
            for s in recent
        ]
    )
    if level >= 0:
        model = CostModel(level, prior.b_s_per_byte, prior.c_s_per_file)
    else:
        # (A run the prior gives no cost cannot say by how much; one run at least is
        # dearer under the slopes than it took, so the list is never empty.)
        scale = _median(
            [
                s.seconds / estimate
                for s in recent
                if (estimate := prior.estimate(s.scan_bytes, s.files)) > 0
            ]
        )
        model = CostModel(prior.a_s * scale, prior.b_s_per_byte * scale, prior.c_s_per_file * scale)
    errors = [s.seconds - model.estimate(s.scan_bytes, s.files) for s in recent]
    rmse = float(np.sqrt(np.mean(np.square(errors))))
    return FittedCost(model, mode, "level", len(recent), rmse)


def fit_cost_model(
    history: Sequence[RunSample],
    mode: CostMode = "three_term",
    prior: CostModel = DEFAULT_PRIOR,
    window: int = 40,
) -> FittedCost:
    if mode not in COST_MODES:
        raise ValueError(f"unknown cost mode {mode!r}; expected one of {COST_MODES}")
    if mode == "two_term":
        prior = CostModel(prior.a_s, prior.b_s_per_byte, 0.0)
    recent = [s for s in history if s.seconds > 0][-window:]
    terms = 3 if mode == "three_term" else 2
    if not recent:
        return FittedCost(prior, mode, "prior", 0, None)
    if len(recent) < terms + 2:
        return _level(prior, mode, recent)
    columns = [np.ones(len(recent)), np.array([s.scan_bytes for s in recent], float)]
    if mode == "three_term":
        columns.append(np.array([s.files for s in recent], float))
    x = np.column_stack(columns)
    y = np.array([s.seconds for s in recent], float)
    # Scale columns so bytes (1e9) and files (1e2) condition the solve alike.
    scale = np.maximum(np.abs(x).max(axis=0), 1e-12)
    coef = _solve_nonnegative(x / scale, y) / scale
    keep = np.ones(len(y), bool)
    for _ in range(2):  # refit without outliers, twice: the first fit is pulled by them
        residual = y - x @ coef
        center = np.median(residual[keep])
        mad = np.median(np.abs(residual[keep] - center))
        tolerance = 3 * 1.4826 * mad + 1e-6 * max(1.0, float(np.median(np.abs(y))))
        candidate = np.abs(residual - center) <= tolerance
        if candidate.sum() < terms + 2 or (candidate == keep).all():
            break
        keep = candidate
        coef = _solve_nonnegative(x[keep] / scale, y[keep]) / scale
    residual = y[keep] - x[keep] @ coef
    rmse = float(np.sqrt(np.mean(residual**2)))
    model = CostModel(
        a_s=float(coef[0]),
        b_s_per_byte=float(coef[1]),
        c_s_per_file=float(coef[2]) if mode == "three_term" else 0.0,
    )
    return FittedCost(model, mode, "fit", int(keep.sum()), rmse)
