"""The stream's command-line arguments, shared by the commands that generate one (demo,
replay, record) and the experiment."""

from __future__ import annotations

import argparse
from typing import TypedDict

from freshness_pipeline.stream.universe import DEFAULT_UNIVERSE_SIZE


def add_burst_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--burst-every",
        type=int,
        default=0,
        help="every N event-time seconds a burst starts (default 0: a steady stream)",
    )
    p.add_argument("--burst-length", type=int, default=10, help="seconds a burst lasts")
    p.add_argument("--burst-factor", type=float, default=1.0, help="rate multiplier")
    p.add_argument(
        "--spike-symbols",
        type=int,
        default=0,
        help="a burst's extra events all go to this many symbols, drawn per burst (a "
        "news spike; default 0: spread like the rest)",
    )


class BurstFields(TypedDict):
    burst_every_s: int
    burst_s: int
    burst_factor: float
    spike_symbols: int


def burst_fields(args: argparse.Namespace) -> BurstFields:
    """The burst arguments under the names StreamConfig and ExperimentConfig give them."""
    return {
        "burst_every_s": args.burst_every,
        "burst_s": args.burst_length,
        "burst_factor": args.burst_factor,
        "spike_symbols": args.spike_symbols,
    }


def add_stream_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--rate", type=float, default=2000.0, help="events per event-time second")
    p.add_argument("--universe-size", type=int, default=DEFAULT_UNIVERSE_SIZE)
    add_burst_args(p)
