"""`make chaos`: a live pipeline with faults injected at random points, then a drain and
both oracles.

    freshness lab chaos --faults 50 --duration 1200 --report docs/RELIABILITY.md
    freshness lab chaos --faults 4 --duration 60      # the short version

The stack (Spark service, ingestion, Dagster daemon with the sensor) runs a seeded stream
on a fresh lakehouse. At seeded random moments during the stream a fault of the next kind
(in a seeded shuffled rotation) is injected:

- `kill_run`: SIGKILL to the worker process of a run in flight (Hudi commit or not);
- `kill_spark_service`: SIGKILL to the Spark Connect server (every run in it dies);
- `kill_ingest`: SIGKILL to ingestion's process group (its Spark JVM with it);
- `kill_daemon`: SIGKILL to Dagster's process groups: the daemon's and the code
  server's (with the run workers it launched);
- `fail_write`: the next run of a random job fails after writing its files, before its
  commit (`faults.py`);
- `kill_in_commit`: SIGKILL to the Spark service while a job's Hudi commit is inflight;
- `kill_between_steps`: SIGKILL to the worker of a chained run after one of its steps
  committed and before the next did (what committed must stay, the rest be redone).

Fifty faults over 1,200 s is one every 24 s on average: runs take 5-20 s here, so the
pipeline completes runs between faults (over 600 s it hardly completed any, and the
commit-time fault found no commit to hit).

The stack's supervisor restarts what died and marks runs whose worker died as failed; the
sensor retries failed decisions after a backoff. Once the stream has ended, the pipeline
must drain (every table at the raw tables' final watermark); then the six tables are
compared with the batch SQL oracle and the independent pandas oracle. Bounded: it stops
by itself after the stream, the drain timeout and the comparison.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.lab.reliability.report_sections import write_section
from freshness_pipeline.runtime import faults
from freshness_pipeline.runtime.code_version import code_version
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.run_plan import RunPlan
from freshness_pipeline.stream.generator import StreamConfig

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("freshness.chaos")
FAULT_KINDS = (
    "kill_run",
    "kill_spark_service",
    "kill_ingest",
    "kill_daemon",
    "fail_write",
    "kill_in_commit",
    "kill_between_steps",
)
# Faults that wait for a moment (a commit in flight, a chain mid-way) that the faults
# behind them would keep from coming: those are held back while one waits.
WAITING_KINDS = ("kill_in_commit", "kill_between_steps")
BETWEEN_STEPS_WAIT_S = 5.0  # how long kill_between_steps watches for a chain mid-way per try
IN_COMMIT_WAIT_S = 3.0  # how long kill_in_commit watches for an inflight commit per try
GIVE_UP_S = 120.0  # a fault that finds no target for this long is recorded as skipped
LIVE_INFLIGHT_S = 15.0  # an inflight commit younger than this is taken to be in progress


@dataclass(frozen=True)
class ChaosConfig:
    faults: int = 50
    duration_s: int = 900  # event-time seconds of stream (replayed in real time)
    seed: int = 1
    rate: float = 300.0
    universe_size: int = 300
    drain_timeout_s: float = 900.0
    out_dir: Path = PROJECT_ROOT / ".lakehouse" / "chaos"
    kinds: tuple[str, ...] = FAULT_KINDS


@dataclass
class FaultRecord:
    kind: str
    at_s: float  # seconds since the stream started
    target: str  # what was hit
    injected: bool = True


@dataclass
class ChaosResult:
    config: dict
    faults: list[FaultRecord] = field(default_factory=list)
    supervisor_events: list[str] = field(default_factory=list)
    drained: bool = False
    drain_s_after_last_fault: float | None = None
    # From the later of the last fault and the stream's end: while the stream still
    # flows the pipeline is live, not draining, so that time says nothing of recovery.
    drain_s_after_quiet: float | None = None
    runs: dict[str, int] = field(default_factory=dict)
    oracle: dict[str, dict] = field(default_factory=dict)

    @property
    def rows_lost(self) -> int:
        return sum(o["missing"] for o in self.oracle.values())

    @property
    def rows_doubled(self) -> int:
        return sum(o["extra"] for o in self.oracle.values())

    @property
    def survived(self) -> bool:
        mismatched = sum(o.get("mismatched", 0) for o in self.oracle.values())
        unreadable = any(o.get("unreadable") for o in self.oracle.values())
        return self.drained and not (
            self.rows_lost or self.rows_doubled or mismatched or unreadable
        )


def _watermark(lakehouse: Lakehouse, table: str) -> int | None:
    try:
        return HudiTableMetadata(lakehouse.table(table)).watermark_us()
    except TableNotFound:
        return None


def _daemon_pid(stack) -> int:
    return stack.process("dagster").pid


class Injector:
    """Injects one fault of a kind into a running stack; returns what it hit, or None when
    the target is not there right now (no run in flight), so the caller tries later."""

    def __init__(
        self, stack, faults_dir: Path, rng: random.Random, lakehouse: Lakehouse | None = None
    ) -> None:
        self.stack, self.faults_dir, self.rng = stack, faults_dir, rng
        self.lakehouse = lakehouse
        # Commits a kill_in_commit already hit: their inflight marks stay (young) after
        # the kill until rolled back, and must not draw a second kill of a restarted
        # service that is committing nothing (run 6: two kills named one commit).
        self.hit_commits: set[tuple[str, str]] = set()

    def __call__(self, kind: str) -> str | None:
        return getattr(self, kind)()

    def kill_run(self) -> str | None:
        import dagster as dg

        from freshness_pipeline.runtime.stack import pid_alive, run_worker_pid

        with dg.DagsterInstance.from_config(str(self.stack.dagster_home)) as instance:
            started = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
            candidates = []
            for run in started:
                pid = run_worker_pid(instance, run.run_id)
                if pid is not None and pid_alive(pid):
                    candidates.append((run, pid))
        if not candidates:
            return None
        run, pid = self.rng.choice(candidates)
        os.kill(pid, signal.SIGKILL)
        assets = ", ".join(k.to_user_string() for k in run.asset_selection or [])
        return f"run {run.run_id[:8]} ({assets}) pid {pid}"

    def kill_spark_service(self) -> str | None:
        service = self.stack.service
        if service is None or service.process is None or service.process.poll() is not None:
            return None
        os.kill(service.pid, signal.SIGKILL)
        return f"Spark service pid {service.pid}"

    def kill_ingest(self) -> str | None:
        proc = self.stack.process("ingest")
        if proc.poll() is not None:
            return None
        os.killpg(proc.pid, signal.SIGKILL)  # its Spark JVM dies with it
        return f"ingestion process group {proc.pid}"

    def kill_daemon(self) -> str | None:
        killed = []
        for name in ("dagster", "code-server"):  # the code server: a child of its own
            proc = self.stack.process(name) if name in self.stack.pids() else None
            if proc is None or proc.poll() is not None:
                continue
            os.killpg(proc.pid, signal.SIGKILL)
            killed.append(f"{name} {proc.pid}")
        return f"Dagster process groups ({', '.join(killed)})" if killed else None

    def kill_in_commit(self) -> str | None:
        """SIGKILL the Spark service while a job's Hudi commit is inflight (its files are
        written, its commit is not complete): the worst moment for a writer. The half-done
        commit must be rolled back (lazily, once its heartbeat expires) and never read."""
        service = self.stack.service
        if self.lakehouse is None or service is None or service.process is None:
            return None
        deadline = time.monotonic() + IN_COMMIT_WAIT_S
        while time.monotonic() < deadline:
            if service.process.poll() is not None:
                return None
            found = _inflight_commit(self.lakehouse, exclude=self.hit_commits)
            if found is not None:
                self.hit_commits.add(found)
                os.kill(service.pid, signal.SIGKILL)
                return f"Spark service pid {service.pid} during {found[0]}'s commit {found[1]}"
            time.sleep(0.05)
        return None

    def kill_between_steps(self) -> str | None:
        """SIGKILL the worker of a chained run once at least one of its steps has
        committed and not all have: the steps that committed stay committed and correct,
        the next plan starts from there."""
        import dagster as dg

        from freshness_pipeline.runtime.stack import pid_alive, run_worker_pid

        deadline = time.monotonic() + BETWEEN_STEPS_WAIT_S
        with dg.DagsterInstance.from_config(str(self.stack.dagster_home)) as instance:
            while time.monotonic() < deadline:
                started = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
                for run in started:
                    steps = {k.to_user_string() for k in run.asset_selection or ()}
                    if len(steps) < 2:
                        continue
                    done = _materialized_in(instance, run.run_id)
                    if not done or done >= steps:
                        continue
                    pid = run_worker_pid(instance, run.run_id)
                    if pid is None or not pid_alive(pid):
                        continue
                    os.kill(pid, signal.SIGKILL)
                    return (
                        f"run {run.run_id[:8]} pid {pid} after {', '.join(sorted(done))} "
                        f"committed, before {', '.join(sorted(steps - done))}"
                    )
                time.sleep(0.2)
        return None

    def fail_write(self) -> str | None:
        job = self.rng.choice(list(JOBS))
        faults.arm(self.faults_dir, job, 1)
        return f"next {job} run fails before its commit"


def _materialized_in(instance, run_id: str) -> set[str]:
    """The assets a run has materialized so far."""
    import dagster as dg

    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION
    ).records
    return {
        r.event_log_entry.dagster_event.asset_key.to_user_string()
        for r in records
        if r.event_log_entry.dagster_event is not None
        and r.event_log_entry.dagster_event.asset_key is not None
    }


def _inflight_commit(
    lakehouse: Lakehouse, exclude: set[tuple[str, str]] | frozenset = frozenset()
) -> tuple[str, str] | None:
    """(job, instant) of a job commit that is inflight right now, if any, other than those
    in `exclude`. Timeline layout 2 names an inflight commit `<instant>.inflight` (other
    actions `<instant>.<action>.inflight`) and a completed one `<instant>_<completion>.commit`."""
    for job in JOBS:
        timeline = lakehouse.table(job).local_path() / ".hoodie" / "timeline"
        try:
            names = os.listdir(timeline)
        except FileNotFoundError:
            continue
        done = {n.split("_", 1)[0] for n in names if n.endswith(".commit") and "_" in n}
        for name in names:
            if name.endswith((".commit.inflight", ".inflight")) and name.count(".") <= 2:
                instant = name.split(".", 1)[0]
                if (
                    instant.isdigit()
                    and instant not in done
                    and ".rollback." not in name
                    and (job, instant) not in exclude
                ):
                    # A failed write's inflight stays until it is rolled back (lazily);
                    # only one begun in the last seconds is a commit in progress.
                    try:
                        age_s = time.time() - os.stat(timeline / name).st_mtime
                    except FileNotFoundError:
                        continue  # completed meanwhile
                    if age_s < LIVE_INFLIGHT_S:
                        return job, instant
    return None


def fault_schedule(config: ChaosConfig, rng: random.Random) -> list[tuple[float, str]]:
    """(seconds after the stream starts, kind), spread over the stream's first 90 %."""
    kinds = [config.kinds[i % len(config.kinds)] for i in range(config.faults)]
    rng.shuffle(kinds)
    span = config.duration_s * 0.9
    times = sorted(rng.uniform(5, max(6.0, span)) for _ in range(config.faults))
    return list(zip(times, kinds, strict=True))


