"""A run's folder, written by the harness and read back by the report, the model check and
the calibration: the samples, the Dagster runs, every table's commits and the summary;
the experiment's facts; and the refreshes a run's record counts."""

from __future__ import annotations

import csv
import dataclasses
import functools
import gzip
import json
import logging
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from freshness_pipeline.scheduling.units import US_PER_S

if TYPE_CHECKING:
    from freshness_pipeline.runtime.stack import Stack

log = logging.getLogger("freshness.experiment")

# In a run record's per-asset metadata (harness.py): when that materialization landed.
MATERIALIZED_AT = "materialized_at"
SAMPLES_FILE = "samples.csv.gz"  # the harness's per-second samples of every table


SUMMARY_FILE = "summary.json"  # a variant's run on one seed: RunSummary
RUNS_FILE = "runs.json"  # the Dagster runs of that run: DagsterRunRecord each


def _known_and_rest(cls: type, data: Mapping[str, Any]) -> tuple[dict, dict]:
    names = {f.name for f in dataclasses.fields(cls)}
    known = {k: v for k, v in data.items() if k in names}
    return known, {k: v for k, v in data.items() if k not in names}


@dataclass(frozen=True)
class RunSummary:
    """One variant's run on one seed, as summary.json holds it: the facts before the run
    (variant, seed, window, conditions) and its results. Keys a newer or older writer
    added that this record does not name are kept in `extra` and written back."""

    variant: str
    seed: int = 0
    P: float = 0.0  # noqa: N815 - the method's own symbols (METHOD.md)
    P0: float = 0.0  # noqa: N815
    start_us: int = 0
    window_s: float = 0.0
    dir: Path = Path(".")  # the run's folder (not written: where it was read from)
    policy: str | None = None
    note: str = ""
    env: Mapping[str, str] = field(default_factory=dict)
    conditions: Mapping[str, Any] = field(default_factory=dict)
    automation: str | None = None
    jobs: tuple[str, ...] = ()  # runs recorded before a lakehouse could be wide: the six
    samples: int = 0
    runs: int = 0
    runs_succeeded: int = 0
    runs_failed: int = 0
    job_refreshes: int = 0
    commit: str | None = None
    layout: str | None = None  # None: recorded before layouts (the published one)
    spark_java_options: str | None = None
    cpu_by_kind_s: Mapping[str, float] | None = None  # machine_budget.py, the window's
    recovered_s: float | None = None  # after a hold: seconds until every table was fresh
    runs_cut_off_at_stop: int = 0
    sampler_read_s_median: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def held(self) -> bool:
        """Whether the run held the scheduler for a while (then `recovered_s` says)."""
        return "hold_s" in self.conditions

    @property
    def window_end_s(self) -> float:
        """The window's end, epoch seconds."""
        return self.start_us / US_PER_S + self.window_s

    @classmethod
    def from_json(cls, data: Mapping[str, Any], run_dir: Path | None = None) -> RunSummary:
        known, rest = _known_and_rest(cls, data)
        known.pop("dir", None)
        known.pop("extra", None)
        if "jobs" in known:
            known["jobs"] = tuple(known["jobs"])
        return cls(**known, dir=run_dir or Path("."), extra=rest)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del data["dir"], data["extra"]
        data["jobs"] = list(self.jobs)
        return {**data, **self.extra}

    def write(self, run_dir: Path) -> None:
        (run_dir / SUMMARY_FILE).write_text(json.dumps(self.to_json(), indent=1))


def read_summary(run_dir: Path) -> RunSummary:
    return RunSummary.from_json(json.loads((run_dir / SUMMARY_FILE).read_text()), run_dir)


@dataclass(frozen=True)
class DagsterRunRecord:
    """One Dagster run of the jobs, as runs.json holds it. Times are epoch seconds; a
    run that never started or ended has None."""

    run_id: str
    status: str
    start: float | None = None
    end: float | None = None
    created: float | None = None
    tags: Mapping[str, str] = field(default_factory=dict)
    launched_by: str = "manual"
    assets: tuple[str, ...] = ()
    # one asset's materialization metadata (a sensor run has one); all of them, by asset
    metadata: Mapping[str, Any] = field(default_factory=dict)
    metadata_by_asset: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def succeeded(self) -> bool:
        return self.status == "SUCCESS"

    @property
    def wall_s(self) -> float | None:
        """Start to end, for a run that has both."""
        if not self.start or not self.end:
            return None
        return float(self.end) - float(self.start)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DagsterRunRecord:
        known, rest = _known_and_rest(cls, data)
        known.pop("extra", None)
        for name in ("start", "end", "created"):
            if known.get(name) is not None:
                known[name] = float(known[name])
        known["assets"] = tuple(known.get("assets") or ())
        known["tags"] = known.get("tags") or {}
        known["metadata"] = known.get("metadata") or {}
        known["metadata_by_asset"] = known.get("metadata_by_asset") or {}
        return cls(**known, extra=rest)

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        del data["extra"]
        data["assets"] = list(self.assets)
        return {**data, **self.extra}


