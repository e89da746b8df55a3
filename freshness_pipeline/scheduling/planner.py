"""Partitioned-Max-Benefit (METHOD section 3), with the Max-Benefit and Random baselines.

Pure Python: frozen dataclasses in, a `Plan` out, the clock passed in. No dagster, pyspark
or hudi here, so every decision can be unit-tested and replayed.

For each runnable job j (pending input, not running):
  U = sorted({min(tmax(f), cap_j) for f in F_j})           candidate cutoffs, capped (5.3)
  C_j(u) = {f in F_j : tmin(f) <= u}                         nothing older than u left behind
  G = max(0, u - t_done_j),  E = E_j(C_j(u)),  eta = G / E  staleness reduced per second
keep the u with the largest eta; launch the K - |running| jobs with the largest eta.

Bounded waits (beyond the thesis): with `max_wait_s` set, a runnable job
that has waited longer than the bound (with `first_runs_first`, also one whose table has
never been materialized) is ranked ahead of the policy's order (`age`); the rest keep it.
See `age` for why.

Variants for the experiment:
- `pmb_pipeline` (beyond the thesis): G also counts the downstream staleness a run
  unlocks: for each child job waiting on this one, the seconds by which the child's cap
  would rise if this job's watermark moved to u (a fast upstream run is worth more when
  its children are waiting).
- `fixed_order_pmb` / `fixed_order_full` (the controlled run the thesis asked for): jobs
  launch round-robin regardless of eta (the job refreshed least recently first, jobs
  never refreshed in pipeline order), with PMB's subset or with all pending files. The
  ordering rule and the concurrency are the same in both, so the difference between them
  is the share of the gain due to subset selection alone. (A static pipeline order would
  starve the jobs at the end of the pipeline whenever the first K are runnable.)

Each policy is one `SchedulingPolicy` in `POLICY_REGISTRY`, which answers the only three
questions on which policies differ: which candidate row a job runs, whether G counts the
downstream staleness, and in which order runnable jobs get the free slots. `choose` and
`plan` ask those questions and never test a policy's name, so adding a policy is one
class and one registry line.
"""

from __future__ import annotations

import bisect
import itertools
import random
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar, TypeAlias

from freshness_pipeline.scheduling.budget import MachineBudget, Work
from freshness_pipeline.scheduling.limits import launch_limit
from freshness_pipeline.scheduling.units import US_PER_S

# A key of POLICY_REGISTRY. A plain str, not a Literal, so that a new policy needs no
# edit beyond its class and its registry line.
Policy: TypeAlias = str
MIB = 1024 * 1024


@dataclass(frozen=True)
class PendingInput:
    """One input file with data the job has not reflected yet."""

    path: str
    size_bytes: int
    tmin_us: int  # smallest pending arrival the file may hold
    tmax_us: int  # largest pending arrival it holds


@dataclass(frozen=True)
class CostModel:
    """E(X) = a + b * bytes(X) + c * files(X), in seconds."""

    a_s: float
    b_s_per_byte: float
    c_s_per_file: float = 0.0

    def estimate(self, scan_bytes: int, files: int) -> float:
        return self.a_s + self.b_s_per_byte * scan_bytes + self.c_s_per_file * files


@dataclass(frozen=True)
class Downstream:
    """A child job waiting on this one (for `pmb_pipeline`)."""

    job: str
    t_done_us: int | None
    other_inputs_cap_us: int | None  # min watermark of its other inputs; None: no others


