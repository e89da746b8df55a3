"""Scheduler knobs (policy, K, tick, tmin and cost modes, seed), validated; built from the
environment by settings.py, the one module that reads it."""

from __future__ import annotations

from dataclasses import dataclass

from freshness_pipeline.scheduling.budget import LAUNCH_RULES
from freshness_pipeline.scheduling.cost_model import COST_MODES, CostMode, CostPrior
from freshness_pipeline.scheduling.limits import launch_limit
from freshness_pipeline.scheduling.planner import POLICIES, Policy

DEFAULT_K = 3  # the run queue in dagster.yaml says the same; a test keeps them equal
TMIN_MODES = ("pending", "footer")
# Who launches the six jobs: our freshness sensor (by FRESHNESS_POLICY), Dagster's own
# declarative automation (`AutomationCondition.eager()`), or a fixed interval. The names of
# automation.AUTOMATION_REGISTRY, kept here so settings stay free of dagster imports; a test
# keeps the two equal.
AUTOMATIONS = ("freshness_sensor", "dagster_eager", "interval")
# The interval automation's default period, tuned on a seed of its own (the experiment's
# `interval` variant uses it; docs/BENCHMARKS.md, "The interval peer: tuning N").
DEFAULT_INTERVAL_S = 40
# Dagster's sensor daemon loops at most every 5 s (MIN_INTERVAL_LOOP_TIME in
# dagster/_daemon/sensor.py), so a shorter interval would silently mean 5 s.
MIN_TICK_S = 5
# The aging bound (planner.age): a runnable job that has waited longer is ranked first.
# Two minutes: on the demo's machine a run takes 60-190 s, so a job past the bound
# still gets a slot (after at most about one more run) near the 300 s staleness target,
# while a job that only waits out a run or two of its peers is left to eta's order.
DEFAULT_MAX_WAIT_S = 120
CHAIN_MODES = ("planned", "off")


@dataclass(frozen=True)
class SchedulerSettings:
    policy: Policy = "pmb"
    k: int = DEFAULT_K
    tick_s: int = 10
    tmin_mode: str = "pending"  # "footer": the published whole-file footer approximation
    cost_mode: CostMode = "three_term"
    seed: int = 0
    automation: str = "freshness_sensor"
    interval_s: int = DEFAULT_INTERVAL_S  # the `interval` automation's period
    # The aging bound in seconds (planner.age); None: no aging, the policy's order alone.
    max_wait_s: int | None = DEFAULT_MAX_WAIT_S
    # A never-materialized job takes the next free slot (planner.age): every table exists
    # within a few runs of the start, at a cost in P where runs are slow.
    first_runs_first: bool = True
    # `planned`: the sensor plans whole runs (scheduling/chains.py, METHOD 8); `off`: one
    # table per run, as published.
    chains: str = "planned"
    # The most runs the sensor keeps in flight (FRESHNESS_RUNS_AT_ONCE); None: K.
    runs_at_once: int | None = None
    # Coefficients to start from (FRESHNESS_COST_PRIOR); None: the built-in guess.
    cost_prior: CostPrior | None = None
    # Steps a chained run executes at once (FRESHNESS_STEPS_AT_ONCE; chains.steps_at_once_for).
    steps_at_once: int = 1
    # When a run launches (FRESHNESS_LAUNCH_RULE): `slots`, into every free slot of K;
    # `budget`, only when it gains more than it costs the runs in flight (budget.py).
    launch_rule: str = "slots"

    @property
    def launch_limit(self) -> int:
        """How many runs the planner fills: K, or fewer where the machine runs fewer at
        full speed."""
        return launch_limit(self.k, self.runs_at_once)

    @property
    def plans_chains(self) -> bool:
        return self.chains == "planned"

    def __post_init__(self) -> None:
        choices = (
            ("FRESHNESS_POLICY", self.policy, POLICIES),
            ("FRESHNESS_TMIN_MODE", self.tmin_mode, TMIN_MODES),
            ("FRESHNESS_COST_MODE", self.cost_mode, COST_MODES),
            ("FRESHNESS_AUTOMATION", self.automation, AUTOMATIONS),
            ("FRESHNESS_CHAINS", self.chains, CHAIN_MODES),
            ("FRESHNESS_LAUNCH_RULE", self.launch_rule, LAUNCH_RULES),
        )
        for name, value, accepted in choices:
            if value not in accepted:
                raise ValueError(f"{name} must be one of {accepted}, got {value!r}")
        if self.k < 1:
            raise ValueError(f"FRESHNESS_K must be at least 1, got {self.k}")
        if self.tick_s < MIN_TICK_S:
            raise ValueError(
                f"FRESHNESS_TICK_S must be at least {MIN_TICK_S} (Dagster's sensor daemon "
                f"evaluates a sensor at most every {MIN_TICK_S} s), got {self.tick_s}"
            )
        if self.max_wait_s is not None and self.max_wait_s < 1:
            raise ValueError(
                f"FRESHNESS_MAX_WAIT_S must be at least 1 second or `off`, got {self.max_wait_s}"
            )
        if self.runs_at_once is not None and self.runs_at_once < 1:
            raise ValueError(f"FRESHNESS_RUNS_AT_ONCE must be at least 1, got {self.runs_at_once}")
        if self.steps_at_once < 1:
            raise ValueError(
                f"FRESHNESS_STEPS_AT_ONCE must be at least 1, got {self.steps_at_once}"
            )
        if self.interval_s < MIN_TICK_S:
            raise ValueError(
                f"FRESHNESS_INTERVAL_S must be at least {MIN_TICK_S} (Dagster's sensor daemon "
                f"evaluates a sensor at most every {MIN_TICK_S} s), got {self.interval_s}"
            )