def run_chaos(config: ChaosConfig, settings: Settings) -> ChaosResult:
    from freshness_pipeline.runtime.stack import Stack, StackConfig

    rng = random.Random(config.seed)
    out = config.out_dir
    out.mkdir(parents=True, exist_ok=True)
    run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=out))
    home, faults_dir = run_dir / "dagster_home", run_dir / "faults"
    home.mkdir()
    (home / "dagster.yaml").write_text((PROJECT_ROOT / "dagster.yaml").read_text())
    lakehouse = Lakehouse.parse(str(run_dir / "tables"))
    env = {
        "FRESHNESS_LAKEHOUSE": lakehouse.uri,
        "FRESHNESS_LANDING": str(run_dir / "landing"),
        "FRESHNESS_TICK_S": "5",
        "FRESHNESS_FAULTS_DIR": str(faults_dir),
        "FRESHNESS_SPARK_SERVICE_PORT": str(free_port()),
        "FRESHNESS_SPARK_REMOTE": "",
    }
    stack = Stack(
        StackConfig(
            stream=StreamConfig(
                seed=config.seed, rate=config.rate, universe_size=config.universe_size
            ),
            malformed_rate=0.0,
            commit_interval_s=5.0,
            duration_s=config.duration_s,
            webserver=False,
            dagster_home=home,
            logs_dir=run_dir / "logs",
            env=env,
        ),
        settings,
    )
    result = ChaosResult(
        config={
            **asdict(config),
            "out_dir": str(run_dir),
            # what the report measured: taken at the start, as the experiment's runs do
            "commit": code_version(),
            "chains": settings.scheduler.chains,
            "layout": settings.layout or "declared",
        }
    )
    inject = Injector(stack, faults_dir, rng, lakehouse)
    log.info(
        "chaos: %d faults over %d s of stream in %s", config.faults, config.duration_s, run_dir
    )
    stack.start()
    try:
        started = time.monotonic()
        pending = fault_schedule(config, rng)
        first_tried: dict[tuple[float, str], float] = {}
        last_fault = stream_end = started
        streaming = True
        while pending or streaming:
            now = time.monotonic() - started
            _inject_next_due(pending, now, inject, result, config, first_tried)
            if result.faults and result.faults[-1].injected:
                last_fault = max(last_fault, started + result.faults[-1].at_s)
            result.supervisor_events += stack.supervise()
            if streaming and stack.process("replay").poll() is not None:
                streaming, stream_end = False, time.monotonic()
            time.sleep(1.0)
        result.drained, drained_at = _drain(stack, lakehouse, config.drain_timeout_s, result)
        if result.drained:
            result.drain_s_after_last_fault = round(drained_at - last_fault, 1)
            result.drain_s_after_quiet = round(drained_at - max(last_fault, stream_end), 1)
        result.runs = run_counts(home)
    finally:
        stack.stop()
    result.oracle = compare_with_oracles(stack.settings, lakehouse, run_dir / "oracle")
    (run_dir / "chaos.json").write_text(json.dumps(_as_json(result), indent=1))
    return result


