"""`freshness experiment`: its modes, its arguments, and the run of every (seed, variant)
with its report. The experiment itself is harness.py; this is its command line."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.scheduler_settings import DEFAULT_INTERVAL_S
from freshness_pipeline.lab.experiment.variants import INTERVAL_PREFIX, PEERS, VARIANTS
from freshness_pipeline.stream.cli_args import add_burst_args, burst_fields
from freshness_pipeline.stream.universe import DEFAULT_UNIVERSE_SIZE

if TYPE_CHECKING:
    from freshness_pipeline.lab.experiment.harness import ExperimentConfig

log = logging.getLogger("freshness")


EXPERIMENT_MODES: dict[str, dict[str, Any]] = {
    # short: CI-friendly, a few minutes. long: the thesis's variants, ours beyond it and the
    # peers, three seeds; about 6.5 minutes per variant and seed (the window plus start,
    # drain and stop), or one seed at a time with the same --out (the report pools what the
    # folder holds).
    # Both at 300 events/s with 10 s ingestion commits: on 2 cores a higher rate leaves the
    # derived jobs' runs waiting on ingestion's JVM (docs/results/README.md).
    "short": {
        "variants": "pmb,max_benefit,random,dagster_eager,interval",
        "seeds": "1",
        "duration": 90,
        "rate": 300.0,
        "commit_interval": 10.0,
        "layout": "published",
    },
    "long": {
        "variants": "pmb,max_benefit,random,dagster_eager,interval,pmb_footer_tmin,"
        "pmb_two_term,pmb_no_aging,pmb_no_clustering,pmb_pipeline,pmb_single,"
        "fixed_order_subsets,"
        "fixed_order_full",
        "seeds": "1,2,3",
        "duration": 300,
        "rate": 300.0,
        "commit_interval": 10.0,
        "warm_cost": True,
        "layout": "published",
    },
}


def _hold(text: str | None) -> tuple[float, float] | None:
    """`FROM,UNTIL` seconds into the window (e.g. 60,360), or None."""
    if not text:
        return None
    parts = text.split(",")
    if len(parts) != 2:
        raise ValueError(f"expected FROM,UNTIL in seconds (e.g. 60,360), got {text!r}")
    start, end = (float(p) for p in parts)
    if not 0 <= start < end:
        raise ValueError(f"expected 0 <= FROM < UNTIL, got {text!r}")
    return start, end


def _report_dir(args: argparse.Namespace) -> Path:
    """Where an experiment's report goes: `--report-dir`; else with `--out` beside the raw
    data (a run kept elsewhere must not overwrite the report committed for its mode);
    else docs/results/MODE, beside the default raw folder's campaign."""
    if args.report_dir:
        return Path(args.report_dir)
    if args.out:
        return Path(args.out) / "report"
    return PROJECT_ROOT / "docs" / "results" / args.mode


def _experiment_config(
    args: argparse.Namespace, mode: dict, variants: tuple, hold: tuple[float, float] | None
) -> ExperimentConfig:
    from freshness_pipeline.lab.experiment.harness import ExperimentConfig

    return ExperimentConfig(
        out_dir=Path(args.out or args.settings.state_dir / "experiments" / args.mode).resolve(),
        variants=variants,
        seeds=tuple(int(s) for s in (args.seeds or mode["seeds"]).split(",")),
        duration_s=int(args.duration or mode["duration"]),
        rate=float(args.rate or mode["rate"]),
        speedup=args.speedup,
        universe_size=args.universe_size,
        k=args.k,
        tick_s=args.tick,
        commit_interval_s=float(args.commit_interval or mode["commit_interval"]),
        **burst_fields(args),
        raw_packing=args.raw_packing,
        keep_lakehouses=args.keep_lakehouses,
        resume=args.resume,
        profile=args.settings.profile,
        warm_cost=mode.get("warm_cost", False) if args.warm_cost is None else args.warm_cost,
        layout=(mode.get("layout") if args.layout is None else args.layout) or None,
        wide_seed=args.wide,
        hold_s=hold,
        recovery_target_s=args.recovery_target,
        drain_s=args.drain,
        warmup_s=args.warmup,
    )


