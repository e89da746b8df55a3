"""Hudi write modes for a derived table, side by side on the same input.

    python -m freshness_pipeline.bench.write_modes [--rounds 5] [--warmup-s 120] [--step-s 2]

trade_aggr, as shipped, is copy-on-write with Hudi's bloom index: every run looks its keys
up in every file of the ~26 `symbol_prefix` partitions it touches and rewrites the young
files there (docs/BENCHMARKS.md: index lookup 3.5 s + rewrite 5.9 s under contention).
This measures the index types and table types that could cut that, in one process on one
input:

- `bloom`: as shipped;
- `simple`: the SIMPLE index (a join of the incoming keys with the touched partitions'
  key columns, no bloom filters);
- `bucket`: the (simple-engine) BUCKET index, `--buckets` per partition: no lookup at
  all, a key's file group is its hash;
- `mor`: merge-on-read with the bloom index (updates append log files);
- `mor_bucket`: merge-on-read with the bucket index (inserts append log files too).

Every mode writes its own trade_aggr, all from one lakehouse's trade_raw: a warm-up run
over `--warmup-s` seconds of stream, then per round `--step-s` new seconds are landed and
ingested once and each mode's run takes them (the order rotates per round, so machine
noise spreads over the modes). Per run: the job's wall time and its phases (index lookup
and file writing from the Hudi timeline), and what reading those timeline marks back
costs (`timing_read`, outside the run's time). At the end, each mode's table must equal the
`bloom` one row for row (a mode that changes the result is reported, not ranked), and a
full snapshot read of each table is timed, since merge-on-read moves cost onto readers.
Runs on a throwaway lakehouse with its own local Spark driver.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from freshness_pipeline.config.settings import Settings, run_main

BUCKET = {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "SIMPLE"}
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}


def modes(buckets: int) -> dict[str, dict[str, str]]:
    bucket = {**BUCKET, "hoodie.bucket.index.num.buckets": str(buckets)}
    return {
        "bloom": {},
        "simple": {"hoodie.index.type": "SIMPLE"},
        "bucket": bucket,
        "mor": dict(MOR),
        "mor_bucket": {**MOR, **bucket},
    }


def rotated(names: list[str], round_index: int) -> list[str]:
    """The modes in this round's order: each round starts one later."""
    shift = round_index % len(names)
    return names[shift:] + names[:shift]


