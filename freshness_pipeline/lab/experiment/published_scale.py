"""The published experiment's conditions, fed to the model.

METHOD section 4 reports P(PMB) / P(Random) = 0.864 and P(PMB) / P(Max-Benefit) = 0.955
over about 3 hours. This module rebuilds those conditions for `simulate.simulate` (the
real planner and cost fitter on a modelled machine) and compares the ratios it gives.

What comes from METHOD 4, and what had to be assumed where it is silent, per parameter:

- Pipeline: the six jobs of `execution/catalog.py`. Its DAG is the published one (two
  aggregates, their join, the company enrichment, the sector and industry views), and so
  is its layout: the four upstream tables have 26 partitions (symbol letter), whose
  commits touch 26 files (published: 26.0, 26.0, 24.7, 23.3), and the two views one
  (published 1.0).
- Stream: 1.6e8 records, about 18 GB, over about 3 hours: 14,815 events/s of 112.5
  bytes for 10,800 s.
- Raw commits: every 13.6 s, the mean spacing of the published trade_aggr decision's
  first eight cutoffs (one new file per commit). The trade share of the stream (4.2 %)
  makes those new files about 0.91 MiB, as in that decision (7.28 MiB over 8 files).
- Copy-on-write packing (`CopyOnWritePacking`): a raw commit writes its rows to one file
  group. With probability `pack_share` that is an existing big group, rewritten whole
  (Hudi's small-file packing: the old rows are copied into the new file, so a reader
  scans them although they are not new); otherwise a new small file. In the published
  decision, 8 commits in a row wrote new files, then the next ~10 rewrote 5 big files of
  29-68 MiB: trade_raw has a pool of 5 big groups of 29-68 MiB, pack share 0.5, and the
  two kinds come in runs of 8 commits on average (a sensitivity row draws each commit
  independently). For price_raw METHOD gives less: price_aggr's subset runs had a mean
  full scan of 1,243 MiB (about 24 runs in 3 h), and one tick held 21 files, 3,522 MiB.
  The same pack share with 5 big groups of 60-165 MiB gives a median price_aggr scan of
  about 1.9 GB. A group that outgrows its range is closed and another opens (the pool
  stands in for the table's older files that Hudi keeps packing, which METHOD does not
  describe).
- Derived tables: Hudi's default small-file limit (100 MiB: a derived partition's young
  group is rewritten whole until it passes it), not the 2 MiB our runner sets. How many
  bytes a job writes per new input byte is not published; `OUTPUT_RATIOS` are estimates
  from what each job does (the aggregates shrink the stream, the joins do not, the views
  keep a few rows per sector or industry per second).
- Machine: K = 3 on a 9-node cluster sized for it, so the three runs do not slow each
  other (capacity 3). A run does `184 s + b * MiB`. METHOD gives two things that do not
  agree: the trade_aggr estimate a = 183.6 s, b = 1.204 s/MiB, and "runs took 2 to 6
  minutes with inputs up to 2.5 GB", which bounds the real b by (360 - 184) s / 2,384 MiB
  = 0.074 s/MiB. `scenarios()` tries both, and the estimate as the planner's belief.
- Tick 5 s, 5 s from launch to work, 5 s from the newest arrival to its raw commit,
  20 % run-time noise: the simulator's defaults, not published.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.lab.experiment.sim_conditions import (
    RAW_STREAMS,
    Conditions,
    RawCommitFiles,
    RawLayout,
)
from freshness_pipeline.lab.experiment.simulate import simulate
from freshness_pipeline.scheduling.planner import MIB, CostModel, JobChoice, get_policy

# METHOD 4's figures.
PUBLISHED_P = {"pmb": 73_875_680, "max_benefit": 77_336_752, "random": 85_474_258}
PUBLISHED_PMB_OVER_RANDOM = 0.864
PUBLISHED_PMB_OVER_MAX_BENEFIT = 0.955
PUBLISHED_A_S = 183.6
PUBLISHED_B_S_PER_MIB = 1.204
PUBLISHED_RUNS = 89
PUBLISHED_SUBSET_RUNS = 6
DURATION_S = 10_800
RECORDS = 1.6e8
STREAM_BYTES = 18e9
RATE_EPS = RECORDS / DURATION_S  # 14,815
BYTES_PER_EVENT = STREAM_BYTES / RECORDS  # 112.5
COMMIT_INTERVAL_S = 13.6
TRADE_NEW_FILE_BYTES = 7.28 * MIB / 8  # the decision's first eight files
# Runs of 2-6 minutes with inputs up to 2.5 GB: the largest b the run times allow.
MACHINE_B_S_PER_MIB = (6 * 60 - 184) / (2.5e9 / MIB)
HUDI_SMALL_FILE_BYTES = 100 * MIB  # hoodie.parquet.small.file.limit's default
# Output bytes per new input byte (not published; see the module docstring).
OUTPUT_RATIOS: tuple[tuple[str, float], ...] = (
    ("trade_aggr", 0.5),
    ("price_aggr", 0.15),
    ("market_features", 1.0),
    ("enriched_features", 1.2),
    ("sector_vwap", 0.01),
    ("industry_spike", 0.05),
)
VARIANTS = ("pmb", "max_benefit", "random")
DEFAULT_SEEDS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class PackedTable:
    """One raw table's copy-on-write packing: the share of commits that rewrite one of
    `pool_groups` big groups, whose older rows are `older_min_bytes`-`older_max_bytes`.

    `new_run_commits`: packing comes in runs. Commits that write new files follow each
    other for this many commits on average, then packing ones for
    `new_run_commits * pack_share / (1 - pack_share)` (so `pack_share` holds in the long
    run); None draws each commit independently."""

    pack_share: float
    pool_groups: int
    older_min_bytes: int
    older_max_bytes: int
    new_run_commits: float | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.pack_share <= 1:
            raise ValueError(f"pack_share must be in [0, 1], got {self.pack_share}")
        if self.pool_groups < 1:
            raise ValueError(f"pool_groups must be at least 1, got {self.pool_groups}")
        if not 0 <= self.older_min_bytes <= self.older_max_bytes:
            raise ValueError(
                f"need 0 <= older_min_bytes <= older_max_bytes, got "
                f"{self.older_min_bytes}, {self.older_max_bytes}"
            )
        if self.new_run_commits is not None and self.new_run_commits < 1:
            raise ValueError(f"new_run_commits must be >= 1, got {self.new_run_commits}")

    def switch_probabilities(self) -> tuple[float, float]:
        """(P(a new-file commit is followed by a packing one), P(the reverse))."""
        p = self.pack_share
        if self.new_run_commits is None or p in (0.0, 1.0):
            return p, 1 - p  # independent commits
        to_pack = 1 / self.new_run_commits
        return to_pack, to_pack * (1 - p) / p


@dataclass(frozen=True)
class CopyOnWritePacking(RawLayout):
    """A raw table layout where commits either write one new small file or rewrite a big
    existing one (seeded per run and table), so bytes per second of arrivals are uneven."""

    tables: tuple[tuple[str, PackedTable], ...]

    def __post_init__(self) -> None:
        missing = sorted(set(RAW_STREAMS) - {name for name, _ in self.tables})
        if missing:
            raise ValueError(f"CopyOnWritePacking needs every raw table; missing {missing}")

    def writer(
        self, table: str, cond: Conditions, seed: int
    ) -> Callable[[int, int], RawCommitFiles]:
        spec = dict(self.tables)[table]
        rng = random.Random(f"{seed}:{table}:packing")
        sizes: list[int] = []  # per slot: the current group's size (older + packed rows)
        generation: list[int] = []
        written: list[bool] = []  # whether the slot's group has been rewritten yet

        def draw_older() -> int:
            return rng.randint(spec.older_min_bytes, spec.older_max_bytes)

        for _ in range(spec.pool_groups):
            sizes.append(draw_older())
            generation.append(0)
            written.append(False)

        to_pack, to_new = spec.switch_probabilities()
        packing: list[bool] = []  # the previous commit's mode, once there is one

        def commit(index: int, new_bytes: int) -> RawCommitFiles:
            draw = rng.random()
            if not packing:
                packing.append(draw < spec.pack_share)
            else:
                packing[0] = draw >= to_new if packing[0] else draw < to_pack
            if not packing[0]:
                return RawCommitFiles({f"c{index}": new_bytes + cond.file_overhead_bytes})
            slot = rng.randrange(spec.pool_groups)
            if sizes[slot] > spec.older_max_bytes:
                # Grown past the pool's range: closed; a fresh older group takes the slot.
                sizes[slot], generation[slot], written[slot] = (
                    draw_older(),
                    generation[slot] + 1,
                    False,
                )
            group = f"big{slot}.{generation[slot]}"
            carried = {} if written[slot] else {group: sizes[slot]}
            written[slot] = True
            sizes[slot] += new_bytes
            return RawCommitFiles({group: new_bytes}, carried)

        return commit


# In the published decision, 8 commits in a row wrote new files before the packing ones.
PUBLISHED_NEW_RUN_COMMITS = 8.0


def published_packing(
    new_run_commits: float | None = PUBLISHED_NEW_RUN_COMMITS,
) -> CopyOnWritePacking:
    return CopyOnWritePacking(
        (
            ("trade_raw", PackedTable(0.5, 5, int(29 * MIB), int(68 * MIB), new_run_commits)),
            ("price_raw", PackedTable(0.5, 5, int(60 * MIB), int(165 * MIB), new_run_commits)),
        )
    )


def published_conditions() -> Conditions:
    """METHOD 4's conditions on the machine its run times describe (see module doc)."""
    trade_events_per_commit = TRADE_NEW_FILE_BYTES / BYTES_PER_EVENT
    return Conditions(
        chains=False,  # the published method: one table per run
        duration_s=DURATION_S,
        rate_eps=RATE_EPS,
        commit_interval_s=COMMIT_INTERVAL_S,
        ingest_lag_s=5.0,
        files_per_commit=1,
        bytes_per_event=round(BYTES_PER_EVENT),
        trade_share=trade_events_per_commit / (RATE_EPS * COMMIT_INTERVAL_S),
        raw_layout=published_packing(),
        derived_small_file_bytes=HUDI_SMALL_FILE_BYTES,
        output_ratios=OUTPUT_RATIOS,
        fixed_s=184.0,
        per_mib_s=MACHINE_B_S_PER_MIB,
        per_file_s=0.0,
        capacity=3.0,
        launch_s=5.0,
        k=3,
        tick_s=5.0,
    )


