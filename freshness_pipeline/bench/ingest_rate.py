"""Ingestion benchmark: capacity on a backlog, then a live run at the target rate.

    python -m freshness_pipeline.bench.ingest_rate [--rate 15000] [--backlog-s 60] [--live-s 120]

1. Capacity: land `backlog_s` seconds of stream at `rate` at once, then ingest it in
   commits of `batch_s` landed seconds each; prints events/s and seconds per commit.
2. Live: the replayer (a separate process) lands `rate` events/s in real time while the
   ingestion loop commits every `commit_interval` s; prints events/s committed, the
   arrival-to-commit latency per commit (median, p95) and the backlog left at the end.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=15_000.0)
    parser.add_argument("--backlog-s", type=int, default=60)
    parser.add_argument("--batch-s", type=int, default=10)
    parser.add_argument("--live-s", type=float, default=120.0)
    parser.add_argument("--commit-interval", type=float, default=10.0)
    args = parser.parse_args()

    from freshness_pipeline.bench.common import temp_lakehouse
    from freshness_pipeline.hudi_metadata import CHECKPOINT_KEY, HudiTableMetadata
    from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
    from freshness_pipeline.landing import list_landed
    from freshness_pipeline.stream.generator import StreamConfig
    from freshness_pipeline.stream.replayer import VirtualClock, generated_batches, land_instantly

    settings, spark = temp_lakehouse("bench_ingest_")
    print(f"machine: {os.cpu_count()} cores; ingestion on its own Spark driver")

    # 1. capacity on a backlog
    land_instantly(
        generated_batches(StreamConfig(seed=1, rate=args.rate)),
        settings.landing_dir,
        args.backlog_s,
        VirtualClock(time.time()),
    )
    ingestor = Ingestor(spark, settings, IngestConfig(max_files_per_commit=args.batch_s))
    ingestor.ingest_once()  # first commits create the tables; not steady state
    started = time.monotonic()
    rows = 0
    per_commit: dict[str, list[float]] = {"price": [], "trade": []}
    while results := ingestor.ingest_once():
        for r in results:
            rows += r.rows + r.rejects
            per_commit[r.stream].append(r.seconds)
    elapsed = time.monotonic() - started
    print(
        f"capacity: {rows} events in {elapsed:.1f} s = {rows / elapsed:,.0f} events/s "
        f"({args.batch_s} s of stream per commit); median s/commit "
        f"price {statistics.median(per_commit['price']):.2f}, "
        f"trade {statistics.median(per_commit['trade']):.2f}"
    )

    # 2. live at the target rate
    env = dict(os.environ)
    replayer = subprocess.Popen(
        [sys.executable, "-m", "freshness_pipeline.cli", "replay", "--rate", str(args.rate),
         "--seed", "2", "--duration", str(args.live_s)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    stop = threading.Event()
    live = Ingestor(spark, settings, IngestConfig(commit_interval_s=args.commit_interval))
    latencies: list[float] = []
    committed = 0
    window_start = time.monotonic()

    def loop() -> None:
        nonlocal committed
        while not stop.is_set():
            cycle = time.monotonic()
            for stream in ("price", "trade"):
                before = {f.seq: f.landed_us for f in list_landed(settings.landing_dir, stream)}
                result = live.ingest_stream(stream)
                if result is None:
                    continue
                committed += result.rows + result.rejects
                oldest = min(us for seq, us in before.items() if seq <= result.checkpoint)
                latencies.append(time.time() - oldest / 1e6)
            time.sleep(max(0.0, args.commit_interval - (time.monotonic() - cycle)))

    worker = threading.Thread(target=loop)
    worker.start()
    replayer.wait()
    landed_end = time.monotonic()
    stop.set()
    worker.join()
    backlog = sum(
        sum(1 for _ in f.path.open()) for s in ("price", "trade")
        for f in list_landed(settings.landing_dir, s)
    )  # fmt: skip
    window = landed_end - window_start
    checkpoints = {
        t: HudiTableMetadata(settings.table_uri(t)).latest_extra(CHECKPOINT_KEY)
        for t in ("price_raw", "trade_raw")
    }
    latencies.sort()
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    print(
        f"live: target {args.rate:,.0f} events/s for {args.live_s:.0f} s; committed "
        f"{committed / window:,.0f} events/s; oldest-arrival-to-commit latency median "
        f"{statistics.median(latencies):.1f} s, p95 {p95:.1f} s over {len(latencies)} "
        f"commits; backlog at end {backlog} events; checkpoints {checkpoints}"
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