def cmd_experiment(args: argparse.Namespace) -> int:
    from freshness_pipeline.lab.experiment.harness import run_experiment
    from freshness_pipeline.lab.experiment.report import write_report
    from freshness_pipeline.lab.experiment.variants import variant_named, with_period
    from freshness_pipeline.runtime.stack import exit_on_signals

    # A campaign runs for hours, often in the background: SIGTERM or SIGINT unwinds it, so
    # the run in progress stops the stack it started (else Spark, Dagster and ingestion
    # were left running).
    exit_on_signals()

    mode = EXPERIMENT_MODES[args.mode]
    try:
        hold = _hold(args.hold)
    except ValueError as exc:
        print(f"--hold: {exc}", file=sys.stderr)
        return 2
    names = (args.variants or mode["variants"]).split(",")
    try:
        variants = tuple(variant_named(n) for n in names)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    try:
        if args.interval_period is not None:
            variants = tuple(
                with_period(v, args.interval_period) if v.name == "interval" else v
                for v in variants
            )
        config = _experiment_config(args, mode, variants, hold)
    except ValueError as exc:  # e.g. a hold outside the window: refused before Spark starts
        print(exc, file=sys.stderr)
        return 2
    runs = len(config.variants) * len(config.seeds)
    print(
        f"experiment ({args.mode}): {runs} runs of {config.window_s:.0f} s each, plus about "
        f"40 s of start and stop per run; raw data in {config.out_dir}",
        flush=True,
    )
    run_experiment(config, args.settings)
    report_dir = _report_dir(args)
    results = write_report(config.out_dir, report_dir)
    print(f"report: {report_dir / 'REPORT.md'}")
    for name, verdict in results["targets"].items():
        print(
            f"  {name}: {verdict['value']:.3f} (target <= {verdict['limit']}): "
            f"{'met' if verdict['met'] else 'missed'}"
        )
    return 0


def add_experiment_parser(sub) -> None:
    experiment = sub.add_parser(
        "experiment", help="compare scheduling policies on one recorded stream"
    )
    experiment.add_argument("--mode", choices=sorted(EXPERIMENT_MODES), default="short")
    experiment.add_argument(
        "--layout",
        help="the jobs' table layout (FRESHNESS_LAYOUT) for every run: the modes reproduce "
        "the thesis on `published`; '' for each declaration's own",
    )
    ours = [name for name in VARIANTS if name not in PEERS]
    experiment.add_argument(
        "--variants",
        help=f"comma-separated (default: the mode's), of {', '.join(ours)}; peers: "
        f"{', '.join(PEERS)} (the tuned period) or {INTERVAL_PREFIX}<seconds>",
    )
    experiment.add_argument("--seeds", help="comma-separated stream and policy seeds")
    experiment.add_argument("--duration", type=int, help="event-time seconds of stream per run")
    experiment.add_argument("--rate", type=float, help="events per event-time second")
    add_burst_args(experiment)
    experiment.add_argument(
        "--wide",
        type=int,
        metavar="SEED",
        help="the wide lakehouse (experiment/wide.py) of SEED beside the six jobs: 49 tables "
        "with seed 1; its declarations are written into --out",
    )
    experiment.add_argument(
        "--hold",
        metavar="FROM,UNTIL",
        help="the recovery condition: Dagster's daemon stopped from FROM to UNTIL seconds "
        "into the window (no launch by any automation), ingestion going on",
    )
    experiment.add_argument(
        "--interval-period",
        type=int,
        metavar="SECONDS",
        help="the `interval` peer's period for these conditions (tuned on a seed no report "
        f"uses, with interval_<N> variants); default the setting's, {DEFAULT_INTERVAL_S} s",
    )
    experiment.add_argument(
        "--recovery-target",
        type=float,
        default=300.0,
        help="after a hold: recovered once every table is within this staleness (s)",
    )
    experiment.add_argument(
        "--drain",
        type=float,
        default=240.0,
        metavar="SECONDS",
        help="after the window, how long the stop waits for runs in flight (they count as "
        "runs, not staleness; one still running then is cut off)",
    )
    experiment.add_argument(
        "--warmup",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="a warm service: the stack runs the pipeline this long before the window opens "
        "(a deployment's steady state rather than a fresh JVM's first minutes)",
    )
    experiment.add_argument("--speedup", type=float, default=1.0)
    experiment.add_argument("--universe-size", type=int, default=DEFAULT_UNIVERSE_SIZE)
    experiment.add_argument("--k", type=int, default=3, help="concurrent runs")
    experiment.add_argument("--tick", type=int, default=5, help="sensor tick seconds")
    experiment.add_argument(
        "--commit-interval", type=float, help="ingestion commit interval in s (mode's default)"
    )
    experiment.add_argument("--out", help="raw data folder (default .lakehouse/experiments/MODE)")
    experiment.add_argument(
        "--report-dir",
        help="default docs/results/MODE, or with --out the folder `report` in it (a run "
        "elsewhere never overwrites a committed report)",
    )
    experiment.add_argument("--keep-lakehouses", action="store_true")
    experiment.add_argument(
        "--raw-packing",
        action="store_true",
        help="the published raw-table regime for every variant: ingestion packs the raw "
        "tables' small files (FRESHNESS_RAW_PACKING), clustering off",
    )
    experiment.add_argument(
        "--warm-cost",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="first a calibration run (pmb on a seed no report uses), whose fitted cost "
        "coefficients every variant starts from (FRESHNESS_COST_PRIOR); default: on in the "
        "long mode",
    )
    experiment.add_argument(
        "--resume",
        action="store_true",
        help="keep (seed, variant) runs already finished in --out; run only the rest",
    )
    experiment.add_argument(
        "--profile",
        choices=["local", "cluster"],
        default=None,
        help="cluster: each run on its own Postgres and Spark master + worker (FRESHNESS_PROFILE)",
    )
    experiment.set_defaults(func=cmd_experiment)