def write_runs(run_dir: Path, runs: Iterable[DagsterRunRecord]) -> None:
    records = [r.to_json() for r in runs]
    (run_dir / RUNS_FILE).write_text(json.dumps(records, indent=1, default=str))


def load_experiment(exp_dir: Path) -> tuple[dict, list[RunSummary]]:
    facts = json.loads((exp_dir / "experiment.json").read_text())
    runs = [read_summary(p.parent) for p in sorted(exp_dir.glob(f"seed*/*/{SUMMARY_FILE}"))]
    if not runs:
        raise FileNotFoundError(f"no finished runs (seed*/<variant>/{SUMMARY_FILE}) in {exp_dir}")
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
def read_runs(run_dir: Path) -> tuple[DagsterRunRecord, ...]:
    return tuple(
        DagsterRunRecord.from_json(r) for r in json.loads((run_dir / RUNS_FILE).read_text())
    )


def refreshes_of(run_record: DagsterRunRecord) -> int:
    """Job refreshes a run did: one for a sensor run; for a peer's run of several assets,
    those that did work (an asset with nothing pending commits nothing)."""
    by_asset = run_record.metadata_by_asset
    if not by_asset or len(run_record.assets) <= 1:
        return 1
    return sum("duration_s" in meta for meta in by_asset.values())


def refreshes_by(run_record: DagsterRunRecord, window_end: float) -> int:
    """Job refreshes of a run that landed by `window_end` (epoch seconds), each at its own
    materialization: the sampler credits a table when its commit lands, so a peer's run
    of six steps that ends after the window has still refreshed the tables it committed
    inside it (the interval tuning's runs counted 0 while P fell). A run recorded before
    the materializations carried their time counts as a whole, by its end."""
    by_asset = run_record.metadata_by_asset
    stamped = {a: m for a, m in by_asset.items() if MATERIALIZED_AT in m}
    if not stamped:
        ended = run_record.end
        if not run_record.succeeded or not ended or ended > window_end:
            return 0
        return refreshes_of(run_record)
    landed = [m for m in stamped.values() if float(m[MATERIALIZED_AT]) <= window_end]
    if len(run_record.assets) <= 1:
        return min(1, len(landed))
    return sum("duration_s" in meta for meta in landed)


def write_run(
    run_dir: Path, lakehouse: Path, stack: Stack, samples: list, facts: RunSummary
) -> RunSummary:
    """What a run leaves for the report: its samples, its Dagster runs and every table's
    commits, each in a file of the run's folder; returns the run's summary (`facts` and
    its results)."""
    _write_samples(run_dir / SAMPLES_FILE, samples)
    jobs = stack.settings.jobs
    runs = _dagster_runs(stack, jobs)
    write_runs(run_dir, runs)
    commits = _commits(lakehouse, jobs)
    (run_dir / "commits.json").write_text(json.dumps(commits, indent=1))
    p, p0 = total_staleness(samples)
    return dataclasses.replace(
        facts,
        dir=run_dir,
        jobs=tuple(jobs),
        P=p,
        P0=p0,
        samples=len(samples),
        runs=len(runs),
        runs_succeeded=sum(r.succeeded for r in runs),
        runs_failed=sum(r.status == "FAILURE" for r in runs),
        # job refreshes that did work (a peer's run may refresh several, or find nothing)
        job_refreshes=sum("duration_s" in m for r in runs for m in r.metadata_by_asset.values()),
    )


def _write_samples(path: Path, samples: Iterable[Sample]) -> None:
    with gzip.open(path, "wt", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["at_us", "table", "watermark_us", "staleness_s", "floor_s"])
        for s in samples:
            writer.writerow(
                [s.at_us, s.table, s.watermark_us or "", f"{s.staleness_s:.3f}", f"{s.floor_s:.3f}"]
            )


def _dagster_runs(stack: Stack, jobs: Iterable[str]) -> list[DagsterRunRecord]:
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
                DagsterRunRecord(
                    run_id=run.run_id,
                    status=run.status.value,
                    start=record.start_time,
                    end=record.end_time,
                    created=record.create_timestamp.timestamp(),
                    tags=plan_tags(run.tags, run.run_config),
                    launched_by=launcher_of(run.tags),
                    assets=tuple(assets),
                    metadata=by_asset.get(assets[0], {}) if len(assets) == 1 else {},
                    metadata_by_asset=by_asset,
                )
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
