"""Ingestion benchmark: capacity on a backlog, then a live run at the target rate.

    freshness lab ingest-rate [--rate 15000] [--backlog-s 60] [--live-s 300]
        [--rounds 3]
    freshness lab ingest-rate --rounds 0 --rate 300 --live-s 300
        (the live run alone, on a fresh JVM: what ingestion costs a deployment at a rate)

1. Capacity: land `backlog_s` seconds of stream at `rate` at once, then ingest it in
   commits of `batch_s` landed seconds each; prints events/s and seconds per commit,
   with read-ahead (validation beside the commit) off and on in turn, `rounds` times.
2. Live: the replayer (a separate process) lands `rate` events/s in real time while the
   ingestion loop commits every `commit_interval` s; prints events/s committed, the
   arrival-to-commit latency per commit (median, p95), the backlog left at the end, the
   throughput between the first and last commit and the backlog after each cycle, and
   what it cost: the ingestion JVM's CPU over the window in cores (from /proc, the JIT's
   and GC's threads included; apart, the processes it started) and per commit, with the
   commits' own Spark tasks and CPU as each commit records them (hudi/step_cpu.py),
   first and second half apart.
The lakehouse is a temporary folder; nothing of the project's own data is touched.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

from freshness_pipeline.config.settings import Settings, child_environment
from freshness_pipeline.scheduling.units import US_PER_S


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab ingest-rate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rate", type=float, default=15_000.0)
    parser.add_argument("--backlog-s", type=int, default=60)
    parser.add_argument("--batch-s", type=int, default=10)
    parser.add_argument("--live-s", type=float, default=300.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commit-interval", type=float, default=10.0)
    parser.add_argument(
        "--clean-every", type=int, default=None, help="IngestConfig.clean_every (live run)"
    )
    parser.add_argument(
        "--hudi-bookkeeping-defaults",
        action="store_true",
        help="Hudi's own parallelism for a commit's bookkeeping (the code before "
        "hudi/write.py narrowed it), to compare side by side",
    )
    args = parser.parse_args(argv)
    if args.hudi_bookkeeping_defaults:
        from freshness_pipeline.hudi.write import HUDI_BOOKKEEPING_DEFAULTS, SHARED_OPTIONS

        SHARED_OPTIONS.update(HUDI_BOOKKEEPING_DEFAULTS)  # this process only

    from freshness_pipeline.lab.bench.common import temp_lakehouse
    from freshness_pipeline.runtime.spark import ingestion_java_options

    # ingestion's own driver, with its JVM options (FRESHNESS_INGEST_JIT)
    options = ingestion_java_options(settings)
    settings, spark = temp_lakehouse("bench_ingest_", settings, java_options=options)
    print(
        f"machine: {os.cpu_count()} cores; ingestion on its own Spark driver "
        f"(FRESHNESS_INGEST_JIT={settings.ingest_jit})"
    )
    if args.rounds > 0:
        _capacity(spark, settings, args)
    _live(spark, settings, args)
    spark.stop()
    return 0


def _capacity(spark, settings: Settings, args: argparse.Namespace) -> None:
    from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
    from freshness_pipeline.stream.generator import StreamConfig
    from freshness_pipeline.stream.replayer import VirtualClock, generated_batches, land_instantly

    # 1. capacity on a backlog, read-ahead off and on in turn (side by side, one run)
    batches = generated_batches(StreamConfig(seed=1, rate=args.rate))
    capacity: dict[bool, list[float]] = {False: [], True: []}
    per_commit: dict[tuple[bool, str], list[float]] = {}
    # Warm-up, not counted: the first commits create the tables, and the JVM runs its
    # first writes cold (class loading, JIT); a first round measured slow by 20 %.
    land_instantly(batches, settings.landing_dir, args.backlog_s, VirtualClock(time.time()))
    warm_up = Ingestor(spark, settings, IngestConfig(max_files_per_commit=args.batch_s))
    started = time.monotonic()
    while warm_up.ingest_once():
        pass
    warm_up.close()
    print(
        f"warm-up (not counted): {args.backlog_s} s of stream in {time.monotonic() - started:.1f} s"
    )
    for round_no in range(args.rounds):
        for read_ahead in (False, True):
            land_instantly(batches, settings.landing_dir, args.backlog_s, VirtualClock(time.time()))
            ingestor = Ingestor(
                spark,
                settings,
                IngestConfig(max_files_per_commit=args.batch_s, read_ahead=read_ahead),
            )
            started = time.monotonic()
            rows = 0
            while results := ingestor.ingest_once():
                for r in results:
                    rows += r.rows + r.rejects
                    per_commit.setdefault((read_ahead, r.stream), []).append(r.seconds)
            elapsed = time.monotonic() - started
            ingestor.close()
            capacity[read_ahead].append(rows / elapsed)
            print(
                f"capacity round {round_no + 1}, read-ahead {'on ' if read_ahead else 'off'}: "
                f"{rows} events in {elapsed:.1f} s = {rows / elapsed:,.0f} events/s"
            )
    for read_ahead in (False, True):
        print(
            f"capacity, read-ahead {'on ' if read_ahead else 'off'}: median "
            f"{statistics.median(capacity[read_ahead]):,.0f} events/s over {args.rounds} "
            f"rounds ({args.batch_s} s of stream per commit); median s/commit price "
            f"{statistics.median(per_commit[(read_ahead, 'price')]):.2f}, trade "
            f"{statistics.median(per_commit[(read_ahead, 'trade')]):.2f}"
        )
    print(
        f"capacity ratio read-ahead on / off: "
        f"{statistics.median(capacity[True]) / statistics.median(capacity[False]):.3f}"
    )


def _replayer(settings: Settings, args: argparse.Namespace) -> subprocess.Popen:
    """The live stream: the replayer at the target rate for `--live-s` seconds."""
    command = [sys.executable, "-m", "freshness_pipeline.cli", "replay", "--rate", str(args.rate)]
    command += ["--seed", "2", "--duration", str(args.live_s)]
    return subprocess.Popen(
        command,
        env=child_environment(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


class _LiveLoop:
    """Ingestion's loop at its commit interval, in a thread, noting what each commit did."""

    def __init__(self, ingestor, settings: Settings, commit_interval_s: float) -> None:
        self.ingestor = ingestor
        self.settings = settings
        self.commit_interval_s = commit_interval_s
        self.latencies: list[float] = []  # oldest arrival in a commit to its end, s
        self.commit_ends: list[tuple[float, int]] = []  # (monotonic end, rows)
        self.pending: list[int] = []  # seconds of stream landed and not committed, a cycle
        self.committed = 0
        self.commit_cpu: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        from freshness_pipeline.stream.landing import list_landed

        landing = self.settings.landing_dir
        while not self._stop.is_set():
            cycle = time.monotonic()
            for stream in ("price", "trade"):
                before = {f.seq: f.landed_us for f in list_landed(landing, stream)}
                result = self.ingestor.ingest_stream(stream)
                if result is None:
                    continue
                self.committed += result.rows + result.rejects
                self.commit_cpu.append(dict(result.cpu or {}))
                self.commit_ends.append((time.monotonic(), result.rows + result.rejects))
                oldest = min(us for seq, us in before.items() if seq <= result.checkpoint)
                self.latencies.append(time.time() - oldest / US_PER_S)
            # Seconds of stream landed and not yet committed, after each cycle: bounded
            # means the loop sustains the rate, growing means it falls behind.
            self.pending.append(max(len(list_landed(landing, s)) for s in ("price", "trade")))
            time.sleep(max(0.0, self.commit_interval_s - (time.monotonic() - cycle)))


