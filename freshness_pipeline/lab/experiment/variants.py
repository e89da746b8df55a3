"""The experiment's variants: one registry, read by the harness (what each run sets), the
simulator (how it models each), the report (what each is compared with) and the CLI.

A variant is our sensor with a policy and scheduler settings, or a peer: another
automation a Dagster user would pick instead. The simulator models a variant from the same
policy and settings (`model`), so a new variant is modelled, or says why not, without a
second list to keep in step.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from freshness_pipeline.config.scheduler_settings import DEFAULT_INTERVAL_S, MIN_TICK_S

# The interval peer's period: the setting's default, which is the P-minimizing N of the
# periods tried on a seed no measured run uses (docs/BENCHMARKS.md, "The interval peer:
# tuning N").
TUNED_INTERVAL_S = DEFAULT_INTERVAL_S
TUNING_SEED = 99
INTERVAL_PREFIX = "interval_"  # interval_<N>: the interval peer every N s (tuning N)
OUR_SENSOR = "freshness_sensor"
# The plain Dagster peer's own code location (it replaces our definitions in its runs).
PLAIN_PEER_MODULE = "freshness_pipeline.lab.peers.dagster_plain.definitions"

# The settings the simulator models (Variant.model reads each; one a variant leaves out
# is the experiment's conditions' own, or the three-term cost mode).
MODELLED_SETTINGS = frozenset(
    {
        "FRESHNESS_COST_MODE",
        "FRESHNESS_CHAINS",
        "FRESHNESS_RUNS_AT_ONCE",
        "FRESHNESS_STEPS_AT_ONCE",
        "FRESHNESS_LAUNCH_RULE",
    }
)


@dataclass(frozen=True)
class Model:
    """How the simulator runs a variant of our sensor: the planner's policy and cost mode,
    and the settings that override the conditions (None: the conditions' own)."""

    policy: str
    cost_mode: str
    chains: bool | None = None
    runs_at_once: int | None = None
    steps_at_once: int | None = None
    launch_rule: str | None = None


@dataclass(frozen=True)
class Variant:
    """A scheduler configuration under test: a policy plus scheduler settings."""

    name: str
    policy: str  # FRESHNESS_POLICY of our sensor; "" for a peer (our sensor is off)
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""
    automation: str = OUR_SENSOR  # FRESHNESS_AUTOMATION: who launches the jobs
    # The report's comparison: the variant this one is measured against (paired by seed)
    # and what the pair isolates; "" when it is not an ablation of another.
    baseline: str = ""
    isolates: str = ""
    # A peer that is its own code location (a module Dagster loads instead of ours): none
    # of our definitions, sensor or Spark service in its runs ("" for every other).
    code_location: str = ""

    @property
    def is_peer(self) -> bool:
        return self.automation != OUR_SENSOR

    @property
    def unmodelled(self) -> tuple[str, ...]:
        """The settings this variant changes that the simulator does not model."""
        return tuple(sorted(set(self.env) - MODELLED_SETTINGS))

    @property
    def model(self) -> Model | None:
        """The simulator's model of this variant of our sensor; None for a peer (the
        simulator models each peer by its own rule) or a setting it does not model."""
        if self.is_peer or self.unmodelled:
            return None
        chains = self.env.get("FRESHNESS_CHAINS")
        runs = self.env.get("FRESHNESS_RUNS_AT_ONCE")
        steps = self.env.get("FRESHNESS_STEPS_AT_ONCE")
        return Model(
            policy=self.policy,
            cost_mode=self.env.get("FRESHNESS_COST_MODE", "three_term"),
            chains=None if chains is None else chains != "off",
            runs_at_once=None if runs is None else int(runs),
            steps_at_once=None if steps is None else int(steps),
            launch_rule=self.env.get("FRESHNESS_LAUNCH_RULE"),
        )


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("pmb", "pmb", note="Partitioned-Max-Benefit (file subsets)"),
        Variant("max_benefit", "max_benefit", note="Max-Benefit: all pending files"),
        Variant("random", "random", note="a random runnable job, all pending files"),
        Variant(
            "pmb_footer_tmin",
            "pmb",
            {"FRESHNESS_TMIN_MODE": "footer"},
            "ablation: tmin from whole-file footers (published) instead of pending ranges",
            baseline="pmb",
            isolates="tmin from whole-file footers (published) instead of the pending range (ours)",
        ),
        Variant(
            "pmb_two_term",
            "pmb",
            {"FRESHNESS_COST_MODE": "two_term"},
            "ablation: E = a + b*bytes (published) instead of a + b*bytes + c*files",
            baseline="pmb",
            isolates="E = a + b*bytes (published) instead of a + b*bytes + c*files",
        ),
        Variant(
            "pmb_no_aging",
            "pmb",
            {"FRESHNESS_MAX_WAIT_S": "off", "FRESHNESS_FIRST_RUNS_FIRST": "false"},
            "ablation: eta's order alone (published), no aging bound and no first runs first",
            baseline="pmb",
            isolates="eta's order alone (published) instead of with aging (a bound on every "
            "job's wait, first runs first)",
        ),
        Variant(
            "pmb_no_clustering",
            "pmb",
            {"FRESHNESS_CLUSTERING_TABLES": "none"},
            "ablation: the raw tables never clustered (P with and without)",
            baseline="pmb",
            isolates="the raw tables never clustered instead of clustered while ingestion runs",
        ),
        Variant(
            "pmb_pipeline",
            "pmb_pipeline",
            note="beyond the thesis: benefit also counts downstream staleness a run unlocks",
            baseline="pmb",
            isolates="benefit also counts the downstream staleness a run unlocks",
        ),
        Variant(
            "pmb_single",
            "pmb",
            {"FRESHNESS_CHAINS": "off"},
            "ablation: one table per run (published) instead of planned chains (METHOD 8)",
            baseline="pmb",
            isolates="one table per run (published) instead of planned chains: one launch per "
            "run, and the tables below a refresh wait for later ticks",
        ),
        Variant(
            "pmb_serial",
            "pmb",
            {"FRESHNESS_RUNS_AT_ONCE": "1"},
            "beyond the thesis: PMB with chains keeping one run in flight (of the K allowed): "
            "on 2 cores a second run only shares the machine",
            baseline="pmb",
            isolates="one run in flight (FRESHNESS_RUNS_AT_ONCE=1) instead of filling all K slots",
        ),
        Variant(
            "pmb_budget",
            "pmb",
            {"FRESHNESS_LAUNCH_RULE": "budget"},
            "beyond the thesis: the machine as the budget (METHOD 10): a run launches only "
            "when its earlier commits save more staleness than it costs the runs in flight",
            baseline="pmb",
            isolates="a run launched only when it gains more than it costs the runs in flight "
            "instead of into every free slot of K",
        ),
        Variant(
            "pmb_batch",
            "pmb",
            {"FRESHNESS_LAUNCH_RULE": "batch"},
            "beyond the thesis: the machine as the budget counting the larger batch (METHOD "
            "10): a run launches only when its earlier commits save more staleness than it "
            "costs the runs in flight and than one larger run later would",
            baseline="pmb_budget",
            isolates="the larger batch a run that waits takes, counted in the launch rule",
        ),
        Variant(
            "pmb_at_once",
            "pmb",
            {"FRESHNESS_STEPS_AT_ONCE": "3"},
            "beyond the thesis: a wide chain's steps three at a time, each in its own process "
            "(chains.steps_at_once_for)",
            baseline="pmb",
            isolates="a wide chain's steps three at a time, a process each, instead of one "
            "after another in one process",
        ),
        Variant(
            "fixed_order_subsets",
            "fixed_order_pmb",
            note="controlled: fixed round-robin order, PMB's subset choice",
            baseline="fixed_order_full",
            isolates="subset selection alone: same fixed round-robin order and concurrency, "
            "PMB's subsets against all pending files",
        ),
        Variant(
            "fixed_order_full",
            "fixed_order_full",
            note="controlled: the same fixed order, always all pending files",
        ),
        # Peers: what a Dagster user would pick instead of our sensor.
        Variant(
            "dagster_eager",
            "",
            note="peer: Dagster's AutomationCondition.eager() on every job, decided by its "
            "asset daemon; each run processes all pending input",
            automation="dagster_eager",
        ),
        Variant(
            "interval",
            "",
            {"FRESHNESS_INTERVAL_S": str(TUNED_INTERVAL_S)},
            f"peer: every job every {TUNED_INTERVAL_S} s, all pending input (N tuned on "
            f"seed {TUNING_SEED})",
            automation="interval",
        ),
        Variant(
            "dagster_plain",
            "",
            {"DAGSTER_PLAIN_AUTOMATION": "eager"},
            "peer: the six tables as a Dagster user would write them without this project: "
            "hourly partitions recomputed whole with dagster-pyspark (a Spark session per "
            "run), AutomationCondition.eager()",
            automation="dagster_plain",
            code_location=PLAIN_PEER_MODULE,
        ),
        Variant(
            "dagster_plain_cron",
            "",
            {"DAGSTER_PLAIN_AUTOMATION": "cron"},
            "peer: the plain Dagster build on AutomationCondition.on_cron (every minute)",
            automation="dagster_plain_cron",
            code_location=PLAIN_PEER_MODULE,
        ),
    )
}
PEERS = tuple(name for name, v in VARIANTS.items() if v.is_peer)
# The peers the simulator models, each by its own rule; not a peer of its own code location
# (the plain Dagster build recomputes an hour whole: steps the model does not have).
SIMULATED_PEERS = tuple(name for name in PEERS if not VARIANTS[name].code_location)
MODELLED = tuple(name for name, v in VARIANTS.items() if v.model is not None)