def scenarios() -> list[tuple[str, Conditions]]:
    """The published conditions, then one change each: the planner's cost or the machine
    is the published estimate; no packing (the control); a shared cluster; packing
    without runs."""
    base = published_conditions()
    estimate = CostModel(PUBLISHED_A_S, PUBLISHED_B_S_PER_MIB / MIB)
    return [
        ("published conditions; machine 184 s + 0.074 s/MiB (the run times); online fit", base),
        (
            "same machine; planner holds the published estimate (183.6 s + 1.204 s/MiB)",
            replace(base, planner_cost=estimate),
        ),
        (
            "machine = the published estimate (184 s + 1.2 s/MiB); online fit",
            replace(base, per_mib_s=1.2),
        ),
        (
            "no packing: every commit a new file (control); run-time machine",
            replace(base, raw_layout=None),
        ),
        (
            "published conditions on a shared cluster (three runs share one run's speed)",
            replace(base, capacity=1.0),
        ),
        (
            "packing drawn per commit, not in runs; run-time machine; online fit",
            replace(base, raw_layout=published_packing(None)),
        ),
    ]


@dataclass
class DecisionCounts:
    """What a variant's launches chose, per job (from the planner's candidate tables)."""

    runs: dict[str, int] = field(default_factory=dict)
    subsets: dict[str, int] = field(default_factory=dict)
    # PMB's rule applied to the launch's own candidate table: a subset it would take.
    pmb_would_subset: dict[str, int] = field(default_factory=dict)
    full_mib: dict[str, list[float]] = field(default_factory=dict)  # of subset runs
    chosen_mib: dict[str, list[float]] = field(default_factory=dict)
    scan_mib: dict[str, list[float]] = field(default_factory=dict)  # every run
    eta_gain: dict[str, list[float]] = field(default_factory=dict)  # subset eta / full eta
    # A subset leaves a file group pending, and its range starts before the next cutoff,
    # so the job's next run must read it: how often that run was the full set.
    subset_then_full: dict[str, int] = field(default_factory=dict)
    _last_was_subset: dict[str, bool] = field(default_factory=dict, repr=False)

    def record(self, choice: JobChoice) -> None:
        job = choice.job
        self.runs[job] = self.runs.get(job, 0) + 1
        full = choice.candidates[-1] if choice.candidates else None
        self.scan_mib.setdefault(job, []).append(choice.scan_bytes / MIB)
        if full is not None and get_policy("pmb").pick(choice.candidates) is not full:
            self.pmb_would_subset[job] = self.pmb_would_subset.get(job, 0) + 1
        if self._last_was_subset.get(job) and not choice.is_subset:
            self.subset_then_full[job] = self.subset_then_full.get(job, 0) + 1
        self._last_was_subset[job] = choice.is_subset
        if choice.is_subset and full is not None:
            self.subsets[job] = self.subsets.get(job, 0) + 1
            self.full_mib.setdefault(job, []).append(full.scan_bytes / MIB)
            self.chosen_mib.setdefault(job, []).append(choice.scan_bytes / MIB)
            if full.eta > 0:
                self.eta_gain.setdefault(job, []).append(choice.eta / full.eta)

    def new_run(self) -> None:
        """A new simulated window starts: a job's previous launch is not this one's."""
        self._last_was_subset.clear()


