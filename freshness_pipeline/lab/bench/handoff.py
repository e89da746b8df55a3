"""Rows handed on in memory against the same rows read back from Hudi, side by side.

    freshness lab handoff [--rounds 6] [--warmup-s 120] [--step-s 2]

In a run of a chain, a child reads the rows its parent just committed; execution/handoff.py lets
it read them from the parent's result kept in the run's session instead of the Hudi files
the parent wrote. This measures what that saves, on one input: the two root jobs
(price_aggr, trade_aggr) run once per round and keep their results; then the four jobs
below them run twice, as a chain reading its parents from memory and as one reading them
from Hudi, each into its own copy of the four tables (the order of the two alternates per
round, so machine noise spreads over both). Per job: the step's wall time and its `read`
phase (the inputs' deltas read and counted). At the end each table read from memory must
equal its copy read from Hudi, row for row. Runs on a throwaway lakehouse with its own
local Spark driver.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from freshness_pipeline.config.settings import Settings

MODES = ("memory", "hudi")


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="freshness lab handoff", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--warmup-s", type=int, default=120)
    parser.add_argument("--step-s", type=int, default=2)
    parser.add_argument("--rate", type=float, default=2000.0)
    return parser.parse_args(argv)


def main(argv: list[str], settings: Settings) -> int:
    args = _arguments(argv)

    from freshness_pipeline.catalog.jobs import JOBS
    from freshness_pipeline.execution.batch_oracle import ORDER
    from freshness_pipeline.execution.handoff import Handoffs
    from freshness_pipeline.execution.run_config import resolve_run
    from freshness_pipeline.execution.runner import JobRunner
    from freshness_pipeline.hudi.location import Location
    from freshness_pipeline.hudi.metadata import HudiTableMetadata
    from freshness_pipeline.lab.bench.common import temp_lakehouse, warmed_feeder

    settings, spark = temp_lakehouse("bench_handoff_", settings)
    roots = [j for j in ORDER if not any(t in JOBS for t in JOBS[j].inputs)]
    below = [j for j in ORDER if j not in roots]
    copies = Path(settings.lakehouse.table(below[0]).local_path()).parent / "copies"

    def uri_of(mode: str):
        def table_uri(table: str) -> str:
            return str(copies / mode / table) if table in below else settings.table_uri(table)

        return table_uri

    def meta_of(mode: str):
        return lambda table: HudiTableMetadata(Location.parse(uri_of(mode)(table)))

    handoffs = Handoffs()
    runners = {
        "memory": JobRunner(spark, uri_of("memory"), handoffs=handoffs),
        "hudi": JobRunner(spark, uri_of("hudi")),
    }
    print(
        f"machine: {os.cpu_count()} cores, own local Spark driver; {', '.join(below)} read "
        f"{' and '.join(roots)} (and each other) from memory and from Hudi: "
        f"{args.warmup_s} s warm-up at {args.rate:,.0f} events/s, then {args.rounds} rounds "
        f"of {args.step_s} s",
        flush=True,
    )
    feeder = warmed_feeder(spark, settings, 7, args.rate, args.warmup_s)

    def run(mode: str, job: str) -> dict[str, float]:
        resolved = resolve_run(JOBS[job], [], None, meta_of(mode))
        started = time.monotonic()
        report = runners[mode].run(JOBS[job], resolved, keep_result=mode == "memory")
        took = time.monotonic() - started
        if meta_of(mode)(job).watermark_us() != resolved.cutoff_us:
            raise SystemExit(f"{mode} {job}: the watermark did not move to the run's cutoff")
        read = report.phases.get("read", float("nan"))
        return {"seconds": took, "read": read, "in_memory": len(report.inputs_in_memory)}

    def round_of(order: tuple[str, ...]) -> dict[str, dict[str, dict[str, float]]]:
        for job in roots:
            run("memory", job)  # the roots' tables are shared; their results are kept
        return {mode: {job: run(mode, job) for job in below} for mode in order}

    round_of(MODES)  # warm-up: every table caught up, both copies
    samples: Samples = {m: {j: [] for j in below} for m in MODES}
    for index in range(args.rounds):
        feeder.land(args.step_s)
        feeder.ingest()
        order = MODES if index % 2 == 0 else MODES[::-1]
        for mode, jobs in round_of(order).items():
            for job, sample in jobs.items():
                samples[mode][job].append(sample)
        chain = {m: sum(samples[m][j][-1]["seconds"] for j in below) for m in MODES}
        print(
            f"round {index + 1}/{args.rounds} ({' first, '.join(order)} second): chain of "
            f"{len(below)} steps {chain['memory']:.2f} s from memory, {chain['hudi']:.2f} s "
            "from Hudi",
            flush=True,
        )
    never = [j for j in below if not all(s["in_memory"] for s in samples["memory"][j])]
    handoffs.release(spark)
    equal = _tables_equal(spark, below, uri_of)
    print("\n" + "\n".join(summary(samples, below)))
    if never:
        print(f"**read from Hudi in a memory round**: {never}")
    print("tables from memory equal their copies from Hudi:", "yes" if equal else "**no**")
    return 0 if equal and not never else 1


def _tables_equal(spark, jobs: list[str], uri_of) -> bool:
    from freshness_pipeline.execution.batch_oracle import differences, read_table

    equal = True
    for job in jobs:
        expected = read_table(spark, uri_of("hudi")(job))
        missing, extra, examples = differences(spark, expected, uri_of("memory")(job))
        if missing or extra:
            equal = False
            print(f"{job} from memory: {missing} rows missing, {extra} extra: {examples}")
    return equal


Samples = dict[str, dict[str, list[dict[str, float]]]]  # mode -> job -> one per round


def summary(samples: Samples, jobs: list[str]) -> list[str]:
    """The Markdown table of per-job medians, and the whole chain's paired ratio."""

    def med(mode: str, job: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[mode][job])

    lines = [
        "| job | read from memory (s) | read from Hudi (s) | step from memory (s) | "
        "step from Hudi (s) | step ratio |",
        "|---|---|---|---|---|---|",
    ]
    for job in jobs:
        mem, hudi = med("memory", job, "seconds"), med("hudi", job, "seconds")
        lines.append(
            f"| {job} | {med('memory', job, 'read'):.2f} | {med('hudi', job, 'read'):.2f} | "
            f"{mem:.2f} | {hudi:.2f} | {mem / hudi:.2f} |"
        )
    rounds = len(samples["memory"][jobs[0]])
    chain = {
        m: [sum(samples[m][j][i]["seconds"] for j in jobs) for i in range(rounds)] for m in MODES
    }
    ratios = [a / b for a, b in zip(chain["memory"], chain["hudi"], strict=True)]
    lines.append(
        f"\nchain of {len(jobs)} steps, median of {rounds} rounds: "
        f"{statistics.median(chain['memory']):.2f} s from memory, "
        f"{statistics.median(chain['hudi']):.2f} s from Hudi; paired ratio median "
        f"{statistics.median(ratios):.3f}"
    )
    return lines
