"""What the harness leaves in a run's folder, read back for the report and the model check: the
experiment's facts, every run's summary, its Dagster runs and its samples; and the refreshes
a run's record counts."""

from __future__ import annotations

import csv
import functools
import gzip
import json
import tempfile
from collections.abc import Mapping
from pathlib import Path

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.lab.experiment.wide import wide_jobs, write_wide

# In a run record's per-asset metadata (harness.py): when that materialization landed.
MATERIALIZED_AT = "materialized_at"
SAMPLES_FILE = "samples.csv.gz"  # the harness's per-second samples of every table


def load_experiment(exp_dir: Path) -> tuple[dict, list[dict]]:
    facts = json.loads((exp_dir / "experiment.json").read_text())
    runs = []
    for summary_path in sorted(exp_dir.glob("seed*/*/summary.json")):
        run_dir = summary_path.parent
        summary = json.loads(summary_path.read_text())
        summary["dir"] = run_dir
        runs.append(summary)
    if not runs:
        raise FileNotFoundError(f"no finished runs (seed*/<variant>/summary.json) in {exp_dir}")
    return facts, runs


def job_specs(config: Mapping) -> Mapping[str, JobSpec]:
    """The jobs the runs measured: the six, or with the wide lakehouse of a seed those and
    its declarations (regenerated from the seed: the same files byte for byte)."""
    seed = config.get("wide_seed")
    if seed is None:
        return JOBS
    with tempfile.TemporaryDirectory() as tmp:
        write_wide(Path(tmp), int(seed))
        return wide_jobs(Path(tmp))


def samples_path(run_dir: Path) -> Path:
    """A run's samples: samples.csv.gz (a wide lakehouse samples 49 tables a second), or
    samples.csv as runs before it wrote them."""
    packed = run_dir / SAMPLES_FILE
    return packed if packed.exists() else run_dir / "samples.csv"


def read_samples(run_dir: Path) -> list[dict]:
    path = samples_path(run_dir)
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as handle:
        return list(csv.DictReader(handle))


@functools.cache  # read by several tables and figures; the files do not change meanwhile
def read_runs(run_dir: Path) -> list[dict]:
    return json.loads((run_dir / "runs.json").read_text())


def refreshes_of(run_record: dict) -> int:
    """Job refreshes a run did: one for a sensor run; for a peer's run of several assets,
    those that did work (an asset with nothing pending commits nothing)."""
    by_asset = run_record.get("metadata_by_asset")
    if not by_asset or len(run_record.get("assets", ())) <= 1:
        return 1
    return sum("duration_s" in meta for meta in by_asset.values())


def refreshes_by(run_record: dict, window_end: float) -> int:
    """Job refreshes of a run that landed by `window_end` (epoch seconds), each at its own
    materialization: the sampler credits a table when its commit lands, so a peer's run
    of six steps that ends after the window has still refreshed the tables it committed
    inside it (the interval tuning's runs counted 0 while P fell). A run recorded before
    the materializations carried their time counts as a whole, by its end."""
    by_asset = run_record.get("metadata_by_asset") or {}
    stamped = {a: m for a, m in by_asset.items() if MATERIALIZED_AT in m}
    if not stamped:
        ended = run_record.get("end")
        if run_record.get("status") != "SUCCESS" or not ended or float(ended) > window_end:
            return 0
        return refreshes_of(run_record)
    landed = [m for m in stamped.values() if float(m[MATERIALIZED_AT]) <= window_end]
    if len(run_record.get("assets", ())) <= 1:
        return min(1, len(landed))
    return sum("duration_s" in meta for meta in landed)