def variant_named(name: str) -> Variant:
    """A registered variant, or `interval_<N>`: the interval peer at period N seconds (the
    runs that tune N). Raises KeyError naming the accepted names."""
    if name in VARIANTS:
        return VARIANTS[name]
    period = name.removeprefix(INTERVAL_PREFIX)
    if name.startswith(INTERVAL_PREFIX) and period.isdigit() and int(period) >= MIN_TICK_S:
        return Variant(
            name,
            "",
            {"FRESHNESS_INTERVAL_S": period},
            f"peer: every job every {period} s, all pending input",
            automation="interval",
        )
    raise KeyError(
        f"unknown variant {name!r}; choose from {sorted(VARIANTS)} or "
        f"{INTERVAL_PREFIX}<seconds, at least {MIN_TICK_S}>"
    )


def with_period(variant: Variant, period_s: int) -> Variant:
    """The interval peer at another period under its own name (tuned for other conditions:
    the wide lakehouse's N is not the six tables')."""
    if period_s < MIN_TICK_S:
        raise ValueError(f"the interval's period must be at least {MIN_TICK_S} s, got {period_s}")
    return replace(
        variant,
        env={**variant.env, "FRESHNESS_INTERVAL_S": str(period_s)},
        note=f"peer: every job every {period_s} s, all pending input (N tuned on seed "
        f"{TUNING_SEED})",
    )