def _inject_next_due(
    pending: list[tuple[float, str]],
    now: float,
    inject: Callable[[str], str | None],
    result: ChaosResult,
    config: ChaosConfig,
    first_tried: dict[tuple[float, str], float],
) -> None:
    """Injects at most one due fault: the first due one whose target is there now. A fault
    whose target is missing (no run in flight) does not hold up the faults behind it, but
    for the WAITING_KINDS: while one waits for a commit in flight or a chain mid-way, the
    faults behind it are held back, because they are what starves it (every Spark service
    kill fails the runs in flight and every kill_run ends one before its commit: runs 4
    and 5 of the campaign left 7 and 2 kill_in_commit uninjected, and with chains all 7
    kill_between_steps found no chain past its first step). A fault that finds nothing
    for GIVE_UP_S after its first try (`first_tried`, kept by the caller, so a held
    fault's clock starts when it is first tried) is recorded as skipped."""
    for index, (at, kind) in enumerate(pending):
        if at > now:
            return
        tried_at = first_tried.setdefault((at, kind), now)
        target = inject(kind)
        if target is not None:
            pending.pop(index)
            result.faults.append(FaultRecord(kind, round(now, 1), target))
            injected = sum(f.injected for f in result.faults)
            log.info("fault %d/%d at %.0f s: %s: %s", injected, config.faults, now, kind, target)
            return
        if now > tried_at + GIVE_UP_S:
            pending.pop(index)
            result.faults.append(FaultRecord(kind, round(now, 1), "-", False))
            return
        if kind in WAITING_KINDS:
            return