@dataclass(frozen=True)
class JobState:
    job: str
    t_done_us: int | None  # None: never ran
    cap_us: int | None  # smallest watermark of the job's inputs; None: inputs empty
    pending: tuple[PendingInput, ...]
    cost: CostModel
    running: bool = False
    downstream: tuple[Downstream, ...] = ()  # children, read only by pmb_pipeline
    order: int = 0  # position in the pipeline, read only by the fixed-order policies
    last_refresh_us: int | None = None  # its latest materialization; fixed-order policies
    failed_runs: int = 0  # consecutive failed runs since its last success
    retry_after_us: int | None = None  # after a failure: not before this time (backoff)
    # When its pending work appeared: the completion of the oldest input commit it has not
    # consumed (the sensor reads it from the timeline). None: unknown; the oldest pending
    # arrival stands in, which is earlier, so a wait is never understated. Read by `age`.
    pending_since_us: int | None = None
    # Each input table with its watermark as read this tick (None: no data yet); chains
    # (chains.py) read it to know what a step's inputs will hold when its turn comes.
    inputs: tuple[tuple[str, int | None], ...] = ()
    # (bytes, files) a step of this job typically reads: the median of its recent runs.
    # A chained step's input is mostly its parent's next commit, not yet written, so its
    # cost is estimated from this rather than from the files pending now.
    step_input: tuple[int, int] = (0, 0)
    # Why an input cannot be read (a missing arrival column, a file format we cannot
    # read, a corrupt footer): the job waits, named with the reason; the others go on.
    blocked: str | None = None
    # Why each input without a watermark has none, as the reader said it (e.g. "no Hudi
    # table at s3://..."): the tick names the table and the reason, not only "no data".
    no_data: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Candidate:
    cutoff_us: int
    file_count: int  # |C(u)|: the files with tmin <= u
    scan_bytes: int
    gain_s: float  # G
    cost_s: float  # E
    eta: float


@dataclass(frozen=True)
class ChainStep:
    """One table a chained run commits (METHOD 8), its planned part of the run: up to
    `cutoff_us` (the root's u; a descendant's u_d, the smallest watermark its inputs will
    hold when its turn comes), removing `gain_s` of staleness in about `cost_s`."""

    job: str
    cutoff_us: int
    gain_s: float
    cost_s: float
    scan_bytes: int
    files: int
    after: tuple[str, ...] = ()  # the steps of the run it reads (its parents in the chain)
    # A root's chosen files (its policy's pick); a descendant's are empty: it reads all
    # its pending input up to its cutoff, whatever its parents' steps have just written.
    paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobChoice:
    job: str
    policy: Policy
    cutoff_us: int
    files: tuple[str, ...]
    scan_bytes: int
    gain_s: float
    cost_s: float
    eta: float
    pending_files: int
    candidates: tuple[Candidate, ...]
    waited_s: float = 0.0  # runnable and not launched for this long (`waited_s`)
    aged: str = ""  # why it was ranked ahead of the policy's order; "": it was not
    # Aging across a chain (chains._carry_waits): whether another root's run, which
    # refreshes this one, ages in its place; the longest wait past the bound of a root
    # this run refreshes, with that root's name; and a never-materialized root it
    # refreshes (its first materialization, with first_runs_first).
    hands_wait_on: bool = False
    carried_from: str = ""
    carried_wait_s: float = 0.0
    carried_first_run: str = ""
    # A chained run (chains.py): every step, the root first, in dependency order; gain_s,
    # cost_s and eta are then the whole run's, with `run_cost_s` (L) counted once in
    # cost_s. Empty: the published plan, one table per run, gain and cost its own.
    chain: tuple[ChainStep, ...] = ()
    run_cost_s: float = 0.0

    @property
    def aging_wait_s(self) -> float:
        """The wait aging ranks it by: its own (unless handed on) or one it carries."""
        return max(0.0 if self.hands_wait_on else self.waited_s, self.carried_wait_s)

    @property
    def is_subset(self) -> bool:
        return len(self.files) < self.pending_files

    def work(self, fixed_s: Mapping[str, float] | None = None) -> Work:
        """The run as the machine's forecast sees it (budget.py): L before it works, then
        its steps in order, each its E and G; with `fixed_s` (each job's fixed work, its
        cost model's a), each step's too, for the larger batch."""
        fixed = tuple(fixed_s.get(job, 0.0) for job in self.jobs) if fixed_s else ()
        if not self.chain:
            return Work(((self.cost_s, self.gain_s),), fixed_s=fixed)
        steps = tuple((step.cost_s, step.gain_s) for step in self.chain)
        return Work(steps, starts_in_s=self.run_cost_s, fixed_s=fixed)

    @property
    def jobs(self) -> tuple[str, ...]:
        """Every table the run commits, the root first."""
        return tuple(step.job for step in self.chain) if self.chain else (self.job,)

    @property
    def descendants(self) -> tuple[str, ...]:
        return self.jobs[1:]


@dataclass(frozen=True)
class Skip:
    job: str
    reason: str


