"""What a fresh Spark service and ingestion's driver cost for the same work, arm by arm: a
JVM setting measured without the experiment's closed loop.

    freshness lab fresh-cost [--arms 'NAME=JVM OPTIONS;NAME=...'] [--repeats 3]
        [--rounds 8] [--round-s 10] [--rate 300]

Each arm runs in a process of its own, the arms alternating `--repeats` times: a new
lakehouse, a new Spark service and a new local driver for ingestion, both JVMs with the
arm's options: JVM options (FRESHNESS_SPARK_JAVA_OPTIONS) and settings written as
`FRESHNESS_X=VALUE` words (`jvm=FRESHNESS_SPARK_GC=java FRESHNESS_SPARK_COMPILE_SCALING=1`:
the JVM's own collector and thresholds). The first arm is the one the others are set
against, usually empty: the project's defaults.
Then per round `--round-s` seconds of the market stream at `--rate` events/s are landed and
ingested into both raw tables by the driver, and the six jobs run once each through the
service, each step in a Connect session of its own as a Dagster run has. Each round
records each JVM's CPU from /proc (every thread's, the JIT's and the collector's among
them) and the steps' wall time. The stream, its seed and the work are the same in every
run, so the arms differ by their JVMs alone. The experiment's window (`freshness
experiment --mode long`) instead lets the scheduler turn a cheaper refresh into more
refreshes, so one run a side there says little about a JVM setting: this is the
measurement to take first. The layout is the settings' (FRESHNESS_LAYOUT).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from freshness_pipeline.config.settings import Settings, child_environment
from freshness_pipeline.lab.bench.jvm_profile import java_pids, thread_kind, thread_ticks

JAVA_OPTIONS = "FRESHNESS_SPARK_JAVA_OPTIONS"
DEFAULT_ARMS = "default=;jvm=FRESHNESS_SPARK_GC=java FRESHNESS_SPARK_COMPILE_SCALING=1"


@dataclass(frozen=True)
class Round:
    """One round's cost: each JVM's CPU seconds (all threads; the JIT compiler's part) and
    the wall seconds of its ingestion and of the six steps."""

    service_cpu_s: float
    service_jit_s: float
    driver_cpu_s: float
    driver_jit_s: float
    ingest_s: float
    steps_s: float


@dataclass(frozen=True)
class ArmRun:
    arm: str
    options: str
    start_cpu_s: float  # the service's CPU from its launch to the first round
    rounds: tuple[Round, ...]


def parse_arms(text: str) -> list[tuple[str, str]]:
    """`NAME=OPTIONS;NAME=OPTIONS` as (name, options); names unique, at least two arms."""
    arms = []
    for part in text.split(";"):
        name, sep, options = part.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"an arm is NAME=JVM OPTIONS (options may be empty), got {part!r}")
        arms.append((name, options.strip()))
    names = [name for name, _ in arms]
    if len(set(names)) != len(names) or len(arms) < 2:
        raise ValueError(f"at least two arms with different names, got {names}")
    return arms


def arm_environment(options: str) -> dict[str, str]:
    """An arm's variables for its process: words `FRESHNESS_X=VALUE` are settings of their
    own (e.g. FRESHNESS_SPARK_GC=java for the JVM's collector), the rest JVM options
    (FRESHNESS_SPARK_JAVA_OPTIONS, after the settings' own)."""
    words = options.split()
    found = dict(w.split("=", 1) for w in words if w.startswith("FRESHNESS_") and "=" in w)
    jvm = [w for w in words if not (w.startswith("FRESHNESS_") and "=" in w)]
    return {**found, JAVA_OPTIONS: " ".join(jvm)}


def order(arms: Sequence[tuple[str, str]], repeats: int) -> list[tuple[str, str]]:
    """Every arm once per repeat, the order reversed on every other repeat (ABBA), so a
    drift of the machine falls on each arm alike."""
    runs: list[tuple[str, str]] = []
    for repeat in range(repeats):
        runs += list(arms) if repeat % 2 == 0 else list(reversed(arms))
    return runs


def _cpu_s(pid: int, hz: int) -> tuple[float, float]:
    """A JVM's CPU seconds (the whole process, threads that ended included) and its live
    JIT compiler threads'."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[11]) + int(fields[12])) / hz
    threads = thread_ticks(pid)  # keyed `<tid> <name>`
    jit = sum(t for key, t in threads.items() if thread_kind(key.split(" ", 1)[1]) == "jit")
    return total, jit / hz


def summary(runs: Sequence[ArmRun], skip: int = 1) -> list[str]:
    """Per arm, the medians over its repeats of: the service's start, its CPU for the six
    steps of every round after the first `skip` (a fresh JVM's first round is mostly its
    start), and ingestion's driver per round; then each arm against the first, pair by
    pair (the i-th repeat of each)."""
    arms = list(dict.fromkeys(run.arm for run in runs))

    fields = {
        "service": "service_cpu_s",
        "service_jit": "service_jit_s",
        "driver": "driver_cpu_s",
        "driver_jit": "driver_jit_s",
        "steps": "steps_s",
    }

    def per_run(run: ArmRun) -> dict[str, float]:
        kept = run.rounds[skip:] or run.rounds
        means = {key: statistics.mean(getattr(r, f) for r in kept) for key, f in fields.items()}
        return {"start": run.start_cpu_s, **means}

    figures = {arm: [per_run(r) for r in runs if r.arm == arm] for arm in arms}
    lines = [
        "| arm | runs | service start (CPU-s) | service per round of six steps (CPU-s) | "
        "its JIT | six steps' wall (s) | ingestion's driver per round (CPU-s) | its JIT | "
        "service / first arm's (pairs) | driver / first arm's (pairs) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = figures[arms[0]]
    for arm in arms:
        rows = figures[arm]
        med = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
        paired = {
            key: ", ".join(
                f"{a[key] / b[key]:.2f}" for a, b in zip(rows, base, strict=False) if b[key]
            )
            if arm != arms[0]
            else "-"
            for key in ("service", "driver")
        }
        lines.append(
            f"| {arm} | {len(rows)} | {med['start']:.1f} | {med['service']:.1f} | "
            f"{med['service_jit']:.1f} | {med['steps']:.1f} | {med['driver']:.2f} | "
            f"{med['driver_jit']:.2f} | {paired['service']} | {paired['driver']} |"
        )
    return lines


def run_arm(settings: Settings, arm: str, rounds: int, round_s: int, rate: float) -> ArmRun:
    """One arm in this process: a fresh lakehouse, service and driver, `rounds` rounds."""
    from freshness_pipeline.lab.bench.common import temp_lakehouse
    from freshness_pipeline.lab.bench.incremental_growth import Growing
    from freshness_pipeline.runtime.spark import build_spark_session, ingestion_java_options

    hz = os.sysconf("SC_CLK_TCK")
    # the driver ingests, as ingestion's own driver does (with its JVM options)
    settings, spark = temp_lakehouse(
        "bench_fresh_cost_", settings, java_options=ingestion_java_options(settings)
    )
    growing = Growing(spark, settings, rate)
    service = growing.through_service()
    try:
        assert service.process is not None
        service_pid = java_pids(service.process.pid)[0]
        driver_pid = next(p for p in java_pids(os.getpid()) if p != service_pid)
        start_cpu_s, _ = _cpu_s(service_pid, hz)
        found = []
        for _ in range(rounds):
            service_before, driver_before = _cpu_s(service_pid, hz), _cpu_s(driver_pid, hz)
            began = time.monotonic()
            growing.land_and_ingest(round_s)
            ingested = time.monotonic()
            growing.catch_up(new_session=lambda: build_spark_session(settings, remote=service.url))
            done = time.monotonic()
            service_after, driver_after = _cpu_s(service_pid, hz), _cpu_s(driver_pid, hz)
            found.append(
                Round(
                    service_cpu_s=service_after[0] - service_before[0],
                    service_jit_s=service_after[1] - service_before[1],
                    driver_cpu_s=driver_after[0] - driver_before[0],
                    driver_jit_s=driver_after[1] - driver_before[1],
                    ingest_s=ingested - began,
                    steps_s=done - ingested,
                )
            )
            print(f"[{arm}] round {len(found)}: {found[-1]}", file=sys.stderr, flush=True)
    finally:
        spark.stop()
        service.stop()
    return ArmRun(arm, settings.spark_java_options or "", start_cpu_s, tuple(found))


def _read(path: Path) -> ArmRun:
    data = json.loads(path.read_text())
    return ArmRun(
        data["arm"],
        data["options"],
        data["start_cpu_s"],
        tuple(Round(**r) for r in data["rounds"]),
    )


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab fresh-cost", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--arms", default=DEFAULT_ARMS, help="NAME=JVM OPTIONS;NAME=...")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--round-s", type=int, default=10)
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--out", type=Path, help="a folder for each run's rounds (JSON)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one arm, in this process
    args = parser.parse_args(argv)
    if args.child:
        from freshness_pipeline.runtime.stack import exit_on_signals

        exit_on_signals()  # a kill unwinds, so the Spark service it started stops
        run = run_arm(settings, args.child, args.rounds, args.round_s, args.rate)
        args.out.write_text(json.dumps(asdict(run)))
        return 0
    arms = parse_arms(args.arms)
    out = args.out or Path(tempfile.mkdtemp(prefix="fresh-cost-"))
    out.mkdir(parents=True, exist_ok=True)
    runs = []
    for index, (name, options) in enumerate(order(arms, args.repeats), start=1):
        path = out / f"{index:02d}-{name}.json"
        env = child_environment(settings, extra=arm_environment(options))
        command = [
            sys.executable, "-m", "freshness_pipeline.cli", "lab", "fresh-cost",
            "--child", name, "--out", str(path), "--rounds", str(args.rounds),
            "--round-s", str(args.round_s), "--rate", str(args.rate),
        ]  # fmt: skip
        print(f"run {index}: {name} ({options or 'the settings as they are'})", flush=True)
        subprocess.run(command, env=env, check=True)
        runs.append(_read(path))
    lines = [
        f"`freshness lab fresh-cost --arms '{args.arms}' --repeats {args.repeats} "
        f"--rounds {args.rounds} --round-s {args.round_s} --rate {args.rate:g}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} cores, "
        f"layout {settings.layout or 'each declaration'}'s; rounds after the first:",
        "",
        *summary(runs),
    ]
    print("\n".join(lines))
    print(f"each run's rounds: {out}", file=sys.stderr)
    return 0