def _drain(stack, lakehouse: Lakehouse, timeout_s: float, result: ChaosResult):
    """Waits (supervising) until every job reflects the raw tables' final watermark."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result.supervisor_events += stack.supervise()
        landed = any(stack.settings.landing_dir.rglob("*.jsonl"))
        raw = [_watermark(lakehouse, t) for t in RAW_TABLES]
        final = input_cap(raw)  # None while a raw table has no watermark
        caught_up = final is not None and all(_watermark(lakehouse, j) == final for j in JOBS)
        if not landed and caught_up:
            return True, time.monotonic()
        time.sleep(2.0)
    return False, time.monotonic()


def run_counts(home: Path) -> dict[str, int]:
    import dagster as dg

    counts: dict[str, int] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            counts[run.status.value] = counts.get(run.status.value, 0) + 1
            plan = RunPlan.from_run(run)  # None: not a sensor run (never a retry)
            if plan is not None and plan.attempt:
                counts["retries"] = counts.get("retries", 0) + 1
    return counts


def raw_duplicates(events, key: str) -> tuple[int, list[str]]:
    """(events stored more than once, a few of their keys) in a raw table's rows."""
    counts = events[key].value_counts()
    twice = counts[counts > 1]
    return int((twice - 1).sum()), [str(k) for k in twice.index[:3]]