@dataclass(frozen=True)
class Plan:
    now_us: int
    policy: Policy
    free_slots: int
    launches: tuple[JobChoice, ...] = ()
    skipped: tuple[Skip, ...] = ()
    ranked: tuple[JobChoice, ...] = field(default=(), repr=False)  # every runnable job

    @property
    def nothing_to_do(self) -> bool:
        return not self.launches


RETRY_BACKOFF_BASE_S = 5.0
RETRY_BACKOFF_MAX_S = 60.0


def retry_backoff_s(failed_runs: int) -> float:
    """Wait before the next run of a job whose last `failed_runs` runs failed: 5 s, 10 s,
    20 s, ... up to a minute, so a persistent fault is retried, never hammered. (A
    5-minute cap left a job waiting most of the 50-fault chaos drain: docs/RELIABILITY.md.)"""
    if failed_runs <= 0:
        return 0.0
    return min(RETRY_BACKOFF_MAX_S, RETRY_BACKOFF_BASE_S * 2 ** (failed_runs - 1))


def by_tmin(state: JobState) -> list[PendingInput]:
    return sorted(state.pending, key=lambda f: (f.tmin_us, f.path))


def unlocked_s(state: JobState, cutoff_us: int) -> float:
    """Downstream staleness seconds that moving this job's watermark to u makes removable:
    per waiting child, how far its cap (min of its inputs' watermarks) would rise."""
    total = 0.0
    now_mark = state.t_done_us
    for child in state.downstream:
        other = child.other_inputs_cap_us
        new_cap = cutoff_us if other is None else min(cutoff_us, other)
        old_cap = now_mark if other is None or now_mark is None else min(now_mark, other)
        floor = max(x for x in (old_cap, child.t_done_us, -1) if x is not None)
        total += max(0.0, (new_cap - floor) / US_PER_S)
    return total


def candidates(state: JobState, pipeline: bool = False) -> tuple[Candidate, ...]:
    """The candidate table behind a PMB choice, one row per distinct capped cutoff.

    C(u) is a prefix of the files ordered by tmin, so each row costs a binary search and a
    prefix sum: O(n log n) per job instead of O(n^2) (a tick stays fast at 5,000 files).
    """
    if state.cap_us is None:
        return ()
    floor = state.t_done_us
    if not state.pending:
        # Inputs moved on without rows for this job (e.g. an upstream run that wrote
        # nothing): a run over no files still advances the watermark to the cap.
        if floor is None or state.cap_us <= floor:
            return ()
        gain = (state.cap_us - floor) / US_PER_S
        if pipeline:
            gain += unlocked_s(state, state.cap_us)
        cost = state.cost.estimate(0, 0)
        return (Candidate(state.cap_us, 0, 0, gain, cost, gain / cost if cost > 0 else 0.0),)
    cutoffs = sorted({min(f.tmax_us, state.cap_us) for f in state.pending})
    if floor is not None:
        cutoffs = [u for u in cutoffs if u > floor]
    ordered = by_tmin(state)
    tmins = [f.tmin_us for f in ordered]
    scan_prefix = [0, *itertools.accumulate(f.size_bytes for f in ordered)]
    # A never-run job's staleness counts from its oldest pending arrival.
    base = floor if floor is not None else tmins[0]
    rows = []
    for u in cutoffs:
        count = bisect.bisect_right(tmins, u)
        scan = scan_prefix[count]
        gain = max(0.0, (u - base) / US_PER_S)
        if pipeline:
            gain += unlocked_s(state, u)
        cost = state.cost.estimate(scan, count)
        rows.append(Candidate(u, count, scan, gain, cost, gain / cost if cost > 0 else 0.0))
    return tuple(rows)


def _best(rows: Sequence[Candidate]) -> Candidate:
    # Largest eta; on a tie the larger cutoff, which removes more staleness.
    return max(rows, key=lambda c: (round(c.eta, 12), c.cutoff_us))


# The policies. A policy object holds no state: the registry shares one instance of each
# across ticks and threads, and frozen dataclasses keep it that way.


