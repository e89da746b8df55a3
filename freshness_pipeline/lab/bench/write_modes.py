"""Hudi write modes and table layouts for a derived table, side by side on the same input.

    freshness lab write-modes [--rounds 5] [--warmup-s 120] [--step-s 2]

A run of trade_aggr looks its new keys up in the files of the partitions they fall into
and rewrites the files they land in (copy-on-write). This measures, in one process on one
input, what the layout and the index change in that:

- `published`: the thesis's layout: 26 partitions by the symbol's first letter, Hudi's
  default index on Spark (SIMPLE): a run over a few new seconds touches every partition;
- `hour`: as declared in jobs_sql/ (partitioned by event hour, the SIMPLE index): a run
  touches one partition, two across an hour's end;
- `hour_bloom`, `hour_bucket`: by event hour with the BLOOM index, or the simple-engine
  BUCKET index (one file group per partition: no lookup, but the hour's file is rewritten);
- `day`, `none`: by event day, unpartitioned;
- `hour_no_combine`, `hour_no_timeline_server`, `hour_snappy`, `hour_clean_every_5`,
  `hour_parallelism_1`, `hour_page_128k`, `hour_shuffle_2`: the declared layout with one
  setting changed each (no de-duplication before the upsert, which a job's one row per key
  makes needless; no embedded timeline server; Snappy instead of the default codec; a clean
  planned every fifth commit, not every one; Hudi's write shuffles in one task, not two;
  Parquet pages of 128 KiB, not 1 MiB; the session's shuffles in two partitions, not four);
- `published_no_combine`: the published layout without the de-duplication before the upsert;
- `published_interpreted`, `hour_interpreted`: queries evaluated without generated code
  (FRESHNESS_SPARK_CODEGEN=false), where every other mode compiles Spark's Java per step;
  `published_no_whole_stage`: whole-stage code generation off alone, each operator's
  expressions still compiled;
- `published_hudi_parallelism`, `hour_hudi_parallelism`: Hudi's own parallelism for a
  commit's bookkeeping (markers, finalize, the index's key reads: one task per partition or
  file) where every other mode has hudi/write.py's two tasks;
- `hour_spark_records`, `published_spark_records`: rows kept as Spark's own records
  (`OverwriteWithLatestSparkRecordMerger`) from the query to the file, where every other
  mode turns each row into an Avro record for Hudi's write;
- `hour_rli`: by event hour with Hudi 1.1's non-global record-level index (the key's file
  group looked up in the metadata table, which it turns on);
- `bloom`, `bucket`, `mor`, `mor_bucket`: the published partitions with the BLOOM index,
  the BUCKET index (`--buckets` per partition), merge-on-read (updates append log files),
  merge-on-read with the bucket index.

Every mode writes its own trade_aggr, all from one lakehouse's trade_raw: a warm-up run
over `--warmup-s` seconds of stream, then per round `--step-s` new seconds are landed and
ingested once and each mode's run takes them (the order rotates per round, so machine
noise spreads over the modes). Per run: the job's wall time and its phases (index lookup
and file writing from the Hudi timeline), its CPU as the JVM counts it, the Java classes
Spark compiled for it, and what reading those timeline marks back
costs (`timing_read`, outside the run's time). At the end, each mode's table must equal the
`published` one row for row (partition column aside; a mode that changes the result is
reported, not ranked), and a full snapshot read of each table is timed, since
merge-on-read moves cost onto readers. Runs on a throwaway lakehouse with its own local
Spark driver.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

from freshness_pipeline.catalog.declaration import Partition, with_layout
from freshness_pipeline.catalog.jobs import JobSpec
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.write import HUDI_BOOKKEEPING_DEFAULTS

BUCKET = {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "SIMPLE"}
MOR = {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
SPARK_RECORDS = {
    "hoodie.write.record.merge.custom.implementation.classes": (
        "org.apache.hudi.OverwriteWithLatestSparkRecordMerger"
    )
}


def modes(buckets: int) -> dict[str, dict[str, str]]:
    from freshness_pipeline.runtime.spark import INTERPRETED

    bucket = {**BUCKET, "hoodie.bucket.index.num.buckets": str(buckets)}
    bloom = {"hoodie.index.type": "BLOOM"}
    return {
        "published": {},
        "hour": {},
        "hour_bloom": bloom,
        "hour_bucket": {**BUCKET, "hoodie.bucket.index.num.buckets": "1"},
        "day": {},
        "none": {},
        # Hudi settings for small runs, each alone on the declared layout
        "hour_no_combine": {"hoodie.combine.before.upsert": "false"},
        "published_no_combine": {"hoodie.combine.before.upsert": "false"},
        "hour_no_timeline_server": {"hoodie.embed.timeline.server": "false"},
        "hour_snappy": {"hoodie.parquet.compression.codec": "snappy"},
        "hour_clean_every_5": {"hoodie.clean.max.commits": "5"},
        "hour_parallelism_1": {
            "hoodie.upsert.shuffle.parallelism": "1",
            "hoodie.insert.shuffle.parallelism": "1",
        },
        "hour_page_128k": {"hoodie.parquet.page.size": str(128 * 1024)},
        # Hudi's own bookkeeping parallelism (hudi/write.py sets two tasks each): one task
        # per partition or file for the markers, the finalize and the index's key reads
        "published_hudi_parallelism": HUDI_BOOKKEEPING_DEFAULTS,
        "hour_hudi_parallelism": HUDI_BOOKKEEPING_DEFAULTS,
        # Hudi 1.1's non-global record-level index: key -> file group in the metadata table
        # (which every other mode keeps off: it doubled a commit's time when measured)
        "hour_rli": {
            "hoodie.metadata.enable": "true",
            "hoodie.metadata.record.level.index.enable": "true",
            "hoodie.index.type": "RECORD_LEVEL_INDEX",
        },
        # (`spark.` keys are the session's, set for that mode's runs only)
        "hour_shuffle_2": {"spark.sql.shuffle.partitions": "2"},
        # queries evaluated without generated code (FRESHNESS_SPARK_CODEGEN=false)
        "published_interpreted": dict(INTERPRETED),
        "hour_interpreted": dict(INTERPRETED),
        # whole-stage code off alone (Spark's public switch): expressions still compiled
        "published_no_whole_stage": {"spark.sql.codegen.wholeStage": "false"},
        # rows kept as Spark's own (HoodieSparkRecord) from the query to the file, where
        # every other mode turns each into an Avro record and back
        "hour_spark_records": dict(SPARK_RECORDS),
        "published_spark_records": dict(SPARK_RECORDS),
        "bloom": bloom,
        "bucket": bucket,
        "mor": dict(MOR),
        "mor_bucket": {**MOR, **bucket},
    }


# The partitioning of the modes that are neither published nor declared (`hour*`: as
# declared in jobs_sql/, by event hour).
OTHER_LAYOUTS = {
    "day": Partition("event_day", "date_format(second, 'yyyyMMdd')"),
    "none": None,
}


def spec_for(spec: JobSpec, mode: str) -> JobSpec:
    """The job as `mode` lays its table out (the index comes with the mode's options)."""
    published = with_layout(spec.declaration, "published")
    if mode.startswith("hour"):
        partition = spec.declaration.partition
    elif mode.startswith("published"):
        partition = published.partition
    else:
        partition = OTHER_LAYOUTS.get(mode, published.partition)
    return replace(spec, declaration=replace(published, partition=partition))


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
    parser = argparse.ArgumentParser(
        prog="freshness lab write-modes", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup-s", type=int, default=120)
    parser.add_argument("--step-s", type=int, default=2)
    parser.add_argument("--buckets", type=int, default=2)
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--modes", default="published,hour,hour_bloom,hour_bucket,none,bloom")
    args = parser.parse_args(argv)

    from freshness_pipeline.lab.bench.common import temp_lakehouse, warmed_feeder

    all_modes = modes(args.buckets)
    chosen = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in chosen if m not in all_modes]
    if unknown or "published" not in chosen:
        parser.error(f"--modes: unknown {unknown} (known: {sorted(all_modes)}; published required)")
    settings, spark = temp_lakehouse("bench_write_modes_", settings)
    bench = _Bench(spark, settings, {m: all_modes[m] for m in chosen})
    print(
        f"machine: {os.cpu_count()} cores; trade_aggr by {len(chosen)} write modes on one "
        f"input: {args.warmup_s} s warm-up at {args.rate:,.0f} events/s, then {args.rounds} "
        f"rounds of {args.step_s} s; bucket index: {args.buckets} buckets per partition",
        flush=True,
    )
    feeder = warmed_feeder(spark, settings, 5, args.rate, args.warmup_s)
    for mode in chosen:
        warm = bench.one_run(mode)
        print(f"warm-up {mode}: {warm['seconds']:.2f} s", flush=True)
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in chosen}
    for index in range(args.rounds):
        feeder.land(args.step_s)
        feeder.ingest()
        for mode in rotated(chosen, index):
            sample = bench.one_run(mode)
            runs[mode].append(sample)
            print(
                f"round {index + 1}/{args.rounds} {mode}: {sample['seconds']:.2f} s "
                f"(index_lookup {sample.get('index_lookup', float('nan')):.2f}, "
                f"write_files {sample.get('write_files', float('nan')):.2f})",
                flush=True,
            )
    equal, read_s = bench.compare()
    _print_table(runs, read_s, equal)
    return 0 if all(equal.values()) else 1