def compare_with_oracles(
    settings: Settings, lakehouse: Lakehouse, scratch: Path
) -> dict[str, dict]:
    """Per table: rows the table lacks (lost), rows it has beyond the oracle (doubled or
    stale), by the batch SQL oracle and the independent pandas one; per raw table, the
    events it stores twice. Both oracles recompute from the raw tables, so a raw event
    stored twice would pass them unseen when the jobs read it twice too (run 6 caught one
    only because the jobs had read the table before the copy appeared)."""
    from freshness_pipeline.execution import oracle
    from freshness_pipeline.execution.batch_oracle import batch_recompute, differences
    from freshness_pipeline.hudi.write import RAW_LAYOUTS
    from freshness_pipeline.runtime.spark import build_spark_session

    found: dict[str, dict] = {}
    for table in RAW_TABLES:
        doubled, keys = raw_duplicates(
            oracle.read_table(lakehouse.table(table)), RAW_LAYOUTS[table].record_key
        )
        found[table] = {"missing": 0, "extra": doubled, "mismatched": 0, "examples": keys}
    found |= oracle_findings(
        oracle.recompute_lakehouse(lakehouse.table),
        lambda name: oracle.read_table(lakehouse.table(name)),
    )
    from pyspark.sql import SparkSession

    # A session already running in this process (the test suite's) is reused, not stopped.
    existing = SparkSession.getActiveSession()
    spark = existing or build_spark_session(
        settings, master="local[2]", remote="", app_name="chaos_oracle"
    )
    try:
        expected = batch_recompute(spark, lakehouse.table_uri, scratch, lakehouse.metadata)
        for job in JOBS:
            if found[job].get("unreadable"):
                continue  # counted as lost whole above; Spark cannot read it either
            missing, extra, _ = differences(spark, expected[job], lakehouse.table_uri(job))
            found[job]["missing"] = max(found[job]["missing"], int(missing))
            found[job]["extra"] = max(found[job]["extra"], int(extra))
            found[job]["batch_sql"] = {"missing": int(missing), "extra": int(extra)}
    finally:
        if existing is None:
            spark.stop()
    return found


def oracle_findings(
    expected: Mapping[str, pd.DataFrame], read: Callable[[str], pd.DataFrame]
) -> dict[str, dict]:
    """Per derived table, what the independent oracle finds: `expected` its recomputed
    rows, `read` the table's own. A table no reader can open (a write killed half-way
    through its creation, say) is a finding, not a crash of the report: all its rows count
    as lost and the reason is kept."""
    from freshness_pipeline.execution import oracle

    found: dict[str, dict] = {}
    for name, frame in expected.items():
        try:
            actual = read(name)
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            found[name] = {"missing": len(frame), "extra": 0, "unreadable": reason}
            continue
        difference = oracle.compare(name, frame, actual)
        found[name] = {
            "missing": difference.missing,
            "extra": difference.extra,
            "mismatched": sum(difference.mismatched.values()),
            "examples": list(difference.examples),
        }
    return found


def _as_json(result: ChaosResult) -> dict:
    data = asdict(result)
    data |= {
        "rows_lost": result.rows_lost,
        "rows_doubled": result.rows_doubled,
        "survived": result.survived,
    }
    return data


def _met(value: float | None, limit: float) -> str:
    return "met" if value is not None and value <= limit else "**missed**"