class SchedulingPolicy(ABC):
    """What one scheduling policy decides; `choose` and `plan` ask nothing else."""

    # Whether G also counts the downstream staleness a run unlocks (`unlocked_s`). The
    # callers fill `JobState.downstream` only when this is set, since reading the
    # children's watermarks costs metadata calls that other policies would waste.
    uses_downstream: ClassVar[bool] = False
    # Whether the policy chooses its cutoff (PMB's subsets) rather than taking every
    # pending file; a chain (chains.py) then searches the root's rows too.
    searches_cutoff: ClassVar[bool] = True

    @abstractmethod
    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        """The candidate row the job runs; `rows` are ordered by cutoff and never empty."""

    @abstractmethod
    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        """The runnable jobs' choices, the first to get a free slot first."""


def _largest_cutoff(rows: Sequence[Candidate]) -> Candidate:
    # The last row holds every pending file the upstream cap lets in: the whole set.
    return rows[-1]


def _by_eta(choices: Sequence[JobChoice]) -> list[JobChoice]:
    # Largest eta first; the job name breaks ties so a replayed tick orders the same way.
    return sorted(choices, key=lambda c: (-c.eta, c.job))


def _seeded_shuffle(choices: Sequence[JobChoice], now_us: int, seed: int) -> list[JobChoice]:
    # Seeded per tick, so a replayed experiment makes the same choices.
    ranked = list(choices)
    random.Random(f"{seed}:{now_us}").shuffle(ranked)
    return ranked


def _round_robin(choices: Sequence[JobChoice], jobs: Sequence[JobState]) -> list[JobChoice]:
    # The least recently refreshed job first; never-refreshed ones lead, in pipeline order.
    by_job = {state.job: state for state in jobs}

    def turn(choice: JobChoice) -> tuple:
        state = by_job[choice.job]
        last = state.last_refresh_us
        return (last is not None, last or 0, state.order, choice.job)

    return sorted(choices, key=turn)


@dataclass(frozen=True)
class Pmb(SchedulingPolicy):
    """Partitioned-Max-Benefit (METHOD section 3): each job's best-eta subset, and the
    jobs with the largest eta first."""

    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        return _best(rows)

    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        return _by_eta(choices)


@dataclass(frozen=True)
class MaxBenefit(SchedulingPolicy):
    """Baseline: every pending file, jobs ranked by the eta of that whole set."""

    searches_cutoff: ClassVar[bool] = False

    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        return _largest_cutoff(rows)

    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        return _by_eta(choices)


@dataclass(frozen=True)
class RandomOrder(SchedulingPolicy):
    """Baseline: every pending file, runnable jobs in a random (seeded) order."""

    searches_cutoff: ClassVar[bool] = False

    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        return _largest_cutoff(rows)

    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        return _seeded_shuffle(choices, now_us, seed)


@dataclass(frozen=True)
class PmbPipeline(SchedulingPolicy):
    """PMB whose gain also counts the staleness a run unlocks in the waiting children."""

    uses_downstream: ClassVar[bool] = True

    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        return _best(rows)

    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        return _by_eta(choices)


@dataclass(frozen=True)
class FixedOrderPmb(SchedulingPolicy):
    """PMB's subsets with round-robin launches: with `FixedOrderFull`, isolates the gain
    due to subset selection from the gain due to eta ordering."""

    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        return _best(rows)

    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        return _round_robin(choices, jobs)


@dataclass(frozen=True)
class FixedOrderFull(SchedulingPolicy):
    """Every pending file with round-robin launches (the control for `FixedOrderPmb`)."""

    searches_cutoff: ClassVar[bool] = False

    def pick(self, rows: Sequence[Candidate]) -> Candidate:
        return _largest_cutoff(rows)

    def rank(
        self, choices: Sequence[JobChoice], jobs: Sequence[JobState], now_us: int, seed: int
    ) -> list[JobChoice]:
        return _round_robin(choices, jobs)


# The names are what settings, tags and reports carry (FRESHNESS_POLICY, JobChoice.policy);
# the order is the order the experiment and its tables list them in.
POLICY_REGISTRY: dict[str, SchedulingPolicy] = {
    "pmb": Pmb(),
    "max_benefit": MaxBenefit(),
    "random": RandomOrder(),
    "pmb_pipeline": PmbPipeline(),
    "fixed_order_pmb": FixedOrderPmb(),
    "fixed_order_full": FixedOrderFull(),
}
POLICIES: tuple[Policy, ...] = tuple(POLICY_REGISTRY)