class _Bench:
    """trade_aggr written by each mode into a table of its own, from the same inputs."""

    def __init__(self, spark, settings: Settings, options: dict[str, dict[str, str]]) -> None:
        from freshness_pipeline.catalog.jobs import JOBS
        from freshness_pipeline.execution.runner import JobRunner

        self.spark = spark
        self.settings = settings
        self.options = options
        self.spec = JOBS["trade_aggr"]
        self.root = Path(settings.lakehouse.table("trade_aggr").local_path()).parent / "modes"
        self.runners = {
            m: JobRunner(spark, self.uri_of(m), self._options(m, hudi=True)) for m in options
        }

    def _options(self, mode: str, hudi: bool) -> dict[str, str]:
        """The mode's Hudi write options, or its Spark session settings."""
        return {k: v for k, v in self.options[mode].items() if k.startswith("spark.") != hudi}

    def uri_of(self, mode: str):
        def table_uri(table: str) -> str:
            if table == self.spec.name:
                return str(self.root / mode / table)
            return self.settings.table_uri(table)

        return table_uri

    def meta_of(self, mode: str):
        from freshness_pipeline.hudi.location import Location
        from freshness_pipeline.hudi.metadata import HudiTableMetadata

        return lambda table: HudiTableMetadata(Location.parse(self.uri_of(mode)(table)))

    def one_run(self, mode: str) -> dict[str, float]:
        """One incremental run of the mode: its seconds, phases and CPU."""
        from freshness_pipeline.execution.run_config import resolve_run

        spark, spec = self.spark, self.spec
        meta = self.meta_of(mode)
        resolved = resolve_run(spec, [], None, meta)
        session = self._options(mode, hudi=False)
        before = {k: spark.conf.get(k, None) for k in session}
        for key, value in session.items():
            spark.conf.set(key, value)
        try:
            started = time.monotonic()
            report = self.runners[mode].run(spec_for(spec, mode), resolved)
            took = time.monotonic() - started
        finally:
            for key, value in before.items():
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)
        # The timeline read that gives a run its write phases, after the run's own
        # (caches as warm as in a run's process, which planned from the same metadata).
        timed = time.monotonic()
        self.runners[mode]._timeline_times(spec.name, resolved.cutoff_us)
        timing_read = time.monotonic() - timed
        watermark = meta(spec.name).watermark_us()
        if watermark != resolved.cutoff_us:
            raise SystemExit(f"{mode}: watermark {watermark} after a run to {resolved.cutoff_us}")
        cpu = {f"cpu_{k}": v for k, v in report.cpu.items()}  # the step's, as its JVM counts
        return {"seconds": took, **report.phases, "timing_read": timing_read, **cpu}

    def compare(self) -> tuple[dict[str, bool], dict[str, float]]:
        """Whether each mode's table equals the published one's, and a snapshot read's
        seconds of each (compared without the partition column, which the layouts name
        differently)."""
        from freshness_pipeline.execution.batch_oracle import differences, read_table

        spark, name = self.spark, self.spec.name
        published = spec_for(self.spec, "published")
        expected = read_table(spark, self.uri_of("published")(name))
        expected = expected.drop(published.partition_by).cache()
        print(f"\npublished trade_aggr: {expected.count():,} rows", flush=True)
        equal: dict[str, bool] = {}
        read_s: dict[str, float] = {}
        for mode in self.options:
            started = time.monotonic()
            spark.read.format("hudi").load(self.uri_of(mode)(name)).count()
            read_s[mode] = time.monotonic() - started
            if mode == "published":
                equal[mode] = True
                continue
            missing, extra, examples = differences(spark, expected, self.uri_of(mode)(name))
            equal[mode] = missing == extra == 0
            if not equal[mode]:
                print(f"{mode} differs: {missing} missing, {extra} extra: {examples}")
        return equal, read_s


