"""A run's folder, written by the harness and read back by the report, the model check and
the calibration: the samples, the Dagster runs, every table's commits and the summary;
the experiment's facts; and the refreshes a run's record counts."""

from __future__ import annotations

import csv
import functools
import gzip
import json
import logging
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.lab.experiment.staleness import Sample, total_staleness
from freshness_pipeline.lab.experiment.wide import wide_jobs, write_wide
from freshness_pipeline.runtime.dagster_instance import open_instance
from freshness_pipeline.scheduling.run_plan import (
    ASSET_TAG,
    LAUNCHED_BY_TAG,
    SENSOR,
    RunPlan,
    plan_tags,
)

if TYPE_CHECKING:
    from freshness_pipeline.runtime.stack import Stack

log = logging.getLogger("freshness.experiment")

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


def write_run(run_dir: Path, lakehouse: Path, stack: Stack, samples: list, facts: dict) -> dict:
    """What a run leaves for the report: its samples, its Dagster runs and every table's
    commits, each in a file of the run's folder; returns the run's summary (`facts` and
    its results)."""
    _write_samples(run_dir / SAMPLES_FILE, samples)
    jobs = stack.settings.jobs
    runs = _dagster_runs(stack, jobs)
    (run_dir / "runs.json").write_text(json.dumps(runs, indent=1, default=str))
    commits = _commits(lakehouse, jobs)
    (run_dir / "commits.json").write_text(json.dumps(commits, indent=1))
    p, p0 = total_staleness(samples)
    return {
        **facts,
        "jobs": list(jobs),
        "P": p,
        "P0": p0,
        "samples": len(samples),
        "runs": len(runs),
        "runs_succeeded": sum(r["status"] == "SUCCESS" for r in runs),
        "runs_failed": sum(r["status"] == "FAILURE" for r in runs),
        # job refreshes that did work (a peer's run may refresh several, or find nothing)
        "job_refreshes": sum(
            "duration_s" in meta for r in runs for meta in r["metadata_by_asset"].values()
        ),
    }


def _write_samples(path: Path, samples: Iterable[Sample]) -> None:
    with gzip.open(path, "wt", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["at_us", "table", "watermark_us", "staleness_s", "floor_s"])
        for s in samples:
            writer.writerow(
                [s.at_us, s.table, s.watermark_us or "", f"{s.staleness_s:.3f}", f"{s.floor_s:.3f}"]
            )


def _dagster_runs(stack: Stack, jobs: Iterable[str]) -> list[dict]:
    """Every run of the jobs in the stack's instance: status, times, tags, the plan, and
    each asset's materialization metadata."""
    import dagster as dg

    runs = []
    with open_instance(stack.dagster_home, stack.settings) as instance:
        records = instance.get_run_records()
        # run id -> asset -> that materialization's metadata (a peer's run holds several)
        materialized: dict[str, dict[str, dict]] = {}
        for job in jobs:
            for rec in instance.fetch_materializations(dg.AssetKey(job), limit=10_000).records:
                meta = rec.asset_materialization.metadata
                materialized.setdefault(rec.run_id, {})[job] = {
                    **{k: getattr(v, "value", None) for k, v in meta.items()},
                    # when this table's refresh landed: a peer's run of six steps credits
                    # P step by step, long before the run itself ends
                    MATERIALIZED_AT: rec.timestamp,
                }
        for record in records:
            run = record.dagster_run
            by_asset = materialized.get(run.run_id, {})
            assets = job_assets_of(run, by_asset, stack.settings.jobs)
            if not assets:
                continue  # not a run of the jobs (none other is launched)
            runs.append(
                {
                    "run_id": run.run_id,
                    "status": run.status.value,
                    "start": record.start_time,
                    "end": record.end_time,
                    "created": record.create_timestamp.timestamp(),
                    "tags": plan_tags(run.tags, run.run_config),
                    "launched_by": launcher_of(run.tags),
                    "assets": assets,
                    # one asset's metadata as before (a sensor run has one); all of them:
                    "metadata": by_asset.get(assets[0], {}) if len(assets) == 1 else {},
                    "metadata_by_asset": by_asset,
                }
            )
    return runs


def _commits(lakehouse: Path, jobs: Iterable[str]) -> dict[str, list[dict]]:
    """Every table's commits: instant, action, operation, files written, watermark."""
    commits = {}
    for table in (*RAW_TABLES, *jobs):
        try:
            meta = HudiTableMetadata(Lakehouse.parse(str(lakehouse)).table(table))
            found = meta.commits()
        except TableNotFound:
            continue
        except Exception as exc:  # noqa: BLE001 - illustration only; the run is measured
            # A run the stop's drain cut off mid-commit can leave an unreadable commit
            # file; the measurement (samples, runs) stands, this table's list is lost.
            log.warning("commits of %s unreadable after the stop: %s", table, exc)
            continue
        commits[table] = [
            {
                "instant": c.instant,
                "action": c.action,
                "operation": c.operation,
                "files": len(c.written),
                "watermark_us": c.watermark_us,
            }
            for c in found
        ]
    return commits


def job_assets_of(run, materialized: Iterable[str] = (), jobs: Iterable[str] = JOBS) -> list[str]:
    """The job assets a run targets, in pipeline order: its asset selection (an
    automation run's), its plan (a sensor run's), its job (the interval job's run carries
    no selection: all of the job's assets) and whatever it materialized."""
    from freshness_pipeline.orchestration.automation import ALL_JOBS_JOB

    selected = {key.to_user_string() for key in run.asset_selection or ()} | set(materialized)
    plan = RunPlan.from_run(run)
    if plan is not None:
        selected.add(plan.asset)
    if getattr(run, "job_name", None) == ALL_JOBS_JOB and not run.asset_selection:
        selected |= set(jobs)
    return [job for job in jobs if job in selected]


def launcher_of(tags) -> str:
    """Who launched a run: our sensor (its plan tags), a peer's sensor or schedule, or a
    person."""
    # Our sensor's runs carry `freshness/asset` (their plan is in the run config now, so
    # the tags alone no longer hold a whole RunPlan).
    if tags.get(ASSET_TAG) or tags.get(LAUNCHED_BY_TAG) == SENSOR:
        return SENSOR
    for key in ("dagster/sensor_name", "dagster/schedule_name"):
        if tags.get(key):
            return tags[key]
    return "manual"
