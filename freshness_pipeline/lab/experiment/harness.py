"""The experiment: the same recorded stream through the real system once per
policy variant and seed, each on a fresh lakehouse, with staleness sampled every second.

For each seed, one stream is recorded (seed, duration, rate, universe); then for each
variant a fresh lakehouse and Dagster home are made and the whole stack runs (shared
Spark service, replayer on the recorded file, ingestion, the Dagster daemon with the
sensor set to the variant's policy) while `StalenessSampler` reads every table's
watermark from its Hudi timeline. The measurement window is the replay's wall duration
from the moment the stack is up; then the stack stops (runs in flight finish, so none
fails for the stop) and the harness collects, per
run directory: samples.csv.gz, runs.json (every run: tags, times, metadata), commits.json
(files written per commit per table), decision.json (one planner decision with its
candidate table, recomputed on the live state in the second half of the run: the
snapshot with the most candidate cutoffs) and summary.json.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import shutil
import subprocess
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freshness_pipeline.catalog.jobs import BUNDLED_JOBS_DIR
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.paths import PROJECT_ROOT, shown_path
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.config.variables import is_setting
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.lab.experiment.calibration import CALIBRATION_SEED, cost_prior_from_runs
from freshness_pipeline.lab.experiment.machine_budget import BudgetSampler
from freshness_pipeline.lab.experiment.progress import Progress
from freshness_pipeline.lab.experiment.run_files import (
    SUMMARY_FILE,
    DagsterRunRecord,
    RunSummary,
    read_runs,
    read_summary,
    write_run,
)
from freshness_pipeline.lab.experiment.staleness import Sample, StalenessSampler
from freshness_pipeline.lab.experiment.variants import VARIANTS, Variant
from freshness_pipeline.lab.experiment.wide import plain_wide_spec, write_wide
from freshness_pipeline.runtime.code_version import UNKNOWN, code_version
from freshness_pipeline.runtime.dagster_instance import open_instance, write_instance_yaml
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.scheduling.units import US_PER_S
from freshness_pipeline.stream.generator import StreamConfig

if TYPE_CHECKING:
    from freshness_pipeline.runtime.cluster_profile import ClusterProfile
    from freshness_pipeline.runtime.stack import Stack

log = logging.getLogger("freshness.experiment")
STREAM_MARGIN_S = 60
# The published raw-table regime for every variant of an experiment (--raw-packing).
RAW_PACKING_ENV = {"FRESHNESS_RAW_PACKING": "true", "FRESHNESS_CLUSTERING_TABLES": "none"}


@dataclass(frozen=True)
class ExperimentConfig:
    out_dir: Path  # raw per-run data (lakehouses are deleted, measurements kept)
    variants: tuple[Variant, ...]
    seeds: tuple[int, ...]
    duration_s: int  # event-time seconds of stream per run
    rate: float  # events per event-time second
    speedup: float
    universe_size: int
    k: int = 3
    tick_s: int = 5
    commit_interval_s: float = 5.0
    burst_every_s: int = 0  # StreamConfig's bursts; 0 = a steady stream
    burst_s: int = 10
    burst_factor: float = 1.0
    spike_symbols: int = 0  # StreamConfig's news spikes: a burst's extra events on N symbols
    # The published raw-table regime: ingestion packs small files (each commit rewrites a
    # partition's file), so a pending file is big with few new rows; clustering off.
    raw_packing: bool = False
    keep_lakehouses: bool = False
    resume: bool = False  # keep finished (seed, variant) runs found in out_dir
    # "cluster": each run on its own cluster profile (Postgres, Spark master + worker;
    # the lakehouse stays a local folder, so the sampler reads it as in "local")
    profile: str = "local"
    # Every variant starts from cost coefficients fitted on a calibration run of pmb on
    # CALIBRATION_SEED (calibration.py), written to out_dir/cost_prior.json.
    warm_cost: bool = False
    cost_prior: Path | None = None  # set by run_experiment once calibrated
    # FRESHNESS_LAYOUT of every run: the thesis reproductions keep `published` (the
    # symbol-prefix partitions), so their figures compare with the published ones
    layout: str | None = None
    # The wide lakehouse (experiment/wide.py) of this seed beside the six: its declarations
    # are written into out_dir and every run's FRESHNESS_JOBS names both folders.
    wide_seed: int | None = None
    jobs_dirs: str | None = None  # FRESHNESS_JOBS of every run; set from wide_seed
    # The recovery condition: (from, until) seconds into the window, Dagster's daemon is
    # down (an outage, a deploy): no tick and no launch of any automation, runs in flight
    # finish, ingestion goes on; then every scheduler is let go on the backlog.
    hold_s: tuple[float, float] | None = None
    recovery_target_s: float = 300.0  # recovered: every table within this staleness
    # How long the stop waits for runs in flight after the window (the samples have
    # stopped: they count as runs, not staleness); one still running then is cut off.
    drain_s: float = 240.0
    # A warm service: the stack runs the pipeline this long (wall seconds, after the first
    # raw commits) before the window opens, so the window sees a deployment's steady state
    # (JIT done, caches full) rather than a fresh JVM's first minutes.
    warmup_s: float = 0.0

    def __post_init__(self) -> None:
        if self.hold_s is not None:
            start, end = self.hold_s
            if not 0 <= start < end <= self.window_s:
                raise ValueError(
                    f"the hold {start:g}-{end:g} s must lie inside the {self.window_s:g} s window"
                )

    @property
    def window_s(self) -> float:
        return self.duration_s / self.speedup

    def stream_config(self, seed: int) -> StreamConfig:
        return StreamConfig(
            seed=seed,
            rate=self.rate,
            universe_size=self.universe_size,
            burst_every_s=self.burst_every_s,
            burst_s=self.burst_s,
            burst_factor=self.burst_factor,
            spike_symbols=self.spike_symbols,
        )


def _watermark_reader(lakehouse: Path):
    def read(table: str) -> int | None:
        try:
            return HudiTableMetadata(Lakehouse.parse(str(lakehouse)).table(table)).watermark_us()
        except TableNotFound:
            return None

    return read


def record(config: ExperimentConfig, seed: int) -> Path:
    from freshness_pipeline.stream.replayer import record_stream

    stream = config.stream_config(seed)
    bursts = (
        f"-burst{stream.burst_every_s}s{stream.burst_s}x{stream.burst_factor:g}"
        if stream.bursty
        else ""
    ) + (f"-spikes{stream.spike_symbols}" if stream.spiky else "")
    seconds = config.duration_s + round(config.warmup_s * config.speedup)
    name = f"stream-seed{seed}-{seconds}s-{config.rate:.0f}eps{bursts}.jsonl.gz"
    path = config.out_dir / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        # 60 s more than the window: the window opens at the first raw commit, a few
        # seconds after the stream starts, and must not see the stream run dry.
        count = record_stream(stream, seconds + STREAM_MARGIN_S, tmp)
        tmp.rename(path)
        log.info("recorded %d events to %s", count, path)
    return path


def plain_wide_file(config: ExperimentConfig) -> Path:
    """Where the wide lakehouse's tables are listed for the plain peer (its own JSON)."""
    return config.out_dir / f"wide-seed{config.wide_seed}-plain.json"


