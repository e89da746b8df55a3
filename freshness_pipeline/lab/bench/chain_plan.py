"""How long the chain planner takes on a wide pipeline (METHOD 8: a tick under 1 s at 30
jobs), against the published one-table-per-run planner on the same states.

    freshness lab chain-plan [--jobs 30] [--files 200] [--repeats 20]

Builds a seeded pipeline of `--jobs` jobs over two raw tables (four aggregates on the raw
tables, every other job reading one or two earlier jobs, each `--files` pending files at
most, watermarks lagging 20-200 s) and times `chains.plan_chains` and `planner.plan` for
pmb and max_benefit with K = 3, medians over `--repeats`. Pure Python: the planner alone,
not the metadata reads (bench.sensor_tick times a whole tick).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Sequence

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.scheduling.chains import plan_chains
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.planner import (
    CostModel,
    JobState,
    PendingInput,
    PlanRequest,
    plan,
)
from freshness_pipeline.scheduling.units import US_PER_S

NOW_US = 10_000 * US_PER_S


def wide_states(jobs: int, files: int, seed: int = 1) -> list[JobState]:
    rng = random.Random(seed)
    marks: dict[str, int | None] = {"r1": NOW_US - 5 * US_PER_S, "r2": NOW_US - 5 * US_PER_S}
    graph: list[tuple[str, tuple[str, ...]]] = []
    for i in range(jobs):
        name = f"j{i}"
        if i < 4:
            inputs: tuple[str, ...] = (("r1", "r2")[i % 2],)
        else:
            earlier = [n for n, _ in graph]
            inputs = tuple(rng.sample(earlier, min(rng.randint(1, 2), len(earlier))))
        graph.append((name, inputs))
        marks[name] = NOW_US - rng.randint(20, 200) * US_PER_S
    states = []
    half_s = US_PER_S // 2
    for name, inputs in graph:
        held = tuple((t, marks[t]) for t in inputs)
        cap = input_cap(m for _, m in held)
        done = marks[name]
        assert done is not None and cap is not None  # every table here has a watermark
        pending = tuple(
            PendingInput(f"{name}/{f}", 1000 + f, done + f * half_s + 1, done + (f + 1) * half_s)
            for f in range(files)
            if done + (f + 1) * half_s <= cap
        )
        cost = CostModel(2.0 + rng.random() * 8, 1e-9, 0.01)
        states.append(JobState(name, done, cap, pending, cost, inputs=held))
    return states


def _median_ms(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main(argv: Sequence[str] | None, settings: Settings) -> int:
    del settings  # pure: no lakehouse, no Spark
    parser = argparse.ArgumentParser(prog="freshness lab chain-plan")
    parser.add_argument("--jobs", type=int, default=30)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    states = wide_states(args.jobs, args.files)
    pending = sum(len(s.pending) for s in states)
    print(f"{args.jobs} jobs, {pending} pending files, K = 3, median of {args.repeats}:")
    for policy in ("pmb", "max_benefit"):
        chained = _median_ms(
            lambda p=policy: plan_chains(PlanRequest(states, 3, NOW_US, p)), args.repeats
        )
        single = _median_ms(lambda p=policy: plan(PlanRequest(states, 3, NOW_US, p)), args.repeats)
        runs = plan_chains(PlanRequest(states, 3, NOW_US, policy)).launches
        steps = sum(len(c.jobs) for c in runs)
        print(
            f"  {policy}: chains {chained:.1f} ms ({len(runs)} runs, {steps} steps), "
            f"one table per run {single:.1f} ms"
        )
    return 0
