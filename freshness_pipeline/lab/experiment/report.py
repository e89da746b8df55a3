"""The experiment report: Markdown with PNG figures (matplotlib), laid out like the thesis.

    freshness lab report <experiment dir> <report dir>

Reads what the harness wrote (experiment.json; seed*/<variant>/summary.json, samples.csv.gz,
runs.json, commits.json, decision.json) and writes REPORT.md, results.json and figures:
P per variant with spread over seeds and ratios (table 4.6), summed staleness over time
(figure 4.3), effective marginal benefit per job (figure 4.2), subset selections (table
4.5), files written per commit (table 4.2), one annotated decision (table 4.3).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.config.paths import shown_path
from freshness_pipeline.lab.experiment.report_cost import (
    BUDGET_TEXT,
    CPU_TEXT,
    PER_REFRESH_TEXT,
    PHASES_TEXT,
    RUN_COST_TEXT,
    machine_budget_rows,
    phase_rows,
    run_cost_rows,
    service_per_refresh_rows,
    step_cpu_rows,
)
from freshness_pipeline.lab.experiment.report_figures import (
    figure_marginal_benefit,
    figure_staleness_over_time,
)
from freshness_pipeline.lab.experiment.report_recovery import hold_phase_rows, recovery_rows
from freshness_pipeline.lab.experiment.run_files import (
    RunSummary,
    job_specs,
    load_experiment,
    read_runs,
    read_samples,
    refreshes_by,
    samples_path,
)
from freshness_pipeline.lab.experiment.variants import PEERS, VARIANTS
from freshness_pipeline.scheduling.run_plan import RunPlan
from freshness_pipeline.scheduling.timefmt import iso
from freshness_pipeline.scheduling.units import US_PER_S

TARGETS = (("random", 0.80), ("max_benefit", 0.90))
# Where the scheduler has a choice (the wide lakehouse; a recovery after a hold).
WIDE_TARGETS = (("dagster_eager", 0.60), ("random", 0.80))
RECOVERY_TARGETS = (("max_benefit", 0.90),)
BASELINES = ("pmb", "max_benefit", "random")


@dataclass(frozen=True)
class RunFigures:
    """One run's activity in its window: Dagster runs and job refreshes that finished in
    it, every successful run's wall time and every job step's time (seconds)."""

    runs: int
    refreshes: int
    walls: tuple[float, ...]
    steps: tuple[float, ...]


def _mean_sd(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def p_table(runs: list[RunSummary]) -> tuple[list[str], dict[str, dict]]:
    by_variant: dict[str, list[RunSummary]] = defaultdict(list)
    for run in runs:
        by_variant[run.variant].append(run)
    stats: dict[str, dict[str, Any]] = {}
    for variant, items in by_variant.items():
        p_mean, p_sd = _mean_sd([r.P for r in items])
        p0_mean, _ = _mean_sd([r.P0 for r in items])
        stats[variant] = {
            "P_mean": p_mean,
            "P_sd": p_sd,
            "P0_mean": p0_mean,
            "seeds": len(items),
            "per_seed": {r.seed: r.P for r in items},
            "runs": statistics.mean(r.runs_succeeded for r in items),
            "note": items[0].note,
            # who launched the jobs; runs recorded before the peers existed: our sensor
            "automation": items[0].automation or "freshness_sensor",
        }
    # Ratios per seed, then averaged: each seed's policies replayed the same stream.
    for row in stats.values():
        for base in ("random", "max_benefit", "pmb"):
            if base in stats:
                ratios = [
                    row["per_seed"][s] / stats[base]["per_seed"][s]
                    for s in row["per_seed"]
                    if s in stats[base]["per_seed"]
                ]
                row[f"ratio_{base}"] = statistics.mean(ratios) if ratios else None
        row["ratio_P0"] = row["P_mean"] / row["P0_mean"] if row["P0_mean"] else None
    order = [v for v in (*BASELINES, *PEERS) if v in stats]
    order += sorted(v for v in stats if v not in order)
    return order, stats


def launched_plans(runs: list[RunSummary]) -> dict[str, list[RunPlan]]:
    """variant -> the sensor's plan of every successful run (what it chose and why), read
    once for the subset table and the controlled pair's sentence."""
    plans: dict[str, list[RunPlan]] = defaultdict(list)
    for run in runs:
        for record in read_runs(run.dir):
            plan = RunPlan.from_tags(record.tags)  # None: a peer's run (no plan)
            if record.succeeded and plan is not None:
                plans[run.variant].append(plan)
    return plans