@dataclass(frozen=True)
class SeedOutcome:
    variant: str
    seed: int
    p: float
    p0: float
    runs: int
    subset_runs: int
    run_seconds_median: float | None


@dataclass
class ScenarioOutcome:
    label: str
    outcomes: list[SeedOutcome]
    decisions: dict[str, DecisionCounts]  # variant -> over all seeds
    seconds: float  # wall time of the scenario

    def p(self, variant: str, seed: int) -> float:
        return next(o.p for o in self.outcomes if o.variant == variant and o.seed == seed)

    @property
    def seeds(self) -> list[int]:
        return sorted({o.seed for o in self.outcomes})

    def ratios(self, variant: str, to: str) -> list[float]:
        """Per seed: P(variant) / P(to) on the same seed's stream."""
        return [self.p(variant, s) / self.p(to, s) for s in self.seeds]

    def mean_p(self, variant: str) -> float:
        return statistics.mean(o.p for o in self.outcomes if o.variant == variant)


def run_scenario(
    label: str,
    cond: Conditions,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    variants: Sequence[str] = VARIANTS,
    dt_s: float = 0.5,
) -> ScenarioOutcome:
    started = time.monotonic()
    outcomes = []
    decisions = {v: DecisionCounts() for v in variants}
    for variant in variants:
        for seed in seeds:
            decisions[variant].new_run()
            r = simulate(cond, variant, seed, dt_s=dt_s, on_launch=decisions[variant].record)
            outcomes.append(
                SeedOutcome(variant, seed, r.p, r.p0, r.runs, r.subset_runs, r.run_seconds_median)
            )
    return ScenarioOutcome(label, outcomes, decisions, time.monotonic() - started)