def get_policy(name: Policy) -> SchedulingPolicy:
    """The policy registered as `name`; raises ValueError naming the accepted ones."""
    try:
        return POLICY_REGISTRY[name]
    except KeyError:
        # The live registry, not POLICIES, so a policy registered later is named too.
        accepted = tuple(POLICY_REGISTRY)
        raise ValueError(f"unknown policy {name!r}; expected one of {accepted}") from None


def choose(state: JobState, policy: Policy, now_us: int | None = None) -> JobChoice | Skip:
    """One job's choice under `policy`, or why it is not runnable."""
    return choose_job(state, policy, get_policy(policy), now_us)


def _no_data(state: JobState) -> str:
    """Which inputs have no data yet, and why where the reader said."""
    why = dict(state.no_data)
    empty = [table for table, mark in state.inputs if mark is None] or list(why)
    if not empty:
        return "an input table has no data yet"
    return "; ".join(
        f"{table} has no data yet ({why[table]})" if table in why else f"{table} has no data yet"
        for table in empty
    )


def choose_job(
    state: JobState, name: Policy, rules: SchedulingPolicy, now_us: int | None
) -> JobChoice | Skip:
    # `plan` resolves the policy once per tick rather than once per job.
    if state.blocked:
        return Skip(state.job, f"waiting: {state.blocked}")
    if state.running:
        return Skip(state.job, "already running")
    if now_us is not None and state.retry_after_us is not None and state.retry_after_us > now_us:
        wait_s = (state.retry_after_us - now_us) / US_PER_S
        return Skip(
            state.job,
            f"backing off after {state.failed_runs} failed run(s): retry in {wait_s:.0f} s",
        )
    if state.cap_us is None:
        return Skip(state.job, f"waiting for upstream: {_no_data(state)}")
    rows = candidates(state, pipeline=rules.uses_downstream)
    if not state.pending and not rows:
        return Skip(state.job, "no pending data")
    if not rows:
        return Skip(state.job, "waiting for upstream: inputs hold nothing past t_done")
    picked = rules.pick(rows)
    if picked.gain_s <= 0:
        return Skip(state.job, "zero benefit")
    return JobChoice(
        job=state.job,
        policy=name,
        cutoff_us=picked.cutoff_us,
        files=tuple(f.path for f in by_tmin(state)[: picked.file_count]),
        scan_bytes=picked.scan_bytes,
        gain_s=picked.gain_s,
        cost_s=picked.cost_s,
        eta=picked.eta,
        pending_files=len(state.pending),
        candidates=rows,
    )


def waited_s(state: JobState, now_us: int) -> float:
    """How long a job has been able to run and has not: since its pending work appeared
    (`pending_since_us`, else its oldest pending arrival, else its watermark for a run over
    no files) or since its last materialization, whichever is later. A running job has not
    waited (the sensor counts a queued run as running)."""
    if state.running:
        return 0.0
    since = state.pending_since_us
    if since is None:
        since = min((f.tmin_us for f in state.pending), default=state.t_done_us)
    if since is None:
        return 0.0
    if state.last_refresh_us is not None:
        since = max(since, state.last_refresh_us)
    return max(0.0, (now_us - since) / US_PER_S)


