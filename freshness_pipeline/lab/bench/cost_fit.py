"""The cost model against a campaign's measured steps.

Each job's prior is fitted on the campaign's calibration run (what `--warm-cost` hands
every variant), then every sensor variant's runs are replayed in order: each step is
estimated from the prior and the steps of that job before it (what the sensor planned
on) and set beside the seconds it took. Two rules for a job with too few steps to fit
every term, on the same steps side by side:

- `scaled` (cost_model._level): the prior's fixed term moved to its runs, and the whole
  prior scaled where its per-file and per-byte terms alone overshoot them;
- `clamped`: the fixed term moved and clamped at 0, the prior's slopes kept whatever
  the runs took (the rule before the scaling).

A step's error is |E - d| / d; E / d above 1 is an estimate dearer than the step.

    freshness lab cost-fit docs/results/recovery-wide/runs
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.lab.experiment.calibration import job_steps
from freshness_pipeline.lab.experiment.run_files import RUNS_FILE, DagsterRunRecord, read_runs
from freshness_pipeline.scheduling.cost_model import (
    DEFAULT_PRIOR,
    CostModel,
    FittedCost,
    RunSample,
    fit_cost_model,
)

RULES = ("scaled", "clamped")
SENSOR = "freshness_sensor"


@dataclass(frozen=True)
class Estimate:
    rule: str
    source: str  # the fit's: prior, level or fit
    estimate_s: float
    measured_s: float


def clamped(fitted: FittedCost, history: Sequence[RunSample], prior: CostModel) -> CostModel:
    """The level rule before the scaling: the prior's slopes, the fixed term at the median
    residual and never below 0 (any other source unchanged)."""
    if fitted.source != "level":
        return fitted.model
    residuals = sorted(
        s.seconds - prior.b_s_per_byte * s.scan_bytes - prior.c_s_per_file * s.files
        for s in history
        if s.seconds > 0
    )
    middle = len(residuals) // 2
    level = (
        residuals[middle] if len(residuals) % 2 else (residuals[middle - 1] + residuals[middle]) / 2
    )
    return CostModel(max(0.0, level), prior.b_s_per_byte, prior.c_s_per_file)


def replay(
    steps: Mapping[str, Sequence[RunSample]], priors: Mapping[str, CostModel]
) -> list[Estimate]:
    """Each step estimated under both rules from the steps of its job before it."""
    out = []
    for job, history in steps.items():
        prior = priors.get(job, DEFAULT_PRIOR)
        for i, step in enumerate(history):
            if step.seconds <= 0:
                continue
            fitted = fit_cost_model(history[:i], "three_term", prior=prior)
            models = {"scaled": fitted.model, "clamped": clamped(fitted, history[:i], prior)}
            for rule, model in models.items():
                estimate = model.estimate(step.scan_bytes, step.files)
                out.append(Estimate(rule, fitted.source, estimate, step.seconds))
    return out


def priors_from(
    runs: Iterable[DagsterRunRecord], jobs: Iterable[str], rule: str
) -> dict[str, CostModel]:
    """Each job's calibrated model under `rule` (as experiment.calibration fits it)."""
    priors = {}
    for job, history in job_steps(runs, jobs).items():
        fitted = fit_cost_model(history, "three_term")
        priors[job] = fitted.model if rule == "scaled" else clamped(fitted, history, DEFAULT_PRIOR)
    return priors


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary_lines(estimates: Sequence[Estimate]) -> list[str]:
    lines = []
    for rule in RULES:
        for source in ("all", "prior", "level", "fit"):
            chosen = [e for e in estimates if e.rule == rule and source in ("all", e.source)]
            if not chosen:
                continue
            ratios = [e.estimate_s / e.measured_s for e in chosen]
            errors = [abs(r - 1) for r in ratios]
            lines.append(
                f"{rule:8s} {source:6s} steps {len(chosen):5d}  median |E-d|/d "
                f"{statistics.median(errors):.3f}  median E/d {statistics.median(ratios):.3f} "
                f"(p10 {_percentile(ratios, 0.1):.2f}, p90 {_percentile(ratios, 0.9):.2f})"
            )
    return lines


def campaign_estimates(root: Path) -> list[Estimate]:
    """A campaign folder (`freshness experiment --warm-cost --out ROOT`): its calibration
    run under calibration/, its sensor variants' runs under seed*/VARIANT/."""
    experiment = json.loads((root / "experiment.json").read_text())
    sensors = [v["name"] for v in experiment["config"]["variants"] if v.get("automation") == SENSOR]
    calibration = sorted(root.glob("calibration/*/*/runs.json"))
    if not calibration:
        raise SystemExit(f"{root}: no calibration/*/*/runs.json (run it with --warm-cost)")
    calibrated = read_runs(calibration[0].parent)
    seeds = sorted(p for p in root.glob("seed*") if p.is_dir())
    estimates: list[Estimate] = []
    for seed in seeds:
        for variant in sensors:
            if not (seed / variant / RUNS_FILE).exists():
                continue
            runs = read_runs(seed / variant)
            jobs = {job for run in runs for job in run.metadata_by_asset}
            steps = job_steps(runs, sorted(jobs))
            for rule in RULES:
                priors = priors_from(calibrated, sorted(jobs), rule)
                estimates += [e for e in replay(steps, priors) if e.rule == rule]
    return estimates


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="freshness lab cost-fit", description=__doc__.splitlines()[0]
    )
    parser.add_argument("campaign", type=Path, help="a campaign's runs folder")
    args = parser.parse_args(argv)
    if not (args.campaign / "experiment.json").exists():
        raise SystemExit(f"{args.campaign}: no experiment.json (not a campaign's runs folder)")
    for line in summary_lines(campaign_estimates(args.campaign)):
        print(line)
