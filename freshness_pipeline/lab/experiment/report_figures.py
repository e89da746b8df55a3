"""The experiment report's figures: total staleness over time, and the marginal benefit of a
run's files."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.lab.experiment.run_files import RunSummary, read_runs, read_samples
from freshness_pipeline.scheduling.run_plan import RunPlan
from freshness_pipeline.scheduling.units import US_PER_S


def figure_staleness_over_time(runs: list[RunSummary], out: Path, tables: int = len(JOBS)) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seed = min(r.seed for r in runs)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    floor_drawn = False
    for run in sorted((r for r in runs if r.seed == seed), key=lambda r: r.variant):
        totals: dict[int, float] = defaultdict(float)
        floors: dict[int, float] = defaultdict(float)
        for row in read_samples(run.dir):
            at = int(row["at_us"])
            totals[at] += float(row["staleness_s"])
            floors[at] += float(row["floor_s"])
        times = sorted(totals)
        if not times:
            continue
        xs = [(t - run.start_us) / US_PER_S for t in times]
        ax.plot(xs, [totals[t] for t in times], label=run.variant, linewidth=1.2)
        if not floor_drawn:
            ax.plot(xs, [floors[t] for t in times], "k:", label="P0 floor (zero-cost)")
            floor_drawn = True
    ax.set_xlabel("seconds since start")
    ax.set_ylabel(f"summed staleness over the {tables} tables (s)")
    ax.set_title(f"Summed staleness over time (seed {seed})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def marginal_benefits(run_dir: Path) -> dict[str, list[float]]:
    """Per job: staleness reduced (watermark advance) per second of measured run time."""
    found: dict[str, list[float]] = defaultdict(list)
    for run in read_runs(run_dir):
        seconds = run.wall_s
        if not run.succeeded or seconds is None:
            continue
        plan = RunPlan.from_tags(run.tags)
        if plan is None or plan.t_done_us is None:
            continue  # a job's first run has no t_done to measure a reduction from
        if seconds > 0:
            found[plan.asset].append((plan.cutoff_us - plan.t_done_us) / US_PER_S / seconds)
    return found


def figure_marginal_benefit(runs: list[RunSummary], variants: list[str], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    jobs = list(JOBS)
    fig, axes = plt.subplots(1, len(jobs), figsize=(2.3 * len(jobs), 4), sharey=True)
    for ax, job in zip(axes, jobs, strict=True):
        data, labels = [], []
        for variant in variants:
            values = []
            for run in runs:
                if run.variant == variant:
                    values += marginal_benefits(run.dir).get(job, [])
            data.append(values or [float("nan")])
            labels.append(variant)
        ax.boxplot(data, showfliers=False)
        ax.set_xticks(range(1, len(labels) + 1), labels, rotation=60, fontsize=7)
        ax.set_title(job, fontsize=8)
    axes[0].set_ylabel("staleness reduced / run time (s/s)")
    fig.suptitle("Effective marginal benefit per run")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