def age(
    ranked: Sequence[JobChoice],
    jobs: Sequence[JobState],
    max_wait_s: float | None,
    first_runs_first: bool = False,
) -> list[JobChoice]:
    """The policy's ranking with aging: the jobs that have waited longer than `max_wait_s`
    (and, with `first_runs_first`, the jobs whose table has never been materialized) first,
    longest wait first (equal waits in the policy's order), each with its reason in `aged`;
    the rest in the policy's order.

    Why (METHOD 3): PMB ranks by eta = G / E, staleness removed per second of compute, and
    G is capped at the inputs' watermark (5.3). An upstream job's cap is a raw table's,
    which rises with the clock, so its G grows while it waits; a downstream job's cap rises
    only when its parent commits. On a saturated machine (the K slots always taken by the
    four upstream jobs, one of which is always runnable with the larger eta) the children's
    eta never catches up and they wait without bound, while their staleness S_i grows one
    second per second: P's integral for such a table grows with the square of the wait,
    which the one-tick greedy rate never sees. Aging bounds the wait: a job past the bound
    takes the next free slot unless one has waited longer, so it waits at most about the
    bound plus the time for a slot to free (a run), plus a slot per longer-waiting job.
    The wait counts from when the job's pending work appeared (`waited_s`), so a child
    whose parent has only just committed is not aged for the time it had nothing to do.

    Why aging and not a reserved slot: a slot kept for starving jobs idles on every tick
    when none starves, which costs throughput, hence P, all the time; aging changes nothing
    until a job actually waits past the bound (the plan is PMB's, to the choice), and then
    costs one slot-turn given to a lower eta. Under overload, when every job waits past the
    bound, the order becomes longest-wait-first: round robin, which never starves.

    `first_runs_first` (for the demo: every table exists within minutes) is not free in P:
    a table without a watermark counts as stale since the start, but its first run removes
    only what its inputs hold (G = u - its oldest pending arrival, small while its parent
    has barely started), so where a run costs minutes eta rightly puts it last; forcing it
    first costs P there (docs/BENCHMARKS.md, "Aging", on the modelled machine: 5 % alone and
    2 % beside the bound where runs take 3 minutes; 1.4 % less where they take 35 s). It
    happens once per table, and every table exists within a few runs of the start.
    """
    if max_wait_s is not None and max_wait_s <= 0:
        raise ValueError(f"max_wait_s must be positive, got {max_wait_s}")
    by_job = {state.job: state for state in jobs}
    aged: list[JobChoice] = []
    rest: list[JobChoice] = []
    for choice in ranked:
        wait = choice.aging_wait_s
        if max_wait_s is not None and wait > max_wait_s:
            carried = choice.carried_from and wait == choice.carried_wait_s
            who = f"{choice.carried_from} in it waited" if carried else "waited"
            reason = f"{who} {wait:.0f} s, past the {max_wait_s:g} s bound"
            aged.append(replace(choice, aged=reason))
        elif first_runs_first and by_job[choice.job].t_done_us is None and not choice.hands_wait_on:
            reason = f"first materialization, waited {choice.waited_s:.0f} s"
            aged.append(replace(choice, aged=reason))
        elif first_runs_first and choice.carried_first_run:
            reason = f"first materialization of {choice.carried_first_run} in it"
            aged.append(replace(choice, aged=reason))
        else:
            rest.append(choice)
    aged.sort(key=lambda c: -c.aging_wait_s)  # stable: equal waits keep the policy's order
    return aged + rest


# L, a run's fixed cost (launch and Spark session, METHOD 8), before runs have measured it:
# about 2.5 s on the shared Spark service on 2 cores (docs/BENCHMARKS.md), rounded up.
DEFAULT_RUN_COST_S = 3.0


@dataclass(frozen=True)
class PlanRequest:
    """Everything one tick's plan depends on, built alike by the sensor (from Hudi metadata
    and Dagster's runs) and the simulator (from its model), for `plan`, `chains.plan_chains`
    and `chains.plan_runs`."""

    jobs: Sequence[JobState]
    k: int  # Dagster's run-queue limit K
    now_us: int  # the clock, passed in
    policy: Policy = "pmb"
    seed: int = 0
    other_runs: int = 0  # runs that are not jobs' (clustering) but hold queue slots
    # Aging (`age`): a bound on every job's wait, and never-run jobs first; None and
    # False: the policy's order alone, as published.
    max_wait_s: float | None = None
    first_runs_first: bool = False
    job_runs: int | None = None  # runs of the jobs in flight; None: one per running job
    run_cost_s: float = DEFAULT_RUN_COST_S  # L, paid once by a chain
    steps_at_once: int = 1  # steps a wide run executes at once (FRESHNESS_STEPS_AT_ONCE)
    chains: bool = True  # plan whole runs (chains.plan_chains); False: one table per run
    runs_at_once: int | None = None  # FRESHNESS_RUNS_AT_ONCE; None: K
    # The machine as the budget (budget.py, METHOD 10): a chained run launches only when
    # it gains more than it costs the runs in flight; None: every free slot is filled.
    machine: MachineBudget | None = None

    @property
    def launch_limit(self) -> int:
        """How many runs the plan fills (`limits.launch_limit`)."""
        return launch_limit(self.k, self.runs_at_once)

    def running(self) -> int:
        """Queue slots the jobs' runs hold now."""
        if self.job_runs is not None:
            return self.job_runs
        return sum(1 for j in self.jobs if j.running)

    def free_slots(self) -> int:
        return max(0, self.launch_limit - self.running() - self.other_runs)

    def no_slot(self) -> str:
        """Why a runnable job waits for a slot, in words."""
        others = f", {self.other_runs} clustering" if self.other_runs else ""
        return f"no free slot (K={self.launch_limit}, {self.running()} running{others})"


