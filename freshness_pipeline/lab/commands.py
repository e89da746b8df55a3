"""The lab's commands, `freshness lab NAME [ARGS]`: one table of every benchmark, simulator,
report and reliability campaign, each a module's `main`, imported only when it runs.

A command whose `main` takes the settings gets the ones the CLI built once from the
environment; the others (the simulators, the report, the model check) read only files and
their arguments.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from dataclasses import dataclass

PACKAGE = "freshness_pipeline.lab"


@dataclass(frozen=True)
class LabCommand:
    name: str
    module: str  # under freshness_pipeline.lab
    summary: str
    takes_settings: bool = True

    def run(self, argv: Sequence[str], settings: object) -> int:
        main = importlib.import_module(f"{PACKAGE}.{self.module}").main
        done = main(list(argv), settings) if self.takes_settings else main(list(argv))
        return int(done or 0)


COMMANDS: tuple[LabCommand, ...] = (
    # The experiment's companions (the experiment itself is `freshness experiment`).
    LabCommand("report", "experiment.report", "an experiment's report from its runs", False),
    LabCommand(
        "simulate", "experiment.sim_studies", "the model of the pipeline, by variant", False
    ),
    LabCommand(
        "simulate-aging", "experiment.simulate_aging", "aging on the modelled machine", False
    ),
    LabCommand(
        "simulate-wide", "experiment.simulate_wide", "the model on the wide lakehouse", False
    ),
    LabCommand("model-check", "experiment.model_check", "the model against real runs", False),
    LabCommand(
        "published-scale", "experiment.published_scale", "the published conditions, modelled", False
    ),
    # Benchmarks: each prints figures for docs/BENCHMARKS.md.
    LabCommand("chain-plan", "bench.chain_plan", "the chain planner's time on a wide pipeline"),
    LabCommand(
        "clustering-files", "bench.clustering_files", "raw files with and without clustering"
    ),
    LabCommand("cost-fit", "bench.cost_fit", "the cost model against a campaign's steps", False),
    LabCommand(
        "first-materializations",
        "bench.first_materializations",
        "when each table first materialized",
        False,
    ),
    LabCommand(
        "fresh-cost", "bench.fresh_cost", "a fresh service's CPU for fixed work, arm by arm"
    ),
    LabCommand("handoff", "bench.handoff", "rows handed on in memory against read back"),
    LabCommand("incremental-growth", "bench.incremental_growth", "a run's time as the tables grow"),
    LabCommand(
        "ingest-rate", "bench.ingest_rate", "ingestion's capacity and its CPU at a live rate"
    ),
    LabCommand("jvm-profile", "bench.jvm_profile", "where the JVMs' CPU goes (a flight recording)"),
    LabCommand(
        "kafka-ingest-rate",
        "bench.kafka_ingest_rate",
        "Kafka ingestion beside the landing folder's",
    ),
    LabCommand("lineage-load", "bench.lineage_load", "what column lineage adds to loading", False),
    LabCommand("memory", "bench.memory", "the long-running processes' memory over a demo"),
    LabCommand("run-launch", "bench.run_launch", "how a code server starts runs"),
    LabCommand(
        "run-overhead", "bench.run_overhead", "a run's fixed cost: service against own Spark"
    ),
    LabCommand("sensor-tick", "bench.sensor_tick", "a sensor tick with 6 jobs and 5,000 files"),
    LabCommand("session-probe", "bench.session_probe", "one process's Spark session and SELECT 1"),
    LabCommand(
        "steps-at-once", "bench.steps_at_once", "a chain's steps in turn against side by side"
    ),
    LabCommand("write-modes", "bench.write_modes", "Hudi write modes and layouts, side by side"),
    # Reliability campaigns: each writes its section of docs/RELIABILITY.md.
    LabCommand("chaos", "reliability.chaos", "faults at random points, then both oracles"),
    LabCommand("soak", "reliability.soak", "the live demo for an hour, checked for growth"),
)
BY_NAME = {command.name: command for command in COMMANDS}


def cmd_lab(args: argparse.Namespace) -> int:
    return BY_NAME[args.lab_command].run(args.lab_args, args.settings)


def add_lab_parser(sub) -> None:
    width = max(len(command.name) for command in COMMANDS)
    lab = sub.add_parser(
        "lab",
        help="the lab: benchmarks, simulators, reports, reliability campaigns",
        description="Run one of the lab's commands; `freshness lab NAME --help` shows its "
        "arguments.",
        epilog="commands:\n" + "\n".join(f"  {c.name.ljust(width)}  {c.summary}" for c in COMMANDS),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    names = [command.name for command in COMMANDS]
    lab.add_argument("lab_command", choices=names, metavar="NAME", help="a command below")
    lab.add_argument("lab_args", nargs=argparse.REMAINDER, help="its own arguments")
    lab.set_defaults(func=cmd_lab)