def _jvm_ticks(jvms: list[int]) -> tuple[int, int]:
    """The JVMs' own CPU ticks, and those of the processes they started and reaped (a
    local file system without Hadoop's native library forks chmod and ls)."""
    from freshness_pipeline.lab.experiment.machine_budget import read_processes

    processes = read_processes()
    found = [processes[pid] for pid in jvms if pid in processes]
    return sum(p.ticks for p in found), sum(p.children_ticks for p in found)


def _live(spark, settings: Settings, args: argparse.Namespace) -> None:
    """2. live at the target rate"""
    from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
    from freshness_pipeline.lab.bench.jvm_profile import java_pids

    jvms = java_pids(os.getpid())
    replayer = _replayer(settings, args)
    cadence = {"clean_every": args.clean_every} if args.clean_every else {}
    ingestor = Ingestor(
        spark, settings, IngestConfig(commit_interval_s=args.commit_interval, **cadence)
    )
    print(
        f"live: clean every {ingestor.config.clean_every} commit(s); Hudi's bookkeeping "
        f"parallelism {'as Hudi has it' if args.hudi_bookkeeping_defaults else 'narrowed'}"
    )
    loop = _LiveLoop(ingestor, settings, args.commit_interval)
    window_start = time.monotonic()
    ticks_start = _jvm_ticks(jvms)
    loop.start()
    replayer.wait()
    landed_end = time.monotonic()
    loop.stop()
    ticks_end = _jvm_ticks(jvms)
    jvm_window = time.monotonic() - window_start
    clock = os.sysconf("SC_CLK_TCK")
    jvm_cpu_s = (ticks_end[0] - ticks_start[0]) / clock
    children_cpu_s = (ticks_end[1] - ticks_start[1]) / clock
    _print_live(settings, args, loop, landed_end - window_start)
    commits = loop.commit_cpu
    print(
        f"live, cost: the ingestion JVM used {jvm_cpu_s:.1f} CPU-s in {jvm_window:.0f} s = "
        f"{jvm_cpu_s / jvm_window:.2f} core ({jvm_cpu_s / max(1, len(commits)):.2f} "
        f"CPU-s per commit, {len(commits)} commits), and the processes it started "
        f"{children_cpu_s:.1f} CPU-s"
    )
    half = len(commits) // 2
    for name, part in (("first half", commits[:half]), ("second half", commits[half:])):
        print(f"live, per commit, {name}: {_median_cpu(part)}")