def variant_env(config: ExperimentConfig, variant: Variant, seed: int, run_dir: Path) -> dict:
    """The settings of one (variant, seed) run's stack: its own lakehouse, landing and
    Spark service port; who launches the jobs (FRESHNESS_AUTOMATION) and, for our sensor,
    its policy; the same K, tick and seed for every variant."""
    env = {
        "FRESHNESS_LAKEHOUSE": str(run_dir / "tables"),
        "FRESHNESS_LANDING": str(run_dir / "landing"),
        "FRESHNESS_K": str(config.k),
        "FRESHNESS_TICK_S": str(config.tick_s),
        "FRESHNESS_SEED": str(seed),
        "FRESHNESS_SPARK_SERVICE_PORT": str(free_port()),
        # Monitoring, not the pipeline: no variant's runs or daemon may pay for it.
        "FRESHNESS_EXACTNESS_SAMPLE": "0",
        **({"FRESHNESS_COST_PRIOR": str(config.cost_prior)} if config.cost_prior else {}),
        **variant.env,
    }
    if config.raw_packing:
        env.update(RAW_PACKING_ENV)
    if config.layout:
        env["FRESHNESS_LAYOUT"] = config.layout
    if config.jobs_dirs:
        env["FRESHNESS_JOBS"] = config.jobs_dirs
    if not variant.code_location:  # a peer of its own code location reads none of ours
        env["FRESHNESS_AUTOMATION"] = variant.automation
    elif config.wide_seed is not None:  # the plain peer writes the wide tables itself
        env["DAGSTER_PLAIN_WIDE"] = str(plain_wide_file(config))
    if variant.policy:  # a peer runs without our sensor: no policy to set
        env["FRESHNESS_POLICY"] = variant.policy
    return env


