"""`freshness` command line: demo, replay, ingest, load-master, record.

`freshness demo` is the README's main command: it loads the company master, then starts
the replayer, ingestion and Dagster (webserver + daemon) as child processes, prints the UI
address, and on Ctrl-C stops them in order (stream first, ingestion after its current
commit, Dagster last) so the lakehouse is left consistent.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from freshness_pipeline.settings import PROJECT_ROOT, load_settings

log = logging.getLogger("freshness")


class StopFlag:
    """Set by SIGINT/SIGTERM; long-running loops poll it and finish their current step."""

    def __init__(self) -> None:
        self._event = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self._event.set())

    def __call__(self) -> bool:
        return self._event.is_set()


def _stream_config(args: argparse.Namespace):
    from freshness_pipeline.stream.generator import StreamConfig

    return StreamConfig(seed=args.seed, rate=args.rate, universe_size=args.universe_size)


def cmd_load_master(args: argparse.Namespace) -> int:
    from freshness_pipeline.ingestion.master import load_company_master
    from freshness_pipeline.spark import build_spark_session

    spark = build_spark_session(app_name="load_master")
    loaded = load_company_master(spark, load_settings(), args.universe_size)
    print("company_master loaded" if loaded else "company_master already up to date")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from freshness_pipeline.stream.replayer import (
        ReplayConfig,
        generated_batches,
        recorded_batches,
        replay,
    )

    config = ReplayConfig(
        speedup=args.speedup,
        flush_interval_s=args.flush_interval,
        malformed_rate=args.malformed_rate,
        duration_s=args.duration,
    )
    batches = (
        recorded_batches(Path(args.file)) if args.file else generated_batches(_stream_config(args))
    )
    landed = replay(batches, load_settings().landing_dir, config, should_stop=StopFlag())
    print(f"landed {landed}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from freshness_pipeline.stream.replayer import record_stream

    count = record_stream(_stream_config(args), int(args.duration), Path(args.out))
    print(f"recorded {count} events to {args.out}")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
    from freshness_pipeline.spark import build_spark_session

    config = IngestConfig(
        commit_interval_s=args.commit_interval, max_files_per_commit=args.max_files
    )
    spark = build_spark_session(app_name="ingestion")
    # After Spark: PySpark's own SIGINT handler cancels running jobs; ours lets the
    # current commit finish instead.
    stop = StopFlag()
    ingestor = Ingestor(spark, load_settings(), config)
    if args.once:
        for result in ingestor.ingest_once():
            print(result)
        return 0
    ingestor.run(should_stop=stop)
    return 0


def _default_signals() -> None:
    # A script started in the background inherits SIGINT as ignored, and dagster's own
    # processes then never see Ctrl-C; restore the defaults in every child.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _spawn(
    name: str, argv: list[str], env: dict[str, str], logs: Path, cwd: Path = PROJECT_ROOT
) -> subprocess.Popen:
    logs.mkdir(parents=True, exist_ok=True)
    out = open(logs / f"{name}.log", "ab")  # noqa: SIM115 - lives as long as the child
    log.info("starting %s: %s (log: %s)", name, " ".join(argv), logs / f"{name}.log")
    return subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=out,
        stderr=subprocess.STDOUT,
        preexec_fn=_default_signals,
        start_new_session=True,  # Ctrl-C reaches only us; we stop children in order
    )


def stop_child(name: str, proc: subprocess.Popen, timeout: float) -> None:
    """SIGINT (a clean stop), then SIGTERM and SIGKILL to its process group if it hangs."""
    if proc.poll() is not None:
        return
    log.info("stopping %s", name)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
        return
    except subprocess.TimeoutExpired:
        pass
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def cmd_demo(args: argparse.Namespace) -> int:
    settings = load_settings()
    env = dict(os.environ)
    env.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster_home"))
    Path(env["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
    dagster_yaml = Path(env["DAGSTER_HOME"]) / "dagster.yaml"
    if not dagster_yaml.exists():
        dagster_yaml.symlink_to(PROJECT_ROOT / "dagster.yaml")
    logs = PROJECT_ROOT / ".lakehouse" / "logs"
    python = sys.executable
    stop = StopFlag()

    print("Loading the company master into Hudi (first run starts Spark, ~20 s)...", flush=True)
    loader = subprocess.run(
        [
            python,
            "-m",
            "freshness_pipeline.cli",
            "load-master",
            "--universe-size",
            str(args.universe_size),
        ],
        env=env,
        cwd=PROJECT_ROOT,
        preexec_fn=_default_signals,
    )
    if loader.returncode != 0:
        print("loading the company master failed; see the output above", file=sys.stderr)
        return loader.returncode
    children: list[tuple[str, subprocess.Popen, float]] = []
    replay_argv = [
        python, "-m", "freshness_pipeline.cli", "replay",
        "--rate", str(args.rate), "--speedup", str(args.speedup),
        "--malformed-rate", str(args.malformed_rate), "--seed", str(args.seed),
        "--universe-size", str(args.universe_size),
    ]  # fmt: skip
    children.append(("replay", _spawn("replay", replay_argv, env, logs), 15))
    ingest_argv = [
        python,
        "-m",
        "freshness_pipeline.cli",
        "ingest",
        "--commit-interval",
        str(args.commit_interval),
    ]
    children.append(("ingest", _spawn("ingest", ingest_argv, env, logs), 120))
    dagster_argv = [
        str(Path(python).parent / "dagster"), "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"),
        "--host", args.host, "--port", str(args.port),
    ]  # fmt: skip
    # Run from DAGSTER_HOME so dagster does not mistake the checkout's dagster.yaml for
    # a second instance config (the one in DAGSTER_HOME is a link to it).
    dagster_home = Path(env["DAGSTER_HOME"])
    children.append(("dagster", _spawn("dagster", dagster_argv, env, logs, dagster_home), 30))
    print(
        f"\nLakehouse: {settings.lakehouse_root}\nLanding:   {settings.landing_dir}\n"
        f"Logs:      {logs}\nDagster UI: http://{args.host}:{args.port}\n"
        "Press Ctrl-C to stop (the stream stops first, ingestion finishes its commit).\n",
        flush=True,
    )
    deadline = time.monotonic() + args.run_for if args.run_for else None
    failed = 0
    while not stop():
        for name, proc, _ in children:
            if proc.poll() is not None:
                print(f"{name} exited with code {proc.returncode}; see {logs / (name + '.log')}")
                failed = proc.returncode or 1
        if failed or (deadline and time.monotonic() >= deadline):
            break
        time.sleep(0.5)
    for name, proc, timeout in children:
        stop_child(name, proc, timeout)
    print("stopped; all child processes have exited")
    return failed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="freshness", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def stream_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("--seed", type=int, default=42)
        p.add_argument("--rate", type=float, default=2000.0, help="events per event-time second")
        p.add_argument("--universe-size", type=int, default=5257)

    demo = sub.add_parser("demo", help="replay + ingestion + Dagster on embedded defaults")
    stream_args(demo)
    demo.add_argument("--speedup", type=float, default=1.0)
    demo.add_argument("--malformed-rate", type=float, default=0.0005)
    demo.add_argument("--commit-interval", type=float, default=10.0)
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=3000)
    demo.add_argument("--run-for", type=float, default=None, help="stop after N seconds")
    demo.set_defaults(func=cmd_demo)

    replay = sub.add_parser("replay", help="replay the stream into the landing area")
    stream_args(replay)
    replay.add_argument("--file", help="replay a recorded stream file instead of generating")
    replay.add_argument("--speedup", type=float, default=1.0)
    replay.add_argument("--flush-interval", type=float, default=1.0)
    replay.add_argument("--malformed-rate", type=float, default=0.0)
    replay.add_argument("--duration", type=float, default=None, help="event-time seconds")
    replay.set_defaults(func=cmd_replay)

    record = sub.add_parser("record", help="write a generated stream to a file")
    stream_args(record)
    record.add_argument("--duration", type=int, required=True, help="event-time seconds")
    record.add_argument("--out", required=True)
    record.set_defaults(func=cmd_record)

    ingest = sub.add_parser("ingest", help="commit landed events into the raw Hudi tables")
    ingest.add_argument("--commit-interval", type=float, default=10.0)
    ingest.add_argument("--max-files", type=int, default=120, help="landed files per commit")
    ingest.add_argument("--once", action="store_true", help="one cycle, then exit")
    ingest.set_defaults(func=cmd_ingest)

    master = sub.add_parser("load-master", help="load the company master table")
    master.add_argument("--universe-size", type=int, default=5257)
    master.set_defaults(func=cmd_load_master)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