def check_plan_args(request: PlanRequest) -> SchedulingPolicy:
    """The policy `plan` (or chains.plan_chains) is asked for, once the request holds."""
    rules = get_policy(request.policy)
    if request.k < 1:
        raise ValueError(f"K must be at least 1, got {request.k}")
    if request.runs_at_once is not None and request.runs_at_once < 1:
        raise ValueError(f"runs_at_once must be at least 1, got {request.runs_at_once}")
    if request.other_runs < 0:
        raise ValueError(f"other_runs must not be negative, got {request.other_runs}")
    if request.max_wait_s is not None and request.max_wait_s <= 0:
        raise ValueError(f"max_wait_s must be positive or None, got {request.max_wait_s}")
    if request.job_runs is not None and request.job_runs < 0:
        raise ValueError(f"job_runs must not be negative, got {request.job_runs}")
    if request.run_cost_s < 0:
        raise ValueError(f"run_cost_s must not be negative, got {request.run_cost_s}")
    if request.steps_at_once < 1:
        raise ValueError(f"steps_at_once must be at least 1, got {request.steps_at_once}")
    return rules


def first_affordable(
    ranked: Sequence[JobChoice],
    request: PlanRequest,
    launches: Sequence[JobChoice],
    held: dict[str, str],
) -> JobChoice | None:
    """The first run in `ranked` the machine's budget lets launch beside the runs in flight
    and `launches` (budget.py; without a budget, the first), recording in `held` why each
    one before it waits. A run aging put first launches all the same: the bound on a
    job's wait holds whatever the machine."""
    machine = request.machine
    if machine is None:
        return ranked[0] if ranked else None
    fixed = {state.job: state.cost.a_s for state in request.jobs} if machine.batch else None
    chosen = [c.work() for c in launches]
    for choice in ranked:
        if choice.aged:
            return choice
        verdict = machine.judge(choice.work(fixed), chosen)
        if verdict.launch:
            return choice
        held[choice.job] = verdict.reason
    return None


def plan(request: PlanRequest) -> Plan:
    """Chooses which jobs to launch now and what each processes, one table per run."""
    jobs, now_us, policy = request.jobs, request.now_us, request.policy
    rules = check_plan_args(request)
    free = request.free_slots()
    choices: list[JobChoice] = []
    skipped: list[Skip] = []
    for state in jobs:
        outcome = choose_job(state, policy, rules, now_us)
        if isinstance(outcome, JobChoice):
            choices.append(replace(outcome, waited_s=waited_s(state, now_us)))
        else:
            skipped.append(outcome)
    ranked = rules.rank(choices, jobs, now_us, request.seed)
    by_policy = {c.job for c in ranked[:free]}
    if request.max_wait_s is not None or request.first_runs_first:
        ranked = age(ranked, jobs, request.max_wait_s, request.first_runs_first)
    launches: list[JobChoice] = []
    held: dict[str, str] = {}
    waiting = list(ranked)
    while len(launches) < free:
        pick = first_affordable(waiting, request, launches, held)
        if pick is None:
            break
        launches.append(pick)
        waiting.remove(pick)
    # A launch says "aging" only if it took a slot the policy's order gave another job; an
    # aged job still waiting keeps its reason (it is first in line for a slot).
    shown = {c.job: replace(c, aged="") for c in launches if c.aged and c.job in by_policy}
    launches = [shown.get(c.job, c) for c in launches]
    ranked = [shown.get(c.job, c) for c in ranked]
    skipped += [Skip(c.job, held.get(c.job, request.no_slot())) for c in waiting]
    return Plan(now_us, policy, free, tuple(launches), tuple(skipped), tuple(ranked))
