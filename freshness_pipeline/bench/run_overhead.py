"""Fixed per-run overhead: through the shared Spark service against a Spark per run.

    python -m freshness_pipeline.bench.run_overhead [--runs 5] [--profile cluster]

Side by side in one process, alternating the two modes so machine noise hits both alike:

1. Spark fixed cost: a fresh Python process that gets a Hudi-ready session and runs
   `SELECT 1` (a new JVM with the Hudi bundle, or a Connect session on the service).
2. A whole run: `dagster asset materialize --select trade_aggr` on a small new delta (one
   landed second per stream, ingested just before), wall time of the CLI, and the part
   of it the job itself reports (`duration_s`: reads, SQL, Hudi commit).

Everything runs on a throwaway lakehouse with a service on a free port; the project's
own data and a running demo are untouched. `--profile cluster` runs the same on the
cluster profile (cluster_profile.py): Dagster's storage in Postgres, the service and each
per-run driver as applications of a local Spark standalone master + worker.
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
from pathlib import Path
from typing import TYPE_CHECKING

from freshness_pipeline.config.settings import Settings, child_environment, run_main
from freshness_pipeline.runtime.dagster_instance import open_instance

if TYPE_CHECKING:
    from freshness_pipeline.ingestion.feeder import StreamFeeder
    from freshness_pipeline.runtime.spark_service import SparkServiceConfig


def _session_seconds(env: dict[str, str]) -> float:
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-m", "freshness_pipeline.bench.session_probe"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    float(out.stdout.strip().splitlines()[-1])  # the probe ran to its end
    return time.monotonic() - started


def _materialize(env: dict[str, str], home: Path, settings: Settings) -> tuple[float, float, dict]:
    dagster = str(Path(sys.executable).parent / "dagster")
    started = time.monotonic()
    run = subprocess.run(
        [
            dagster,
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


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per mode")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--profile", choices=["local", "cluster"], default="local")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="bench_overhead_"))
    os.chmod(root, 0o711)  # the cluster profile's Postgres runs as the `postgres` user
    settings = settings.changed(
        {
            "FRESHNESS_LAKEHOUSE": str(root / "tables"),
            "FRESHNESS_LANDING": str(root / "landing"),
            "FRESHNESS_SPARK_REMOTE": None,
        }
    )
    from freshness_pipeline.ingestion.feeder import StreamFeeder
    from freshness_pipeline.runtime.cluster_profile import ClusterProfile
    from freshness_pipeline.runtime.dagster_instance import write_instance_yaml
    from freshness_pipeline.runtime.spark import build_spark_session
    from freshness_pipeline.runtime.spark_service import free_port, service_config

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
    write_instance_yaml(home, settings.postgres_url, settings.scheduler.k)
    service = service_config(settings, root / "service", port=free_port())
    base_env = child_environment(
        settings, extra={**(profile.env if profile else {}), "DAGSTER_HOME": str(home)}
    )
    modes = {
        "service": {**base_env, "FRESHNESS_SPARK_REMOTE": service.url},
        "local": base_env,
    }
    session: dict[str, list[float]] = {m: [] for m in modes}
    wall: dict[str, list[float]] = {m: [] for m in modes}
    body: dict[str, list[float]] = {m: [] for m in modes}
    try:
        _measure(args.runs, modes, feeder, home, service, session, wall, body)
    finally:
        spark.stop()
        if profile:
            profile.stop()
    med = {
        k: {m: statistics.median(v[m]) for m in modes}
        for k, v in (("session", session), ("wall", wall), ("job", body))
    }
    where = (
        f"cluster profile (master {settings.spark_master}, Dagster on Postgres)"
        if profile
        else "local profile (local[*], Dagster on SQLite)"
    )
    print(f"\nmachine: {os.cpu_count()} cores; {where}; {args.runs} runs per mode, alternating;")
    print("medians:")
    for mode in modes:
        print(
            f"  {mode:7s}: session + SELECT 1 in a new process {med['session'][mode]:5.2f} s; "
            f"dagster asset materialize {med['wall'][mode]:5.2f} s "
            f"(job {med['job'][mode]:5.2f} s, outside the job "
            f"{med['wall'][mode] - med['job'][mode]:5.2f} s)"
        )
    print(
        f"  service/local: session {med['session']['service'] / med['session']['local']:.2f}, "
        f"whole run {med['wall']['service'] / med['wall']['local']:.2f}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"session": session, "wall": wall, "job": body}))
    return 0


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
    runs: int,
    modes: dict[str, dict[str, str]],
    feeder: StreamFeeder,
    home: Path,
    service: SparkServiceConfig,
    session: dict[str, list[float]],
    wall: dict[str, list[float]],
    body: dict[str, list[float]],
) -> None:
    """Alternating runs of both modes; appends each figure to its list."""
    from freshness_pipeline.runtime.spark_service import SparkService

    with SparkService(service):
        # warm-up, not counted: the service's first queries and the first run compile code
        feeder.land(2)
        feeder.ingest()
        _session_seconds(modes["service"])
        _materialize(modes["service"], home, service.settings)
        for i in range(runs):
            for mode in modes if i % 2 == 0 else reversed(list(modes)):
                session[mode].append(_session_seconds(modes[mode]))
                feeder.land(1)
                feeder.ingest()
                w, b, meta = _materialize(modes[mode], home, service.settings)
                spark_used = str(meta["spark"])
                assert spark_used.startswith("shared" if mode == "service" else "own"), spark_used
                wall[mode].append(w)
                body[mode].append(b)
                print(
                    f"  {mode:7s} session {session[mode][-1]:5.2f} s | run wall {w:5.2f} s, "
                    f"job {b:5.2f} s",
                    flush=True,
                )
                _print_breakdown(meta)


if __name__ == "__main__":
    sys.exit(run_main(main))