def summarize(runs: dict[str, list[dict[str, float]]]) -> list[tuple[str, float, dict]]:
    """Per mode: (mode, median run seconds, median of each phase)."""
    out = []
    for mode, samples in runs.items():
        seconds = statistics.median(s["seconds"] for s in samples)
        names = sorted({k for s in samples for k in s if k != "seconds"})
        phases = {
            n: statistics.median(s[n] for s in samples if n in s)
            for n in names
            if any(n in s for s in samples)
        }
        out.append((mode, seconds, phases))
    return out


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup-s", type=int, default=120)
    parser.add_argument("--step-s", type=int, default=2)
    parser.add_argument("--buckets", type=int, default=2)
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--modes", default="bloom,simple,bucket,mor,mor_bucket")
    args = parser.parse_args(argv)

    from freshness_pipeline.bench.common import temp_lakehouse, warmed_feeder
    from freshness_pipeline.catalog.jobs import JOBS
    from freshness_pipeline.hudi.location import Location
    from freshness_pipeline.hudi.metadata import HudiTableMetadata
    from freshness_pipeline.jobs.batch_oracle import differences, read_table
    from freshness_pipeline.jobs.run_config import resolve_run
    from freshness_pipeline.jobs.runner import JobRunner

    all_modes = modes(args.buckets)
    chosen = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in all_modes]
    if unknown or "bloom" not in chosen:
        parser.error(f"--modes: unknown {unknown} (known: {sorted(all_modes)}; bloom required)")
    settings, spark = temp_lakehouse("bench_write_modes_", settings)
    spec = JOBS["trade_aggr"]
    root = Path(settings.lakehouse.table("trade_aggr").local_path()).parent / "modes"

    def uri_of(mode: str):
        def table_uri(table: str) -> str:
            if table == spec.name:
                return str(root / mode / table)
            return settings.table_uri(table)

        return table_uri

    def meta_of(mode: str):
        return lambda table: HudiTableMetadata(Location.parse(uri_of(mode)(table)))

    runners = {m: JobRunner(spark, uri_of(m), all_modes[m]) for m in chosen}
    print(
        f"machine: {os.cpu_count()} cores; trade_aggr by {len(chosen)} write modes on one "
        f"input: {args.warmup_s} s warm-up at {args.rate:,.0f} events/s, then {args.rounds} "
        f"rounds of {args.step_s} s; bucket index: {args.buckets} buckets per partition",
        flush=True,
    )
    feeder = warmed_feeder(spark, settings, 5, args.rate, args.warmup_s)

    def one_run(mode: str) -> dict[str, float]:
        meta = meta_of(mode)
        resolved = resolve_run(spec, [], None, meta)
        started = time.monotonic()
        report = runners[mode].run(spec, resolved)
        took = time.monotonic() - started
        # The timeline read that gives a run its write phases, after the run's own
        # (caches as warm as in a run's process, which planned from the same metadata).
        timed = time.monotonic()
        runners[mode]._timeline_times(spec.name, resolved.cutoff_us)
        timing_read = time.monotonic() - timed
        watermark = meta(spec.name).watermark_us()
        if watermark != resolved.cutoff_us:
            raise SystemExit(f"{mode}: watermark {watermark} after a run to {resolved.cutoff_us}")
        return {"seconds": took, **report.phases, "timing_read": timing_read}

    for mode in chosen:
        warm = one_run(mode)
        print(f"warm-up {mode}: {warm['seconds']:.2f} s", flush=True)
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in chosen}
    for index in range(args.rounds):
        feeder.land(args.step_s)
        feeder.ingest()
        for mode in rotated(chosen, index):
            sample = one_run(mode)
            runs[mode].append(sample)
            print(
                f"round {index + 1}/{args.rounds} {mode}: {sample['seconds']:.2f} s "
                f"(index_lookup {sample.get('index_lookup', float('nan')):.2f}, "
                f"write_files {sample.get('write_files', float('nan')):.2f})",
                flush=True,
            )

    expected = read_table(spark, uri_of("bloom")(spec.name)).cache()
    rows = expected.count()
    print(f"\nbloom's trade_aggr: {rows:,} rows", flush=True)
    equal: dict[str, bool] = {}
    read_s: dict[str, float] = {}
    for mode in chosen:
        started = time.monotonic()
        spark.read.format("hudi").load(uri_of(mode)(spec.name)).count()
        read_s[mode] = time.monotonic() - started
        if mode == "bloom":
            equal[mode] = True
            continue
        missing, extra, examples = differences(spark, expected, uri_of(mode)(spec.name))
        equal[mode] = missing == extra == 0
        if not equal[mode]:
            print(f"{mode} differs from bloom: {missing} missing, {extra} extra: {examples}")

    base = dict((m, s) for m, s, _ in summarize(runs))["bloom"]
    print(
        "\n| mode | runs | median run (s) | vs bloom | index_lookup | write_files | "
        "read | transform | timing read | snapshot read (s) | equals bloom |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, seconds, phases in summarize(runs):
        cells = [f"{phases[p]:.2f}" if p in phases else "-" for p in PHASES]
        print(
            f"| `{mode}` | {len(runs[mode])} | {seconds:.2f} | {seconds / base:.2f} | "
            + " | ".join(cells)
            + f" | {read_s[mode]:.2f} | {'yes' if equal[mode] else '**no**'} |"
        )
    return 0 if all(equal.values()) else 1


PHASES = ("index_lookup", "write_files", "read", "transform", "timing_read")

if __name__ == "__main__":
    sys.exit(run_main(main))