def run_variant(
    config: ExperimentConfig,
    variant: Variant,
    seed: int,
    stream: Path,
    settings: Settings,
    progress: Progress | None = None,
) -> RunSummary:
    """One variant on one seed, on a fresh lakehouse; returns its summary. `settings` are
    the experiment's (the user's), which the variant's own settings change."""
    from freshness_pipeline.runtime.cluster_profile import start_stack

    if progress is None:
        progress = Progress(1, config.window_s)
        progress.begin_run(seed, variant.name)

    run_dir = config.out_dir / f"seed{seed}" / variant.name
    if run_dir.exists():
        shutil.rmtree(run_dir)
    lakehouse = run_dir / "tables"
    commit = code_version()  # the code the stack's processes load as they start
    stack, profile = _variant_stack(config, variant, seed, stream, settings, run_dir)
    log.info("seed %d, %s: starting the stack in %s", seed, variant.name, run_dir)
    start_stack(stack, profile)
    samplers: list[StalenessSampler] = []
    budget = BudgetSampler()  # every process's CPU, read from the window's start
    try:
        start_us, decision = _measure_window(
            config, stack, run_dir, lakehouse, progress, samplers, budget
        )
    except BaseException:
        stack.stop()
        if profile:
            profile.stop()
        raise
    finally:
        samples = samplers[0].stop() if samplers else []
        cpu_by_kind = budget.stop()
    # Runs in flight at the window's end finish (the stop drains them); they count as
    # runs, not as staleness: the samples stopped above. The report tells them apart by
    # their end time against start_us + window_s.
    progress.stopping()
    stop_at = time.time()
    try:
        stack.stop(drain_timeout_s=config.drain_s)
        summary = write_run(
            run_dir, lakehouse, stack, samples, _facts(config, variant, seed, start_us)
        )
        summary = replace(
            summary,
            commit=commit,
            layout=config.layout or "declared",
            # the drivers' extra JVM options too: a JIT or GC setting measured side by side
            spark_java_options=settings.spark_java_options,
            cpu_by_kind_s=cpu_by_kind,  # machine_budget.py, through the window
            recovered_s=(
                None
                if config.hold_s is None
                else recovered_s(samples, start_us, config.hold_s[1], config.recovery_target_s)
            ),
            runs_cut_off_at_stop=cut_off_runs(read_runs(run_dir), stop_at, config.drain_s),
        )
    finally:
        if profile:
            profile.stop()
    (run_dir / "decision.json").write_text(json.dumps(decision, indent=1))
    if not config.keep_lakehouses:
        shutil.rmtree(lakehouse, ignore_errors=True)
        shutil.rmtree(run_dir / "landing", ignore_errors=True)
    read_s = samplers[0].read_seconds
    summary = replace(summary, sampler_read_s_median=sorted(read_s)[len(read_s) // 2])
    summary.write(run_dir)
    log.info("seed %d, %s: P=%.0f P0=%.0f", seed, variant.name, summary.P, summary.P0)
    progress.end_run(
        f"P={summary.P:,.0f} P0={summary.P0:,.0f}, {summary.runs_succeeded} runs "
        f"succeeded, {summary.runs_failed} failed"
    )
    return summary


def _variant_stack(
    config: ExperimentConfig,
    variant: Variant,
    seed: int,
    stream: Path,
    settings: Settings,
    run_dir: Path,
) -> tuple[Stack, ClusterProfile | None]:
    """The variant's stack (not started) and, in the cluster profile, its servers (up)."""
    from freshness_pipeline.runtime.cluster_profile import ClusterProfile
    from freshness_pipeline.runtime.stack import Stack, StackConfig

    env = variant_env(config, variant, seed, run_dir)
    base = settings.changed({"FRESHNESS_SPARK_REMOTE": None})  # a fresh service per run
    home = run_dir / "dagster_home"
    profile = None
    if config.profile == "cluster":
        env["FRESHNESS_CLUSTER_LAKEHOUSE"] = "folder"  # the sampler reads run_dir/tables
        own = base.changed({k: v for k, v in env.items() if is_setting(k)})
        profile = ClusterProfile(own, run_dir / "cluster").start()
        env.update(profile.env)
        home = profile.dagster_home
    else:
        write_instance_yaml(home, k=config.k)
    stack = Stack(
        StackConfig(
            stream=config.stream_config(seed),  # the universe; the events come from the file
            malformed_rate=0.0,
            commit_interval_s=config.commit_interval_s,
            replay_file=stream,
            speedup=config.speedup,
            webserver=False,
            dagster_home=home,
            logs_dir=run_dir / "logs",
            env=env,
            **_peer_location(variant),
        ),
        base,
    )
    return stack, profile


def _peer_location(variant: Variant) -> dict:
    """A peer of its own code location: Dagster loads its module, no Spark service runs
    (its runs start their own Spark), and its stream's event time is the wall clock's (its
    partitions follow the clock, as on live data)."""
    if not variant.code_location:
        return {}
    return {"code_location": variant.code_location, "spark_mode": "local", "event_clock": "wall"}


def _measure_window(
    config: ExperimentConfig,
    stack: Stack,
    run_dir: Path,
    lakehouse: Path,
    progress: Progress,
    samplers: list[StalenessSampler],
    budget: BudgetSampler | None = None,
) -> tuple[int, dict | None]:
    """Waits for the first commit of both raw tables, then samples staleness for the
    window (the sampler goes into `samplers`, so the caller stops it whatever happens);
    returns the window's start and the richest decision snapshot seen."""
    read = _watermark_reader(lakehouse)
    decision = None
    # The window opens at the first commit of both raw tables: every variant then
    # starts from the same state (Spark up, data flowing), not from JVM start-up noise.
    ready_by = time.monotonic() + 300
    progress.say("stack up; waiting for the first commit of both raw tables")
    while any(read(t) is None for t in RAW_TABLES):
        if time.monotonic() > ready_by:
            raise RuntimeError(f"no raw commit within 300 s; see {run_dir / 'logs'}")
        time.sleep(0.5)
    if config.warmup_s:
        progress.say(f"warming the stack up for {config.warmup_s:g} s before the window")
        warm_until = time.monotonic() + config.warmup_s
        while time.monotonic() < warm_until:
            _raise_if_crashed(stack, run_dir)
            time.sleep(0.5)
    start_us = int(time.time() * US_PER_S)
    samplers.append(StalenessSampler(read, start_us, specs=stack.settings.jobs).start())
    if budget is not None:
        budget.start()
    progress.window_opened()
    opened = time.monotonic()
    deadline = opened + config.window_s
    decision_at = opened + config.window_s / 2
    hold = list(config.hold_s or ())  # the pause's start, then its end, still to come
    while time.monotonic() < deadline:
        if hold and time.monotonic() >= opened + hold[0]:
            holding = len(hold) == 2
            (stack.pause if holding else stack.resume)("dagster")
            progress.say("daemon stopped: the hold begins" if holding else "daemon back")
            hold.pop(0)
        _raise_if_crashed(stack, run_dir)
        if time.monotonic() >= decision_at:
            # From halfway on, every 15 s; keep the richest candidate table seen (at
            # one instant all jobs may be running or waiting).
            decision_at = time.monotonic() + 15
            snapshot = _snapshot_decision(lakehouse, stack.dagster_home, stack.settings)
            if _richness(snapshot) > _richness(decision):
                decision = snapshot
        progress.tick()
        time.sleep(0.5)
    return start_us, decision


def _raise_if_crashed(stack: Stack, run_dir: Path) -> None:
    crashed = [(n, c) for n, c in stack.exited() if n != "replay" or c]
    if crashed:
        raise RuntimeError(f"{crashed} exited during the run; see {run_dir / 'logs'}")


def _richness(decision: dict | None) -> int:
    if not decision or not decision["jobs"]:
        return 0
    return max(len(job["candidates"]) for job in decision["jobs"])


def _snapshot_decision(lakehouse: Path, home: Path, settings: Settings) -> dict | None:
    """The planner's view of the live state mid-run: every job's candidate table."""
    from freshness_pipeline.orchestration.resources import HudiMetadataResource
    from freshness_pipeline.orchestration.sensor import evaluate_tick

    try:
        # The variant's own settings, as its sensor saw them, with PMB's choice shown.
        scheduler = replace(settings.scheduler, policy="pmb")
        hudi_meta = HudiMetadataResource.for_settings(settings, lakehouse_root=str(lakehouse))
        with open_instance(home, settings) as instance:
            now_us = int(time.time() * US_PER_S)
            result, _ = evaluate_tick(hudi_meta, instance, scheduler, now_us)
    except Exception as exc:  # a snapshot is illustration; never fail the run for it
        log.warning("decision snapshot failed: %s", exc)
        return None
    return {
        "now_us": now_us,
        "free_slots": result.free_slots,
        "jobs": [
            {
                "job": c.job,
                "eta": c.eta,
                "files": len(c.files),
                "pending_files": c.pending_files,
                "u_us": c.cutoff_us,
                "candidates": [
                    {
                        "u_us": k.cutoff_us,
                        "files": k.file_count,
                        "scan_bytes": k.scan_bytes,
                        "cost_s": k.cost_s,
                        "gain_s": k.gain_s,
                        "eta": k.eta,
                    }
                    for k in c.candidates
                ],
            }
            for c in result.ranked
        ],
        "skipped": [{"job": s.job, "reason": s.reason} for s in result.skipped],
    }


def _facts(config: ExperimentConfig, variant: Variant, seed: int, start_us: int) -> RunSummary:
    """What a run's summary says of the run before its results: the variant, the seed, the
    window and the conditions."""
    return RunSummary(
        variant=variant.name,
        policy=variant.policy or variant.automation,
        note=variant.note,
        env=variant.env,
        seed=seed,
        window_s=config.window_s,
        conditions=_conditions(config),
        start_us=start_us,
        automation=variant.automation,
    )


def recovered_s(
    samples: Iterable[Sample], start_us: int, hold_end_s: float, target_s: float
) -> float | None:
    """Seconds from the hold's end until the first sampling instant at which every table
    was within `target_s` of staleness; None: not within the window."""
    by_instant: dict[int, list[float]] = {}
    for sample in samples:
        by_instant.setdefault(sample.at_us, []).append(sample.staleness_s)
    end_us = start_us + hold_end_s * US_PER_S
    for at_us in sorted(by_instant):
        if at_us >= end_us and max(by_instant[at_us]) <= target_s:
            return (at_us - end_us) / US_PER_S
    return None


def cut_off_runs(
    runs: Iterable[DagsterRunRecord], stop_at: float, drain_s: float | None = None
) -> int:
    """Failed runs that were still in flight when the stop's drain gave up (the Spark
    service stopped under them): the stop's doing, not the variant's. A peer's run of six
    steps can outlast the drain on a loaded machine."""
    from freshness_pipeline.runtime.stack import DRAIN_TIMEOUT_S

    limit = stop_at + (DRAIN_TIMEOUT_S if drain_s is None else drain_s)
    return sum(r.status == "FAILURE" and (r.end or 0) >= limit for r in runs)


def _conditions(config: ExperimentConfig) -> dict:
    """What must match for runs of different invocations to be compared."""
    conditions: dict[str, Any] = {
        "duration_s": config.duration_s,
        "rate": config.rate,
        "speedup": config.speedup,
        "universe_size": config.universe_size,
        "k": config.k,
        "tick_s": config.tick_s,
        "commit_interval_s": config.commit_interval_s,
    }
    if config.profile != "local":
        conditions["profile"] = config.profile  # only then: earlier local runs still match
    if config.layout != "published":
        conditions["layout"] = config.layout or "declared"  # runs before layouts: published
    if config.stream_config(0).bursty:
        # Only then: runs of a steady stream recorded before bursts existed still match.
        conditions.update(
            burst_every_s=config.burst_every_s,
            burst_s=config.burst_s,
            burst_factor=config.burst_factor,
        )
    if config.stream_config(0).spiky:
        conditions["spike_symbols"] = config.spike_symbols
    if config.raw_packing:
        conditions["raw_packing"] = True  # only then: earlier runs still match
    if config.warm_cost:
        conditions["warm_cost"] = True  # only then: earlier runs still match
    if config.wide_seed is not None:
        conditions["wide_seed"] = config.wide_seed
    if config.hold_s is not None:
        conditions["hold_s"] = list(config.hold_s)
        conditions["recovery_target_s"] = config.recovery_target_s
    if config.warmup_s:
        conditions["warmup_s"] = config.warmup_s  # only then: earlier runs still match
    return conditions


def _finished_run(config: ExperimentConfig, seed: int, variant: Variant) -> RunSummary | None:
    """The summary of this (seed, variant) from an earlier invocation, if it ran under
    the same conditions."""
    done = config.out_dir / f"seed{seed}" / variant.name
    if not (done / SUMMARY_FILE).exists():
        return None
    summary = read_summary(done)
    same = summary.conditions == _conditions(config)
    # e.g. interval runs at another period under the same name
    same = same and summary.env == variant.env
    # a report's seeds run on one commit: a run of other code is run again
    same = same and summary.commit == code_version() != UNKNOWN
    return summary if same else None


def machine_facts() -> dict:
    import dagster
    import pyspark

    mem_kb = 0
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        mem_kb = int(meminfo.read_text().split()[1])
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return {
        "commit": code_version(),
        "cpus": os.cpu_count(),
        "memory_gib": round(mem_kb / 2**20, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "java": java.splitlines()[0] if java else "unknown",
        "dagster": dagster.__version__,
        "pyspark": pyspark.__version__,
        "hudi_bundle": sorted(p.name for p in (PROJECT_ROOT / ".cache" / "jars").glob("*.jar")),
    }


def calibrate(config: ExperimentConfig, settings: Settings, progress: Progress) -> Path:
    """The cost prior every variant starts from: pmb on CALIBRATION_SEED, in its own
    folder (out_dir/calibration, never part of the report), fitted from its runs."""
    path = config.out_dir / "cost_prior.json"
    kept = json.loads(path.read_text()) if config.resume and path.exists() else {}
    if kept.get("commit") == code_version() != UNKNOWN:
        progress.say(f"cost prior kept from an earlier invocation: {shown_path(path)}")
        return path
    own = replace(config, out_dir=config.out_dir / "calibration", warm_cost=False)
    progress.say(f"calibration: pmb on seed {CALIBRATION_SEED}, for the cost prior")
    stream = record(own, CALIBRATION_SEED)
    progress.begin_run(CALIBRATION_SEED, "calibration")
    summary = run_variant(own, VARIANTS["pmb"], CALIBRATION_SEED, stream, settings, progress)
    runs = read_runs(summary.dir)
    source = f"calibration run: pmb on seed {CALIBRATION_SEED}, {config.window_s:.0f} s window"
    prior = cost_prior_from_runs(runs, source, summary.jobs)
    path.write_text(json.dumps({**prior.to_json(), "commit": code_version()}, indent=1))
    log.info("cost prior: %s", prior.source)
    return path


def run_experiment(
    config: ExperimentConfig, settings: Settings, progress: Progress | None = None
) -> list[RunSummary]:
    config.out_dir.mkdir(parents=True, exist_ok=True)
    facts = {"config": {**asdict(config), "out_dir": shown_path(config.out_dir)}, **machine_facts()}
    (config.out_dir / "experiment.json").write_text(json.dumps(facts, indent=1, default=str))
    summaries = []
    runs = len(config.seeds) * len(config.variants) + int(config.warm_cost)
    progress = progress or Progress(runs, config.window_s)
    if config.wide_seed is not None:
        spec = plain_wide_spec(config.wide_seed)
        plain_wide_file(config).write_text(json.dumps(spec, indent=1))
    if config.wide_seed is not None and config.jobs_dirs is None:
        folder = config.out_dir / f"wide-seed{config.wide_seed}"
        write_wide(folder, config.wide_seed)
        config = replace(config, jobs_dirs=f"{BUNDLED_JOBS_DIR}:{folder}")
    if config.warm_cost:
        config = replace(config, cost_prior=calibrate(config, settings, progress))
    for seed in config.seeds:
        progress.say(f"seed {seed}: recording (or reusing) its stream")
        stream = record(config, seed)
        for variant in config.variants:
            kept = _finished_run(config, seed, variant) if config.resume else None
            if kept is not None:
                log.info("seed %d, %s: kept from an earlier invocation", seed, variant.name)
                progress.kept(seed, variant.name)
                summaries.append(kept)
                continue
            progress.begin_run(seed, variant.name)
            summaries.append(
                run_variant(config, variant, seed, stream, settings, progress=progress)
            )
    return summaries