def _print_live(
    settings: Settings, args: argparse.Namespace, loop: _LiveLoop, window: float
) -> None:
    """The live run's throughput, latency, backlog and checkpoints."""
    from freshness_pipeline.hudi.commit_keys import CHECKPOINT_KEY
    from freshness_pipeline.hudi.metadata import HudiTableMetadata
    from freshness_pipeline.stream.landing import list_landed

    backlog = sum(
        sum(1 for _ in f.path.open())
        for s in ("price", "trade")
        for f in list_landed(settings.landing_dir, s)
    )
    checkpoints = {
        t: HudiTableMetadata(settings.lakehouse.table(t)).latest_extra(CHECKPOINT_KEY)
        for t in ("price_raw", "trade_raw")
    }
    latencies = sorted(loop.latencies)
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    print(
        f"live: target {args.rate:,.0f} events/s for {args.live_s:.0f} s; committed "
        f"{loop.committed / window:,.0f} events/s; oldest-arrival-to-commit latency median "
        f"{statistics.median(latencies):.1f} s, p95 {p95:.1f} s over {len(latencies)} "
        f"commits; backlog at end {backlog} events; checkpoints {checkpoints}"
    )
    ends, pending = loop.commit_ends, loop.pending
    if len(ends) > 2:
        # Throughput between the first and the last commit, free of the start (nothing
        # landed yet) and the end (the last interval's files still pending).
        steady = sum(rows for _, rows in ends[1:]) / (ends[-1][0] - ends[0][0])
        half = len(pending) // 2
        print(
            f"live, steady state: {steady:,.0f} events/s between the first and last "
            f"commit; seconds of stream pending after each cycle: {pending}; max first "
            f"half {max(pending[:half], default=0)}, second half {max(pending[half:])}"
        )


def _median_cpu(commits: list[dict[str, float]]) -> str:
    """Medians of what each commit recorded: its Spark tasks, their CPU, the JVM's CPU
    while it ran and the JIT's part of it."""
    if not commits:
        return "no commits"

    def median(key: str) -> float:
        return statistics.median(c.get(key, 0.0) for c in commits)

    return (
        f"{median('tasks'):.0f} tasks, tasks' CPU {median('task_cpu_s'):.2f} s, JVM CPU "
        f"{median('jvm_cpu_s'):.2f} s (JIT {median('jvm_jit_s'):.2f} s) over {len(commits)} "
        "commits (medians)"
    )