def _mean_sd(values: Sequence[float]) -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.3f} ± {sd:.3f}"


def summary_markdown(results: Sequence[ScenarioOutcome]) -> str:
    lines = [
        "| scenario | P(pmb) | P(max_benefit) | P(random) | pmb / random | pmb / max_benefit "
        "| P(pmb) / P0 | runs pmb / mb / random (per seed) | pmb subset runs |",
        "|---|---|---|---|---|---|---|---|---|",
        f"| published (METHOD 4, one run) | {PUBLISHED_P['pmb']:,} | "
        f"{PUBLISHED_P['max_benefit']:,} | {PUBLISHED_P['random']:,} | "
        f"{PUBLISHED_PMB_OVER_RANDOM:.3f} | {PUBLISHED_PMB_OVER_MAX_BENEFIT:.3f} | | "
        f"{PUBLISHED_RUNS} (pmb) | {PUBLISHED_SUBSET_RUNS} of {PUBLISHED_RUNS} |",
    ]
    for res in results:
        n = len(res.seeds)
        runs = {v: sum(o.runs for o in res.outcomes if o.variant == v) / n for v in VARIANTS}
        pmb_runs = sum(o.runs for o in res.outcomes if o.variant == "pmb")
        pmb_subsets = sum(o.subset_runs for o in res.outcomes if o.variant == "pmb")
        p0 = statistics.mean(o.p0 for o in res.outcomes)
        lines.append(
            f"| {res.label} | {res.mean_p('pmb'):,.0f} | {res.mean_p('max_benefit'):,.0f} | "
            f"{res.mean_p('random'):,.0f} | {_mean_sd(res.ratios('pmb', 'random'))} | "
            f"{_mean_sd(res.ratios('pmb', 'max_benefit'))} | {res.mean_p('pmb') / p0:.1f} | "
            f"{runs['pmb']:.1f} / {runs['max_benefit']:.1f} / {runs['random']:.1f} | "
            f"{pmb_subsets} of {pmb_runs} |"
        )
    return "\n".join(lines)