def report_markdown(result: ChaosResult, command: str) -> str:
    injected = [f for f in result.faults if f.injected]
    by_kind = {k: sum(f.kind == k for f in injected) for k in FAULT_KINDS}
    restarts = [e for e in result.supervisor_events if "restarted" in e]
    orphaned = [e for e in result.supervisor_events if "lost its worker" in e]
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(result.runs.items()))
    lines = [
        "# Reliability",
        "",
        f"Produced by `{command}` on {time.strftime('%Y-%m-%d', time.gmtime())} "
        f"({os.cpu_count()} cores). Each fault hits a live pipeline (Spark service, "
        "ingestion, Dagster daemon and sensor) on a seeded stream; then the stream ends, the "
        "pipeline drains, and all six tables are compared with the batch SQL oracle and the "
        "independent pandas oracle (`freshness_pipeline/execution/oracle.py`).",
        "",
        f"Code: commit `{result.config.get('commit', 'unknown')}`; chains "
        f"`{result.config.get('chains', 'unknown')}` (FRESHNESS_CHAINS); tables' layout "
        f"`{result.config.get('layout', 'published')}` (FRESHNESS_LAYOUT; `declared`: each "
        "job's own, by event hour; `published`: the thesis's, by the symbol's first letter).",
        "",
        "| figure | value |",
        "|---|---|",
        f"| faults injected | {len(injected)} of {result.config['faults']} planned "
        f"({len(result.faults) - len(injected)} found no target within {GIVE_UP_S:.0f} s) |",
        *[f"| - {kind} | {count} |" for kind, count in by_kind.items()],
        f"| processes restarted by the supervisor | {len(restarts)} |",
        f"| runs marked failed after their worker died | {len(orphaned)} |",
        f"| runs by final status | {statuses} |",
        f"| drained | {'yes' if result.drained else 'NO'} |",
        f"| drain time after the last fault and the stream's end | "
        f"{result.drain_s_after_quiet} s (target 300 s: {_met(result.drain_s_after_quiet, 300)}) |",
        f"| drain time after the last fault alone | {result.drain_s_after_last_fault} s "
        "(includes any stream left after it) |",
        f"| rows lost (oracle rows missing from a table) | {result.rows_lost} |",
        f"| rows doubled or stale (table rows not in the oracle; in a raw table, events "
        f"stored twice) | {result.rows_doubled} |",
        f"| verdict | {'survived' if result.survived else 'FAILED'} |",
        "",
        "Per table:",
        "",
        "| table | missing | extra | doubles off | batch SQL oracle (missing, extra) |",
        "|---|---|---|---|---|",
    ]
    for table, o in result.oracle.items():
        batch = o.get("batch_sql", {})
        lines.append(
            f"| {table} | {o['missing']} | {o['extra']} | {o.get('mismatched', 0)} | "
            f"{batch.get('missing', '-')}, {batch.get('extra', '-')} |"
        )
    unreadable = [(t, o["unreadable"]) for t, o in result.oracle.items() if o.get("unreadable")]
    if unreadable:
        lines += ["", "Tables no reader could open (their rows counted as lost):", ""]
        lines += [f"- {table}: {reason}" for table, reason in unreadable]
    lines += ["", "Faults in order:", "", "| at (s) | kind | target |", "|---|---|---|"]
    lines += [f"| {f.at_s} | {f.kind} | {f.target} |" for f in result.faults]
    return "\n".join(lines) + "\n"


def main(argv: list[str], settings: Settings) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    parser = argparse.ArgumentParser(prog="freshness lab chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--faults", type=int, default=50)
    parser.add_argument("--duration", type=int, default=900, help="event-time seconds")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--drain-timeout", type=float, default=900.0)
    parser.add_argument("--out", type=Path, default=ChaosConfig.out_dir)
    parser.add_argument("--report", type=Path, help="write the Markdown report here")
    args = parser.parse_args(argv)
    if args.faults < 1 or args.duration < 20:
        parser.error("--faults must be at least 1 and --duration at least 20 s")
    config = ChaosConfig(
        faults=args.faults,
        duration_s=args.duration,
        seed=args.seed,
        rate=args.rate,
        drain_timeout_s=args.drain_timeout,
        out_dir=args.out,
    )
    from freshness_pipeline.runtime.stack import exit_on_signals

    exit_on_signals()
    result = run_chaos(config, settings)
    command = "freshness lab chaos " + " ".join(argv)
    text = report_markdown(result, command.strip())
    if args.report:
        write_section(args.report, "chaos", text)
    print(text)
    return 0 if result.survived else 1