def subset_rows(
    plans_by_variant: dict[str, list[RunPlan]],
    variants: list[str],
    jobs: Iterable[str] = JOBS,
) -> list[str]:
    lines = [
        "| variant | job | runs | subset runs | mean files chosen / pending | "
        "mean scan chosen (MiB) |",
        "|---|---|---|---|---|---|",
    ]
    for variant in variants:
        per_job: dict[str, list[RunPlan]] = defaultdict(list)
        for plan in plans_by_variant.get(variant, []):
            per_job[plan.asset].append(plan)
        for job in jobs:
            plans = per_job.get(job, [])
            if not plans:
                continue
            subsets = sum(p.is_subset for p in plans)
            chosen = statistics.mean(p.file_count for p in plans)
            pending = statistics.mean(p.pending_files for p in plans)
            scan = statistics.mean(p.scan_mib for p in plans)
            lines.append(
                f"| {variant} | {job} | {len(plans)} | {subsets} | "
                f"{chosen:.1f} / {pending:.1f} | {scan:.2f} |"
            )
    return lines


def subset_reason_rows(
    plans_by_variant: dict[str, list[RunPlan]], variants: list[str]
) -> list[str]:
    """Why a subset was or was not chosen, from each decision's own tags: a subset needs
    two candidate cutoffs (pending files whose arrival ranges end apart) and a cost that
    falls with the files left out. The part of E that depends on the set is b * MiB +
    c * files; a subset saves at most that, and gives up part of G."""
    lines = [
        "| variant | decisions | 1 candidate cutoff | 2+ candidates | subsets chosen | "
        "E (s, median) | set-dependent part of E (s, median) | its share of E (median) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for variant in variants:
        plans = plans_by_variant.get(variant, [])
        if not plans:
            continue
        single = sum(p.candidates <= 1 for p in plans)
        set_part = [
            p.cost_b_s_per_mib * p.scan_mib + p.cost_c_s_per_file * p.file_count for p in plans
        ]
        share = [part / p.cost_s for part, p in zip(set_part, plans, strict=True) if p.cost_s > 0]
        lines.append(
            f"| {variant} | {len(plans)} | {single} | {len(plans) - single} | "
            f"{sum(p.is_subset for p in plans)} | "
            f"{statistics.median(p.cost_s for p in plans):.2f} | "
            f"{statistics.median(set_part):.3f} | "
            f"{statistics.median(share) if share else 0:.1%} |"
        )
    return lines


# (variant, baseline, what the comparison isolates), as the registry of variants says
COMPARISONS = tuple((v.name, v.baseline, v.isolates) for v in VARIANTS.values() if v.baseline)


def paired_ratio(stats: dict[str, dict], variant: str, base: str) -> tuple[float, float, int]:
    """Mean and sd over seeds of P(variant) / P(base), pairing runs of the same stream."""
    mine, theirs = stats[variant]["per_seed"], stats[base]["per_seed"]
    ratios = [mine[s] / theirs[s] for s in mine if s in theirs and theirs[s]]
    if not ratios:
        return float("nan"), float("nan"), 0
    mean, sd = _mean_sd(ratios)
    return mean, sd, len(ratios)


def subset_counts(plans_by_variant: dict[str, list[RunPlan]]) -> dict[str, tuple[int, int]]:
    """variant -> (successful runs that took a subset, successful runs)."""
    return {
        variant: (sum(p.is_subset for p in plans), len(plans))
        for variant, plans in plans_by_variant.items()
    }


MODEL_VARIANTS = ("pmb", "max_benefit", "random")


def condition_sweep_rows(config: dict, seeds: tuple[int, ...] = (1,)) -> list[str]:
    """Issue 5: a missed target comes with the conditions that would change it. The model
    (`simulate.py`: the real planner and cost fitter on a modelled machine) starts from
    this experiment's stream and scheduler settings and varies one condition at a time."""
    from dataclasses import replace

    from freshness_pipeline.lab.experiment.sim_conditions import calibrated
    from freshness_pipeline.lab.experiment.sim_studies import compare, sweep, sweep_markdown

    base = replace(
        calibrated(),
        duration_s=int(config["duration_s"]),
        rate_eps=float(config["rate"]),
        commit_interval_s=float(config["commit_interval_s"]),
        k=int(config["k"]),
        tick_s=float(config["tick_s"]),
    )
    rows = [
        compare(label, cond, MODEL_VARIANTS, seeds)
        for label, cond in sweep(base, "this experiment's conditions, in the model")
    ]
    return [
        "A model, not a measurement: `freshness_pipeline/lab/experiment/simulate.py` runs the "
        "real planner and cost fitter on a modelled machine (a run's work is fixed + per "
        "MiB + per file seconds, shared by the runs in flight), calibrated against the "
        "long run on 2 cores. Each row changes one condition from this experiment's "
        f"settings (seeds {', '.join(map(str, seeds))}; `make simulate` gives all variants "
        "and 3 seeds). docs/results/README.md discusses it.",
        "",
        sweep_markdown(rows, MODEL_VARIANTS),
    ]


def comparison_rows(
    stats: dict[str, dict], subsets_taken: dict[str, tuple[int, int]] | None = None
) -> list[str]:
    """The paired ablation ratios, and how much of PMB's gain subset selection explains.
    `subsets_taken` (from `subset_counts`) lets the text say when the controlled pair chose
    no subset at all, so its difference is run timing, not subsets."""
    lines, missing = [], []
    for variant, base, question in COMPARISONS:
        if variant not in stats or base not in stats:
            missing.append(f"`{variant}` against `{base}`")
            continue
        mean, sd, n = paired_ratio(stats, variant, base)
        lines.append(f"| {variant} | {base} | {mean:.3f} | {sd:.3f} | {n} | {question} |")
    if lines:
        lines[:0] = [
            "| variant | against | P / P(against), mean over seeds | sd | seeds | "
            "what it isolates |",
            "|---|---|---|---|---|---|",
        ]
    if {"fixed_order_subsets", "fixed_order_full", "pmb", "random"} <= stats.keys():
        gain = stats["random"]["P_mean"] - stats["pmb"]["P_mean"]
        subsets = stats["fixed_order_full"]["P_mean"] - stats["fixed_order_subsets"]["P_mean"]
        lines += [
            "",
            f"Staleness PMB removes against Random: {gain:,.0f} s; subset selection "
            f"alone, with order and concurrency fixed, removes {subsets:,.0f} s",
        ]
        if gain > 0:
            lines[-1] += f" ({subsets / gain:.0%} of PMB's gain)."
        else:
            lines[-1] += " (PMB did not beat Random here, so no share is computed)."
        taken, total = (subsets_taken or {}).get("fixed_order_subsets", (None, None))
        if taken == 0:
            lines[-1] += (
                f" But `fixed_order_subsets` took no subset in any of its {total} runs: it "
                "processed the same files as `fixed_order_full`, so this difference is run "
                "timing, not subset selection."
            )
    seeds = max((s.get("seeds", len(s["per_seed"])) for s in stats.values()), default=0)
    spread = (
        "With one seed there is no spread; differences of a few percent are within the "
        "seed-to-seed spread of table 4.6."
        if seeds <= 1
        else "The sd column is the spread of the paired ratio over seeds: a mean within "
        "about one sd of 1 is not a difference."
    )
    lines += ["", f"A ratio below 1 means the variant left less staleness. {spread}"]
    if missing:
        lines += ["", "Not run in this experiment: " + ", ".join(missing) + "."]
    return lines


def run_figures(run: RunSummary) -> RunFigures:
    """One (variant, seed) run's activity in its window: Dagster runs and job refreshes
    that finished in it, every successful run's wall time and every job step's time."""
    window_end = run.window_end_s
    runs_done, refreshes = 0, 0
    walls: list[float] = []
    steps: list[float] = []
    for r in read_runs(run.dir):
        for meta in r.metadata_by_asset.values():
            if "duration_s" in meta:
                steps.append(float(meta["duration_s"]))
        refreshes += refreshes_by(r, window_end)
        wall = r.wall_s
        if not r.succeeded or wall is None or r.end is None:
            continue
        walls.append(wall)
        runs_done += r.end <= window_end
    return RunFigures(runs_done, refreshes, tuple(walls), tuple(steps))


def commit_lags(
    samples: list[dict], specs: Mapping[str, JobSpec] = JOBS
) -> tuple[list[float], int]:
    """Parent-to-child commit lag, from the 1 s watermark samples: for every step of a job
    table's watermark to w (a commit), the seconds until each job reading it first shows a
    watermark of at least w (it has committed what the parent wrote; a child of two parents
    waits for both). Returns the lags and how many steps no child reached in the window."""
    series: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for row in samples:
        if row.get("watermark_us"):
            series[row["table"]].append((int(row["at_us"]), int(row["watermark_us"])))
    lags: list[float] = []
    unreached = 0
    for child, spec in specs.items():
        seen = sorted(series.get(child, []))
        for parent in spec.inputs:
            steps = _steps(sorted(series.get(parent, [])))
            for at_us, mark in steps:
                caught = next((t for t, w in seen if t >= at_us and w >= mark), None)
                if caught is None:
                    unreached += 1
                else:
                    lags.append((caught - at_us) / US_PER_S)
    return lags, unreached


def _steps(series: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first sample time, watermark) at each change of a table's watermark."""
    steps, last = [], None
    for at_us, mark in series:
        if mark != last:
            steps.append((at_us, mark))
            last = mark
    return steps


def peer_rows(
    runs: list[RunSummary], stats: dict[str, dict], specs: Mapping[str, JobSpec] = JOBS
) -> list[str]:
    """Issue 18: PMB, Max-Benefit and Random beside what a Dagster user would pick
    instead, on the same streams: P, its ratios (paired by seed, with their sd), Dagster
    runs and job refreshes per window, and run times."""
    peers = [
        v for v in stats if stats[v].get("automation", "freshness_sensor") != "freshness_sensor"
    ]
    if not peers:
        return []
    # the named peers first, then others (interval_<N> from tuning) by name
    peers.sort(key=lambda v: (PEERS.index(v) if v in PEERS else len(PEERS), v))
    shown = [v for v in BASELINES if v in stats] + peers
    lines = [
        "## Beside what a Dagster user would pick",
        "",
        f"`dagster_eager`: `AutomationCondition.eager()` on the {len(specs)} job assets, "
        "evaluated by "
        "Dagster's asset daemon (`AutomationConditionSensorDefinition`), with the raw tables "
        "reported as observed whenever ingestion commits; `interval`: all of them every N "
        "seconds. Both: our freshness sensor off, each run processing all pending input "
        "(no run config), the same run queue (K) and writer pools, the same recorded "
        "streams, seeds and sampler. A peer's Dagster run may refresh several tables one "
        "after another, so runs and refreshes are counted apart: a run counts when it "
        "ended inside the window, a refresh when its table's materialization landed there "
        "(as the sampler credits it), whenever its run ended. Ratios are per seed, then "
        "averaged; sd is over seeds. Parent-to-child lag: from each commit of a job's table "
        "to the first sample where each job reading it has caught up with it (a child of "
        "two parents waits for both), from the 1 s samples, pooled over seeds.",
        "",
        "| variant | P mean | sd | seeds | P / P(pmb) | sd | P / P(max_benefit) | "
        "P / P(random) | P / P0 | Dagster runs per window | job refreshes per window | "
        "run (s, median) | job step (s, median) | parent-to-child lag (s, median) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for variant in shown:
        row = stats[variant]
        mine = [r for r in runs if r.variant == variant]
        figures = [run_figures(r) for r in mine]
        runs_per = statistics.mean(f.runs for f in figures) if figures else float("nan")
        refreshes = statistics.mean(f.refreshes for f in figures) if figures else float("nan")
        walls = [w for f in figures for w in f.walls]
        steps = [w for f in figures for w in f.steps]

        def ratio(base: str, variant: str = variant) -> tuple[str, str]:
            if base not in stats:
                return "-", "-"
            mean, sd, n = paired_ratio(stats, variant, base)
            if not n:
                return "-", "-"
            return f"{mean:.3f}", (f"{sd:.3f}" if n > 1 else "-")  # one seed: no spread

        vs_pmb, sd_pmb = ratio("pmb")
        vs_mb, _ = ratio("max_benefit")
        vs_random, _ = ratio("random")
        p0 = f"{row['ratio_P0']:.2f}" if row.get("ratio_P0") else "-"
        wall = f"{statistics.median(walls):.1f}" if walls else "-"
        step = f"{statistics.median(steps):.1f}" if steps else "-"
        lags = [
            lag
            for r in mine
            if samples_path(r.dir).exists()
            for lag in commit_lags(read_samples(r.dir), specs)[0]
        ]
        lag = f"{statistics.median(lags):.1f}" if lags else "-"
        lines.append(
            f"| {variant} | {row['P_mean']:,.0f} | {row['P_sd']:,.0f} | {row['seeds']} | "
            f"{vs_pmb} | {sd_pmb} | {vs_mb} | {vs_random} | {p0} | {runs_per:.1f} | "
            f"{refreshes:.1f} | {wall} | {step} | {lag} |"
        )
    notes = {v: stats[v]["note"] for v in peers}
    lines += ["", *(f"- `{v}`: {note}." for v, note in notes.items())]
    if "pmb" in stats:
        for peer in peers:
            mean, _, n = paired_ratio(stats, "pmb", peer)
            if n:
                word = "below" if mean < 1 else "above"
                lines.append(
                    f"- P(pmb) / P({peer}) = {mean:.3f}: PMB left {abs(1 - mean):.1%} "
                    f"{word} the staleness of `{peer}` ({n} seed{'s' if n > 1 else ''})."
                )
    return [*lines, ""]


def files_per_commit_rows(run: RunSummary) -> list[str]:
    commits = json.loads((run.dir / "commits.json").read_text())
    lines = ["| table | commits | files per commit (mean) | min | max |", "|---|---|---|---|---|"]
    for table, items in commits.items():
        files = [c["files"] for c in items if c["action"] == "commit"]
        if files:
            lines.append(
                f"| {table} | {len(files)} | {statistics.mean(files):.1f} | "
                f"{min(files)} | {max(files)} |"
            )
    return lines


def decision_rows(run: RunSummary) -> list[str]:
    path = run.dir / "decision.json"
    decision = json.loads(path.read_text()) if path.exists() else None
    if not decision or not decision["jobs"]:
        return ["(no job was runnable at any snapshot: all were running or waiting)"]
    job = max(decision["jobs"], key=lambda j: len(j["candidates"]))
    lines = [
        f"Job `{job['job']}` at {_clock(decision['now_us'])} UTC: {job['pending_files']} "
        f"pending files, {len(job['candidates'])} candidate cutoffs; the planner chose "
        f"u = {_clock(job['u_us'])} with {job['files']} files (eta {job['eta']:.3f}).",
        "",
        "| k | u | files | scan MiB | E (s) | G (s) | eta |",
        "|---|---|---|---|---|---|---|",
    ]
    rows = job["candidates"]
    for k, row in enumerate(rows, start=1):
        mark = " (chosen)" if row["u_us"] == job["u_us"] else ""
        mark += " (full set)" if k == len(rows) else ""
        lines.append(
            f"| {k} | {_clock(row['u_us'])} | {row['files']} | {row['scan_bytes'] / 2**20:.2f} | "
            f"{row['cost_s']:.2f} | {row['gain_s']:.1f} | {row['eta']:.3f}{mark} |"
        )
    others = [
        f"{j['job']} {j['eta']:.3f} ({j['files']} of {j['pending_files']} files)"
        for j in decision["jobs"]
        if j is not job
    ]
    if others:
        lines += ["", "Other runnable jobs' best eta in that state: " + "; ".join(others) + "."]
    return lines


def _bursts(config: dict) -> str:
    every, factor = config.get("burst_every_s", 0), config.get("burst_factor", 1.0)
    if not every or factor == 1.0:
        return ""
    spikes = config.get("spike_symbols", 0)
    return (
        f" Bursts: every {every} s, the first {config.get('burst_s', 10)} s at {factor:g}x "
        "the rate"
        + (
            f", the extra events on {spikes} symbols drawn per burst (news spikes)."
            if spikes and factor > 1
            else "."
        )
    )


def _clock(us: int | None) -> str:
    return iso(us, "clock", none="-")


def setting_rows(exp_dir: Path, facts: dict, runs: list[RunSummary]) -> list[str]:
    config = facts["config"]
    return [
        "# Freshness experiment report",
        "",
        f"Generated {datetime.now(UTC):%Y-%m-%d %H:%M} UTC from `{shown_path(exp_dir)}` by "
        f"`freshness lab report`.",
        "",
        "## Setting",
        "",
        f"- Machine: {facts['cpus']} cores, {facts['memory_gib']} GiB; {facts['platform']}; "
        f"Python {facts['python']}; {facts['java']}.",
        f"- Versions: Dagster {facts['dagster']}, PySpark {facts['pyspark']}, jars "
        f"{', '.join(facts['hudi_bundle'])}.",
        _commit_row(facts, runs),
        _layout_row(runs),
        f"- Stream: {config['duration_s']} event-time seconds at {config['rate']:.0f} events/s "
        f"({config['duration_s'] * config['rate']:,.0f} events) over {config['universe_size']} "
        f"companies, replayed at speed-up {config['speedup']}; one recorded stream per seed, "
        f"replayed identically for every variant.{_bursts(config)}",
        f"- Scheduler: K = {config['k']}, sensor tick {config['tick_s']} s; ingestion commits "
        f"every {config['commit_interval_s']} s; seeds {sorted({r.seed for r in runs})}."
        + (
            " Raw tables packed (FRESHNESS_RAW_PACKING: each commit rewrites a partition's "
            "file with its new rows, as in the published experiment), clustering off."
            if config.get("raw_packing")
            else ""
        ),
        f"- Measurement: every second, each non-raw table's watermark from its Hudi timeline; "
        f"window {config['duration_s'] / config['speedup']:.0f} s from the moment the stack is "
        "up. P = sum over tables and samples of (now - watermark); P0 = the same with each "
        "table at its raw inputs' watermark (a zero-cost refresh).",
        "- Every run: a fresh lakehouse and Dagster instance, its own shared Spark service.",
        _cost_prior_row(exp_dir),
        "",
    ]


def _layout_row(runs: list[RunSummary]) -> str:
    """The layout of the jobs' tables the runs measured (FRESHNESS_LAYOUT)."""
    layouts = sorted({run.layout or "published" for run in runs})
    named = {
        "published": "`published` (partitioned by the symbol's first letter, as in the thesis)",
        "declared": "each declaration's own (partitioned by event hour)",
    }
    return "- Tables' layout: " + "; ".join(named.get(x, f"`{x}`") for x in layouts) + "."


def _commit_row(facts: dict, runs: list[RunSummary]) -> str:
    """The code the runs measured: one commit, or every commit with its runs' count."""
    commits: dict[str, int] = {}
    for run in runs:
        commit = run.commit or "not recorded"
        commits[commit] = commits.get(commit, 0) + 1
    if len(commits) == 1:
        return f"- Code: every run on commit `{next(iter(commits))}`."
    listed = ", ".join(f"`{c}` ({n} runs)" for c, n in sorted(commits.items()))
    return f"- Code: **runs of {len(commits)} commits pooled**: {listed}."


def _cost_prior_row(exp_dir: Path) -> str:
    """Where the planner's cost coefficients started (the calibration's prior, if any)."""
    path = exp_dir / "cost_prior.json"
    if not path.exists():
        return (
            "- Cost models: each variant's sensor started from the built-in guess (20 s a "
            "step, 3 s a run) and fitted from its own runs as they landed."
        )
    prior = json.loads(path.read_text())
    jobs = ", ".join(
        f"{job} {c['a_s']:.1f} s + {c['b_s_per_mib']:.3f} s/MiB + {c['c_s_per_file']:.3f} s/file"
        for job, c in prior["jobs"].items()
    )
    return (
        f"- Cost models: every variant's sensor started from the same coefficients, "
        f"fitted on a {prior['source']} (`cost_prior.json`): {jobs}; L = "
        f"{prior['run_cost_s']:.2f} s a run; then fitted from its own runs as they landed."
    )


def p_rows(order: list[str], stats: dict[str, dict]) -> list[str]:
    """Table 4.6: P per variant with its ratios."""
    lines = [
        "## Total staleness P (table 4.6)",
        "",
        "| variant | P mean | sd | seeds | runs | P / P(random) | P / P(max_benefit) | "
        "P / P0 | what it is |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant in order:
        row = stats[variant]

        def ratio(key: str, row=row) -> str:
            return f"{row[key]:.3f}" if row.get(key) is not None else "-"

        lines.append(
            f"| {variant} | {row['P_mean']:,.0f} | {row['P_sd']:,.0f} | {row['seeds']} | "
            f"{row['runs']:.0f} | {ratio('ratio_random')} | {ratio('ratio_max_benefit')} | "
            f"{ratio('ratio_P0')} | {row['note']} |"
        )
    p0 = statistics.mean(r["P0_mean"] for r in stats.values())
    return [*lines, "", f"P0 (zero-cost floor, mean over runs): {p0:,.0f}.", ""]


def targets_of(config: Mapping) -> tuple[tuple[str, float], ...]:
    """The ratio targets of these conditions: a recovery's, the wide lakehouse's, or the
    thesis reproduction's."""
    if config.get("hold_s"):
        return RECOVERY_TARGETS
    if config.get("wide_seed") is not None:
        return WIDE_TARGETS
    return TARGETS


def target_rows(
    order: list[str], stats: dict[str, dict], targets: Iterable[tuple[str, float]] = TARGETS
) -> tuple[list[str], dict]:
    """The targets, each met or missed, and the verdicts for results.json."""
    lines = ["### Targets", ""]
    verdicts: dict[str, dict] = {}
    if "pmb" in stats:
        for base, limit in targets:
            value = stats["pmb"].get(f"ratio_{base}")
            if value is None:
                continue
            met = value <= limit
            verdicts[f"pmb/{base}"] = {"value": value, "limit": limit, "met": met}
            lines.append(
                f"- P(pmb) / P({base}) = {value:.3f}, target <= {limit}: "
                f"**{'met' if met else 'missed'}**."
            )
    best = min(order, key=lambda v: stats[v]["P_mean"])
    best_ratio = stats[best]["ratio_P0"]
    verdicts["best/P0"] = {
        "variant": best,
        "value": best_ratio,
        "limit": 2.0,
        "met": best_ratio is not None and best_ratio <= 2.0,
    }
    lines.append(
        f"- Best variant `{best}`: P / P0 = {best_ratio:.2f}, target <= 2: "
        f"**{'met' if verdicts['best/P0']['met'] else 'missed'}**."
    )
    return lines, verdicts


def detail_rows(
    runs: list[RunSummary],
    order: list[str],
    stats: dict,
    plans: dict,
    specs: Mapping[str, JobSpec] = JOBS,
) -> list[str]:
    """Ablations, run cost, the figures, subsets, files per commit and one decision."""
    pmb_run = next((r for r in runs if r.variant == "pmb"), runs[0])
    return [
        "",
        "## Ablations, the controlled run and the pipeline-aware variant",
        "",
        *comparison_rows(stats, subset_counts(plans)),
        "",
        "## What a run costs here",
        "",
        RUN_COST_TEXT,
        "",
        *run_cost_rows(runs, order, len(specs)),
        "",
        "### Where a run's time goes (median seconds per phase, successful runs)",
        "",
        PHASES_TEXT,
        "",
        *phase_rows(runs, specs.keys()),
        "",
        "### Where the machine went",
        "",
        BUDGET_TEXT,
        "",
        *machine_budget_rows(runs, order),
        "",
        "### The Spark service's CPU per job refresh",
        "",
        PER_REFRESH_TEXT,
        "",
        *service_per_refresh_rows(runs, order),
        "",
        "### What a step costs in its JVM (median per step, successful runs)",
        "",
        CPU_TEXT,
        "",
        *step_cpu_rows(runs, order, specs.keys()),
        "",
        "## Summed staleness over time (figure 4.3)",
        "",
        "![summed staleness](staleness_over_time.png)",
        "",
        "## Effective marginal benefit per job (figure 4.2)",
        "",
        "Watermark advance of each successful run divided by its measured run time "
        "(start to end of the Dagster run). Sensor runs only: a peer's run carries no plan "
        "(no cutoff chosen before it ran), so its boxes are empty.",
        "",
        "![marginal benefit](marginal_benefit.png)",
        "",
        "## Subset selections (table 4.5)",
        "",
        *subset_rows(plans, order, specs),
        "",
        "Why a subset was or was not chosen, from each sensor decision's tags: a subset "
        "needs at least two candidate cutoffs (pending files whose arrival ranges end "
        "apart; a commit that rewrites every file group leaves one), and it pays only if E "
        "falls with the files left out. The set-dependent part of E is b * MiB + c * files "
        "of the chosen set under the cost model of that decision: a subset saves at most "
        "that, and gives up part of G.",
        "",
        *subset_reason_rows(plans, order),
        "",
        f"## Files written per commit (table 4.2; `{pmb_run.variant}`, seed {pmb_run.seed})",
        "",
        *files_per_commit_rows(pmb_run),
        "",
        "## One decision with its candidate table (table 4.3)",
        "",
        "Recomputed by the harness with PMB from the live Hudi metadata and run history "
        f"in the second half of the `{pmb_run.variant}` run (seed {pmb_run.seed}); "
        "of snapshots every 15 s, the one with the most candidate cutoffs.",
        "",
        *decision_rows(pmb_run),
        "",
    ]


def write_report(exp_dir: Path, report_dir: Path) -> dict:
    facts, runs = load_experiment(exp_dir)
    config = facts["config"]
    specs = job_specs(config)
    report_dir.mkdir(parents=True, exist_ok=True)
    order, stats = p_table(runs)
    figure_staleness_over_time(runs, report_dir / "staleness_over_time.png", len(specs))
    figure_marginal_benefit(runs, order, report_dir / "marginal_benefit.png")
    targets, verdicts = target_rows(order, stats, targets_of(config))
    if config.get("hold_s"):
        recovery, recovered = recovery_rows(runs, order, config)
        targets += ["", *recovery, *hold_phase_rows(runs, order, config)]
        verdicts.update(recovered)
    lines = [*setting_rows(exp_dir, facts, runs), *p_rows(order, stats), *targets]
    six = config.get("wide_seed") is None and not config.get("hold_s")
    if six and not all(v["met"] for v in verdicts.values()):
        # the model's sweep is of the six-table conditions
        sweep = condition_sweep_rows(facts["config"])
        lines += ["", "### Which conditions would change the verdict", "", *sweep]
    lines += ["", *peer_rows(runs, stats, specs)]
    lines += detail_rows(runs, order, stats, launched_plans(runs), specs)
    (report_dir / "REPORT.md").write_text("\n".join(lines))
    shown = {**facts, "config": {**facts["config"], "out_dir": shown_path(exp_dir)}}
    results = {"stats": stats, "targets": verdicts, "facts": shown}
    (report_dir / "results.json").write_text(json.dumps(results, indent=1, default=str))
    return results


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    if len(args) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    write_report(Path(args[0]), Path(args[1]))
    print(f"wrote {Path(args[1]) / 'REPORT.md'}")
    return 0