def _print_table(
    runs: dict[str, list[dict[str, float]]], read_s: dict[str, float], equal: dict[str, bool]
) -> None:
    base = dict((m, s) for m, s, _ in summarize(runs))["published"]
    columns = [
        "mode",
        "runs",
        "median run (s)",
        "vs published",
        *PHASES.values(),
        "snapshot read (s)",
        "equals published",
    ]
    print("\n| " + " | ".join(columns) + " |")
    print("|---" * len(columns) + "|")
    for mode, seconds, phases in summarize(runs):
        cells = [_cell(phases, p) for p in PHASES]
        print(
            f"| `{mode}` | {len(runs[mode])} | {seconds:.2f} | {seconds / base:.2f} | "
            + " | ".join(cells)
            + f" | {read_s[mode]:.2f} | {'yes' if equal[mode] else '**no**'} |"
        )


def _cell(phases: dict[str, float], name: str) -> str:
    if name not in phases:
        return "-"
    whole = name in ("cpu_tasks", "cpu_jvm_codegen_classes")
    return f"{phases[name]:.0f}" if whole else f"{phases[name]:.2f}"


# Each run's figures in the table, by key, with the column's name.
PHASES = {
    "index_lookup": "index_lookup",
    "write_files": "write_files",
    "read": "read",
    "transform": "transform",
    "timing_read": "timing read",
    "cpu_tasks": "Spark tasks",
    "cpu_task_cpu_s": "tasks' CPU (s)",
    "cpu_task_deserialize_cpu_s": "their deserializing (s)",
    "cpu_jvm_cpu_s": "JVM CPU (s)",
    "cpu_jvm_jit_s": "its JIT (s)",
    "cpu_jvm_gc_s": "its GC (s)",
    # the step's own count (StepCpu), classes Spark compiled
    "cpu_jvm_codegen_classes": "classes compiled",
}
