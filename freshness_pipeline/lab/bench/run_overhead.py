"""Fixed per-run overhead: through the shared Spark service against a Spark per run.

    freshness lab run-overhead [--runs 5] [--profile cluster]
        [--against DIR] [--sides service,local,against] [--cprofile DIR]

Side by side in one process, alternating the sides so machine noise hits all alike:

1. Spark fixed cost: a fresh Python process that gets a Hudi-ready session and runs
   `SELECT 1` (a new JVM with the Hudi bundle, or a Connect session on the service).
2. A whole run: `dagster asset materialize --select trade_aggr` on a small new delta (one
   landed second per stream, ingested just before), wall time of the CLI, and the part
   of it the job itself reports (`duration_s`: reads, SQL, Hudi commit).

Everything runs on a throwaway lakehouse with a service on a free port; the project's
own data and a running demo are untouched. The sides: `service` (this code through the
service), `local` (a driver of its own) and, with `--against DIR`, `against` (the code of
another checkout through the same service: a before/after pair; `git worktree add DIR
<commit>`). `--profile cluster` runs the same on the cluster profile (cluster_profile.py):
Dagster's storage in Postgres, the service and each per-run driver as applications of a
local Spark standalone master + worker.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from freshness_pipeline.config.settings import Settings, child_environment
from freshness_pipeline.lab.bench.common import scratch
from freshness_pipeline.runtime.dagster_instance import open_instance

if TYPE_CHECKING:
    from freshness_pipeline.ingestion.feeder import StreamFeeder
    from freshness_pipeline.runtime.spark_service import SparkServiceConfig


def _session_seconds(env: dict[str, str], cwd: Path) -> float:
    """Seconds a new process takes to get a session and run the probe's query. `cwd` is a
    folder outside any checkout: `python -m` puts its working folder first on sys.path, so
    from the checkout the `against` side (PYTHONPATH) would import this code instead."""
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "freshness_pipeline.cli", "lab", "session-probe"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    float(out.stdout.strip().splitlines()[-1])  # the probe ran to its end
    return time.monotonic() - started


def _materialize(
    env: dict[str, str], home: Path, settings: Settings, profile_to: Path | None = None
) -> tuple[float, float, dict]:
    # `python -m dagster` is the `dagster` script's own entry point; cProfile wraps it
    # when asked, to split the time outside the job (imports, loading, bookkeeping).
    cli = [sys.executable, "-m", "dagster"]
    if profile_to is not None:
        cli = [sys.executable, "-m", "cProfile", "-o", str(profile_to), "-m", "dagster"]
    started = time.monotonic()
    run = subprocess.run(
        [
            *cli,
            "asset",
            "materialize",
            "-m",
            "freshness_pipeline.definitions",
            "--select",
            "trade_aggr",
        ],
        env=env,
        cwd=home,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - started
    if run.returncode != 0:
        raise RuntimeError(run.stderr[-3000:])
    import dagster as dg

    with open_instance(home, settings) as instance:
        record = instance.fetch_materializations(dg.AssetKey("trade_aggr"), limit=1).records[0]
    meta = record.asset_materialization.metadata
    if "duration_s" not in meta:
        raise RuntimeError(f"the run had nothing to do: {meta.get('nothing_to_do')}")
    return wall, float(meta["duration_s"].value), {k: v.value for k, v in meta.items()}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="freshness lab run-overhead", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per side")
    parser.add_argument(
        "--warmup",
        type=int,
        default=3,
        help="runs through the service first, not counted (its JIT warms up over several)",
    )
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--profile", choices=["local", "cluster"], default="local")
    parser.add_argument(
        "--against",
        type=Path,
        help="a checkout of other code: its run through the service is the side `against`",
    )
    parser.add_argument(
        "--sides",
        default="service,local,against",
        help="which sides to run, in turn (default all: `against` only with --against)",
    )
    parser.add_argument(
        "--cprofile",
        type=Path,
        help="write a cProfile of each measured `dagster asset materialize` into this folder",
    )
    return parser


def main(argv: list[str], settings: Settings) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from freshness_pipeline.runtime.stack import exit_on_signals

    exit_on_signals()  # a kill unwinds, so the Spark service and Postgres it started stop

    root, lakehouse_env = scratch("bench_overhead_")
    os.chmod(root, 0o711)  # the cluster profile's Postgres runs as the `postgres` user
    settings = settings.changed({**lakehouse_env, "FRESHNESS_SPARK_REMOTE": None})
    from freshness_pipeline.ingestion.feeder import StreamFeeder
    from freshness_pipeline.runtime.cluster_profile import ClusterProfile
    from freshness_pipeline.runtime.dagster_instance import write_instance_yaml
    from freshness_pipeline.runtime.ports import free_port
    from freshness_pipeline.runtime.spark import build_spark_session
    from freshness_pipeline.runtime.spark_service import service_config

    profile = None
    if args.profile == "cluster":
        profile = ClusterProfile(settings, root / "cluster").start()
        settings = settings.changed(profile.settings_env)
    # The benchmark's own ingestion is data preparation, not measured: a local driver, so
    # it takes none of the cluster's cores.
    spark = build_spark_session(
        settings, master="local[2]", app_name="bench_overhead_ingest", remote=""
    )
    feeder = StreamFeeder(spark, settings, seed=5, rate=300)
    home = root / "dagster_home"
    write_instance_yaml(home, settings.postgres_url, settings.scheduler.k, settings.postgres_params)
    service = service_config(settings, root / "service", port=free_port())
    base_env = child_environment(
        settings, extra={**(profile.env if profile else {}), "DAGSTER_HOME": str(home)}
    )
    modes = {
        "service": {**base_env, "FRESHNESS_SPARK_REMOTE": service.url},
        "local": base_env,
    }
    if args.against is not None:
        modes["against"] = {**modes["service"], "PYTHONPATH": str(args.against.resolve())}
    modes = {m: env for m, env in modes.items() if m in args.sides.split(",")}
    if "service" not in modes:
        parser.error("--sides must include service (the warm-up and the ratios use it)")
    session: dict[str, list[float]] = {m: [] for m in modes}
    wall: dict[str, list[float]] = {m: [] for m in modes}
    body: dict[str, list[float]] = {m: [] for m in modes}
    try:
        _measure(
            (args.warmup, args.runs),
            modes,
            feeder,
            home,
            service,
            (session, wall, body),
            args.cprofile,
        )
    finally:
        spark.stop()
        if profile:
            profile.stop()
    where = (
        f"cluster profile (master {settings.spark_master}, Dagster on Postgres)"
        if profile
        else "local profile (local[*], Dagster on SQLite)"
    )
    _print_medians(modes, (session, wall, body), args.runs, where)
    if args.json:
        Path(args.json).write_text(json.dumps({"session": session, "wall": wall, "job": body}))
    return 0


def _print_medians(
    modes: dict[str, dict[str, str]],
    figures: tuple[dict[str, list[float]], ...],
    runs: int,
    where: str,
) -> None:
    session, wall, body = figures
    med = {
        k: {m: statistics.median(v[m]) for m in modes}
        for k, v in (("session", session), ("wall", wall), ("job", body))
    }
    print(f"\nmachine: {os.cpu_count()} cores; {where}; {runs} runs per side, alternating;")
    print("medians:")
    for mode in modes:
        print(
            f"  {mode:7s}: session + SELECT 1 in a new process {med['session'][mode]:5.2f} s; "
            f"dagster asset materialize {med['wall'][mode]:5.2f} s "
            f"(job {med['job'][mode]:5.2f} s, outside the job "
            f"{med['wall'][mode] - med['job'][mode]:5.2f} s)"
        )
    for other in (m for m in modes if m != "service"):
        ratio = {k: med[k]["service"] / med[k][other] for k in med}
        print(
            f"  service/{other}: session {ratio['session']:.2f}, "
            f"whole run {ratio['wall']:.2f}, job {ratio['job']:.2f}"
        )


# Where a profiled `dagster asset materialize` spends its time: (label, the function's
# file and name as cProfile keys it). Nested: each figure includes the ones below it.
PROFILE_PHASES = (
    ("the CLI command, after `import dagster`", "_cli/asset.py", "asset_materialize_command_impl"),
    ("  load the code location", "cli_target.py", "get_repository_python_origin_from_cli_opts"),
    ("  create the run in the instance", "run_methods.py", "create_run_for_job"),
    ("  execute the job", "execution/api.py", "execute_job"),
    ("    the asset's body", "orchestration/assets.py", "_job"),
    ("      the Spark session", "runtime/spark.py", "build_spark_session"),
    ("      the run (execution/runner.py)", "execution/runner.py", "run"),
)


def profile_phases(path: Path) -> list[tuple[str, float]]:
    """(label, cumulative seconds) of PROFILE_PHASES in a cProfile file, then the whole
    profiled process; a function the profile lacks is left out."""
    import pstats

    # `stats` is the profile's table, public in practice but left out of typeshed.
    stats = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    found = []
    for label, file, name in PROFILE_PHASES:
        seconds = [
            cumulative
            for (where, _, function), (_, _, _, cumulative, _) in stats.items()
            if function == name and where.endswith(file)
        ]
        if seconds:
            found.append((label, max(seconds)))
    whole = max(cumulative for (_, _, _, cumulative, _) in stats.values())
    return [*found, ("the profiled process as a whole", whole)]


def _print_breakdown(meta: dict) -> None:
    """The run's phases and, through the service, its Connect calls (run metadata)."""
    phases = ", ".join(
        f"{k.removeprefix('phase_').removesuffix('_s')} {float(v):.2f}"
        for k, v in meta.items()
        if k.startswith("phase_")
    )
    print(f"          phases (s): {phases}")
    if "connect_calls" in meta:
        print(
            f"          connect calls {meta['connect_calls']} ({meta['connect_call_s']} s): "
            f"by phase {meta['connect_calls_by_phase']}; by kind {meta['connect_calls_by_kind']}"
        )