def per_seed_markdown(results: Sequence[ScenarioOutcome]) -> str:
    """Each seed's ratios: how far one run per policy (the published design) can move."""
    lines = ["| scenario | ratio | " + " | ".join(f"seed {s}" for s in results[0].seeds) + " |"]
    lines.append("|---|---|" + "---|" * len(results[0].seeds))
    for res in results:
        for to in ("random", "max_benefit"):
            cells = " | ".join(f"{r:.3f}" for r in res.ratios("pmb", to))
            lines.append(f"| {res.label} | pmb / {to} | {cells} |")
    return "\n".join(lines)


def decisions_markdown(res: ScenarioOutcome) -> str:
    """Per job, over all seeds: PMB's runs and subsets (with the scans), and how often
    PMB's rule would have cut the full set Max-Benefit launched."""
    pmb, mb = res.decisions["pmb"], res.decisions["max_benefit"]
    lines = [
        "| job | pmb runs | pmb subsets | full / chosen MiB (subset runs, mean) "
        "| eta subset / full (mean) | next run full | pmb scan MiB (median) "
        "| scanned GiB pmb / mb | mb runs | mb launches pmb would cut |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for job in JOBS:
        full, chosen = pmb.full_mib.get(job, []), pmb.chosen_mib.get(job, [])
        scans = pmb.scan_mib.get(job, [])
        cut = f"{statistics.mean(full):,.1f} / {statistics.mean(chosen):,.1f}" if full else "-"
        gains = pmb.eta_gain.get(job, [])
        gain = f"{statistics.mean(gains):.2f}" if gains else "-"
        lines.append(
            f"| {job} | {pmb.runs.get(job, 0)} | {pmb.subsets.get(job, 0)} | {cut} | {gain} | "
            f"{pmb.subset_then_full.get(job, 0)} | "
            f"{statistics.median(scans) if scans else 0:,.1f} | "
            f"{sum(scans) / 1024:,.0f} / {sum(mb.scan_mib.get(job, [])) / 1024:,.0f} | "
            f"{mb.runs.get(job, 0)} | "
            f"{mb.pmb_would_subset.get(job, 0)} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab published-scale",
        description="The published experiment's conditions (METHOD 4) through the model: "
        "P(PMB)/P(Random) and P(PMB)/P(Max-Benefit) against the published 0.864 and 0.955.",
    )
    parser.add_argument("--seeds", default=",".join(map(str, DEFAULT_SEEDS)))
    parser.add_argument(
        "--scenarios", default="", help="comma-separated 1-based indices; empty: all"
    )
    parser.add_argument("--dt", type=float, default=0.5, help="simulation step, seconds")
    parser.add_argument("--duration", type=int, default=DURATION_S, help="window, seconds")
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s]
    if len(seeds) < 2:
        parser.error("--seeds needs at least two seeds (the ratios' sd is over seeds)")
    if args.dt <= 0 or round(1 / args.dt) * args.dt != 1:
        parser.error("--dt must divide one second (staleness is sampled every second)")
    chosen = scenarios()
    if args.scenarios:
        picks = [int(i) for i in args.scenarios.split(",")]
        if any(not 1 <= i <= len(chosen) for i in picks):
            parser.error(f"--scenarios takes indices 1-{len(chosen)}")
        chosen = [chosen[i - 1] for i in picks]
    started = time.monotonic()
    results = []
    for label, cond in chosen:
        cond = replace(cond, duration_s=args.duration)
        results.append(run_scenario(label, cond, seeds, dt_s=args.dt))
        print(f"# {label}: {results[-1].seconds:.0f} s", flush=True)
    print()
    print(summary_markdown(results))
    print()
    print(per_seed_markdown(results))
    for res in results:
        print(f"\nPMB's decisions, {res.label} (seeds {', '.join(map(str, seeds))}):\n")
        print(decisions_markdown(res))
    print(
        f"\n# {len(results)} scenarios x {len(VARIANTS)} variants x {len(seeds)} seeds in "
        f"{time.monotonic() - started:.0f} s"
    )
    return 0