def _measure(
    counts: tuple[int, int],
    modes: dict[str, dict[str, str]],
    feeder: StreamFeeder,
    home: Path,
    service: SparkServiceConfig,
    figures: tuple[dict[str, list[float]], ...],
    cprofile: Path | None,
) -> None:
    """Alternating runs of every side; appends each figure to its list."""
    from freshness_pipeline.runtime.spark_service import SparkService

    session, wall, body = figures
    warmup, runs = counts
    if cprofile is not None:
        cprofile.mkdir(parents=True, exist_ok=True)

    with SparkService(service):
        # warm-up, not counted: the service's first queries and the first run compile code
        _session_seconds(modes["service"], home)
        for _ in range(max(warmup, 1)):
            feeder.land(2)
            feeder.ingest()
            _materialize(modes["service"], home, service.settings)
        for i in range(runs):
            for mode in modes if i % 2 == 0 else reversed(list(modes)):
                session[mode].append(_session_seconds(modes[mode], home))
                feeder.land(1)
                feeder.ingest()
                prof = cprofile / f"{mode}_{i}.prof" if cprofile is not None else None
                w, b, meta = _materialize(modes[mode], home, service.settings, prof)
                if prof is not None:
                    for label, seconds in profile_phases(prof):
                        print(f"          profile: {label:46s} {seconds:5.2f} s")
                spark_used = str(meta["spark"])
                assert spark_used.startswith("own" if mode == "local" else "shared"), spark_used
                wall[mode].append(w)
                body[mode].append(b)
                print(
                    f"  {mode:7s} session {session[mode][-1]:5.2f} s | run wall {w:5.2f} s, "
                    f"job {b:5.2f} s",
                    flush=True,
                )
                _print_breakdown(meta)
