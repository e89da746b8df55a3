"""Chains (METHOD 8): one run refreshes a root job with its policy's choice and then some of
its descendants, in dependency order, paying the fixed run cost L once.

A refresh of an upstream table removes no staleness below it until its descendants run,
and every run pays its queue, launch and Spark session; planning one table per run (the
published method) pays L per table and leaves the children waiting for later ticks. So a
candidate here is (root j, its cutoff u, a set D of its descendants closed under "a parent
in the chain"), each d in D up to

  u_d = min over d's inputs of the watermark the input will hold when d's turn comes
        (the chain step's cutoff for an input in the chain, its watermark now otherwise),

  G   = (u - t_done_j) + sum over d of (u_d - t_done_d)      staleness removed, every table
  E   = L + E_j(C_j(u)) + sum over d of E_d(input of d)      one launch, each step's model
  eta = G / E.

A descendant with two inputs (market_features reads both aggregates) can only move as far
as the input outside the run holds, so a run may also take along co-roots: other runnable
jobs that a descendant reads (each with its own policy's choice, G and E added like a
step's). That is how one run refreshes both aggregates and everything below them, as one
eager or interval run does, with each root's files chosen by the policy.

The search is bounded (a tick stays under a second at 30 jobs): at most `MAX_CUTOFFS` of
the root's candidate rows (the policy's own pick, the whole set and rows evenly between),
every set of at most `MAX_CO_ROOTS` co-roots, and per row and co-root set at most
`MAX_SETS` descendant sets, the largest first. A policy that does not
choose a cutoff (Max-Benefit, Random) keeps its row; every policy chooses D the same way,
so the experiment's comparison isolates the choice of u and the order.

Selection is greedy in the policy's order: the best chain of each root, given the tables
already taken (running, or in a chain chosen this tick); after each pick the rest are
planned again without its tables. Chosen chains share no table and K bounds runs in
flight. A job in a running or chosen chain is refreshed by it, after its parents in it,
and is never launched alone on a parent's old commit meanwhile. A job whose parent is
being refreshed by a run that does not include it may move up to that parent's current
commit, in a run of its own or in another chain, when its eta says so: waiting instead
(the stricter rule of Dagster's eager automation) let two aggregates whose raw tables
commit seconds apart run alone in turn, each holding market_features back, and the four
tables below them starved. A descendant that is running, backing off after failures, or
that would gain nothing, is left out of the chain.

Pure Python, like planner.py: frozen dataclasses in, a `Plan` out, the clock passed in.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.planner import (
    Candidate,
    ChainStep,
    JobChoice,
    JobState,
    Plan,
    PlanRequest,
    SchedulingPolicy,
    Skip,
    age,
    by_tmin,
    candidates,
    check_plan_args,
    choose_job,
    first_affordable,
    plan,
    waited_s,
)
from freshness_pipeline.scheduling.units import US_PER_S

MAX_CUTOFFS = 16  # root rows tried per root
MAX_SETS = 64  # descendant sets tried per root row and set of co-roots
# Chains evaluated per root at most: with many rows and co-root sets, fewer descendant sets
# each (at least MIN_SETS), so a tick stays fast on a wide lakehouse.
SEARCH_BUDGET = 512
MIN_SETS = 4
MAX_CO_ROOTS = 3  # other runnable parents of the root's descendants a run may take along
# A run executes its steps side by side (FRESHNESS_STEPS_AT_ONCE above 1: a process each,
# forked from a server that imported the definitions once) only where at least this many
# can go at once: each step's process pays its start and a Spark session (about 1 s
# measured, docs/BENCHMARKS.md) and the run its fork server (a few s), which two steps
# side by side do not win back.
MIN_WIDTH_AT_ONCE = 3


@dataclass(frozen=True)
class Graph:
    """The jobs' dependencies as the states give them: each job's parents (its inputs that
    are jobs) and every job in an order where parents come first."""

    parents: Mapping[str, tuple[str, ...]]
    order: tuple[str, ...]

    @classmethod
    def of(cls, jobs: Sequence[JobState]) -> Graph:
        names = [state.job for state in jobs]
        parents = {
            state.job: tuple(t for t, _ in state.inputs if t in names and t != state.job)
            for state in jobs
        }
        order: list[str] = []
        placed: set[str] = set()
        while len(order) < len(names):
            ready = [n for n in names if n not in placed and set(parents[n]) <= placed]
            if not ready:
                cycle = sorted(n for n in names if n not in placed)
                raise ValueError(f"the jobs' inputs form a cycle among {cycle}")
            order += ready
            placed |= set(ready)
        return cls(parents, tuple(order))

    def descendants(self, root: str) -> tuple[str, ...]:
        """Every job that reads `root`, directly or not, parents first."""
        found = {root}
        for job in self.order:
            if any(p in found for p in self.parents[job]):
                found.add(job)
        return tuple(job for job in self.order if job in found and job != root)


def _root_rows(rows: Sequence[Candidate], rules: SchedulingPolicy) -> list[Candidate]:
    """The root's rows a chain is tried with: the policy's pick, and for a policy that
    chooses its cutoff also the whole set and rows evenly between (at most MAX_CUTOFFS)."""
    picked = rules.pick(rows)
    if not rules.searches_cutoff:
        return [picked]
    if len(rows) <= MAX_CUTOFFS:
        return list(rows)
    step = (len(rows) - 1) / (MAX_CUTOFFS - 2)
    chosen = {round(i * step) for i in range(MAX_CUTOFFS - 1)} | {len(rows) - 1}
    return sorted({rows[i] for i in chosen} | {picked}, key=lambda r: r.cutoff_us)


@dataclass
class _Search:
    """What one tick's chain search reads, with each job's pending files ordered by tmin
    and summed once (a step's input is a prefix of them, found by bisection) and each
    step remembered by the cutoffs of its parents in the run (many sets share it)."""

    by_job: Mapping[str, JobState]
    graph: Graph
    busy: set[str]
    now_us: int
    prefix: dict[str, tuple[list[int], list[int]]] = field(default_factory=dict)
    steps: dict[tuple, ChainStep | None] = field(default_factory=dict)

    def waiting(self, state: JobState, cutoff_us: int) -> tuple[int, int]:
        """(bytes, files) of the job's pending files with tmin <= cutoff."""
        if state.job not in self.prefix:
            ordered = by_tmin(state)
            sizes = [0, *itertools.accumulate(f.size_bytes for f in ordered)]
            self.prefix[state.job] = ([f.tmin_us for f in ordered], sizes)
        tmins, sizes = self.prefix[state.job]
        count = bisect.bisect_right(tmins, cutoff_us)
        return sizes[count], count

    def step(self, job: str, planned: Mapping[str, int], base_us: int) -> ChainStep | None:
        """d's step when the run already holds the steps in `planned` (job -> cutoff), or
        None when d cannot usefully run in it."""
        state = self.by_job[job]
        parents = self.graph.parents[job]
        key = (job, base_us, *(planned.get(p) for p in parents))
        if key not in self.steps:
            self.steps[key] = self._step(state, parents, planned, base_us)
        return self.steps[key]

    def _step(
        self,
        state: JobState,
        parents: tuple[str, ...],
        planned: Mapping[str, int],
        base_us: int,
    ) -> ChainStep | None:
        if state.running or state.job in self.busy:
            return None
        if state.retry_after_us is not None and state.retry_after_us > self.now_us:
            return None
        after = tuple(p for p in parents if p in planned)
        if not after:
            return None
        cutoff = input_cap(planned.get(table, mark) for table, mark in state.inputs)
        if cutoff is None:
            return None
        base = state.t_done_us if state.t_done_us is not None else base_us
        if cutoff <= base:
            return None
        scan, files = self.waiting(state, cutoff)
        scan += state.step_input[0]
        files += state.step_input[1]
        return ChainStep(
            state.job,
            cutoff,
            (cutoff - base) / US_PER_S,
            state.cost.estimate(scan, files),
            scan,
            files,
            after,
        )


def _descendant_sets(
    roots: tuple[ChainStep, ...], base_us: int, search: _Search, limit: int = MAX_SETS
) -> list[tuple[ChainStep, ...]]:
    """Closed descendant sets of the roots (each step has a parent in the run), the
    largest first, at most `limit`; each as its steps in dependency order."""
    graph = search.graph
    names = {root.job for root in roots}
    below: set[str] = set()
    for root in roots:
        below |= set(graph.descendants(root.job))
    order = [job for job in graph.order if job in below and job not in names]
    found: list[tuple[ChainStep, ...]] = []

    def visit(i: int, steps: tuple[ChainStep, ...], planned: dict[str, int]) -> None:
        if len(found) >= limit:
            return
        if i == len(order):
            found.append(steps)
            return
        step = search.step(order[i], planned, base_us)
        if step is not None:
            visit(i + 1, (*steps, step), {**planned, step.job: step.cutoff_us})
        visit(i + 1, steps, planned)

    visit(0, (), {root.job: root.cutoff_us for root in roots})
    if () not in found:
        found.append(())  # the roots alone are always a candidate
    return found


def _co_roots(
    root: str, graph: Graph, bases: Mapping[str, JobChoice], busy: set[str]
) -> tuple[str, ...]:
    """Runnable jobs outside the root's descendants that one of them also reads (the other
    aggregate below market_features): in the same run, that descendant can move past the
    other input's old watermark. At most MAX_CO_ROOTS, parents first."""
    below = graph.descendants(root)
    found: list[str] = []
    for job in below:
        for parent in graph.parents[job]:
            if parent == root or parent in below or parent in found or parent not in bases:
                continue
            if parent in busy:
                continue
            found.append(parent)
    return tuple(found[:MAX_CO_ROOTS])


def _root_step(choice: JobChoice, row: Candidate | None = None) -> ChainStep:
    """A root's step: its policy's row (or `row`), with the files that row reads."""
    if row is None:
        return ChainStep(
            choice.job,
            choice.cutoff_us,
            choice.gain_s,
            choice.cost_s,
            choice.scan_bytes,
            len(choice.files),
            paths=choice.files,
        )
    return ChainStep(
        choice.job,
        row.cutoff_us,
        row.gain_s,
        row.cost_s,
        row.scan_bytes,
        row.file_count,
        paths=choice.files[: row.file_count],
    )


def _depths(chain: Sequence[ChainStep]) -> dict[str, int]:
    """Each step's depth in its run: one below the deepest of its parents in it (`after`);
    the steps come in dependency order."""
    depth: dict[str, int] = {}
    for step in chain:
        depth[step.job] = 1 + max((depth.get(p, -1) for p in step.after), default=-1)
    return depth


def chain_width(chain: Sequence[ChainStep]) -> int:
    """The most steps of a run that can go at once: those at one depth."""
    counts: dict[int, int] = {}
    for level in _depths(chain).values():
        counts[level] = counts.get(level, 0) + 1
    return max(counts.values(), default=1)


def steps_at_once_for(chain: Sequence[ChainStep], steps_at_once: int) -> int:
    """How many of a run's steps go side by side: up to `steps_at_once`
    (FRESHNESS_STEPS_AT_ONCE) where the run is at least MIN_WIDTH_AT_ONCE wide; otherwise
    one after another."""
    if steps_at_once <= 1:
        return 1  # the default: no depth to work out (best_chain asks per candidate set)
    width = chain_width(chain)
    return min(steps_at_once, width) if width >= MIN_WIDTH_AT_ONCE else 1


def chain_cost_s(chain: Sequence[ChainStep], run_cost_s: float, steps_at_once: int = 1) -> float:
    """E of a run: L once, then its steps one after another, or with steps side by side
    (`steps_at_once_for`) each depth's steps sharing that many at once."""
    at_once = steps_at_once_for(chain, steps_at_once)
    if at_once == 1:
        return run_cost_s + sum(step.cost_s for step in chain)
    depths = _depths(chain)
    by_depth: dict[int, list[float]] = {}
    for step in chain:
        by_depth.setdefault(depths[step.job], []).append(step.cost_s)
    return run_cost_s + sum(sum(costs) / min(at_once, len(costs)) for costs in by_depth.values())


def _chain_eta(gain_s: float, cost_s: float) -> float:
    return gain_s / cost_s if cost_s > 0 else 0.0


def best_chain(
    base: JobChoice,
    bases: Mapping[str, JobChoice],
    search: _Search,
    rules: SchedulingPolicy,
    run_cost_s: float,
    steps_at_once: int = 1,
) -> JobChoice:
    """The best run rooted at `base`'s job by eta (on a tie the larger gain, then the
    larger cutoff), as its choice: the root's files and cutoff, the run's G, E and eta,
    and every step (co-roots, then descendants, parents first). `steps_at_once`: steps a
    wide run executes at once (`chain_cost_s`)."""
    state = search.by_job[base.job]
    rows = candidates(state)
    ordered = by_tmin(state)
    whole = replace(base, files=tuple(f.path for f in ordered))
    oldest = ordered[0].tmin_us - 1 if ordered else state.cap_us or 0
    root_base = state.t_done_us if state.t_done_us is not None else oldest
    co_roots = _co_roots(base.job, search.graph, bases, search.busy)
    co_sets = [
        tuple(_root_step(bases[j]) for j in subset)
        for n in range(len(co_roots) + 1)
        for subset in itertools.combinations(co_roots, n)
    ]
    best: tuple[tuple[float, float, int], JobChoice] | None = None
    root_rows: list[Candidate | None] = list(_root_rows(rows, rules)) if rows else [None]
    limit = max(MIN_SETS, min(MAX_SETS, SEARCH_BUDGET // (len(root_rows) * len(co_sets))))
    for row in root_rows:
        root = _root_step(base if row is None else whole, row)
        for others in co_sets:
            roots = (root, *others)
            for steps in _descendant_sets(roots, root_base, search, limit):
                chain = (*roots, *steps)
                gain = sum(step.gain_s for step in chain)
                cost = chain_cost_s(chain, run_cost_s, steps_at_once)
                eta = _chain_eta(gain, cost)
                score = (round(eta, 12), round(gain, 9), root.cutoff_us)
                if best is not None and score <= best[0]:
                    continue
                choice = replace(
                    base,
                    cutoff_us=root.cutoff_us,
                    files=root.paths,
                    scan_bytes=root.scan_bytes,
                    gain_s=gain,
                    cost_s=cost,
                    eta=eta,
                    candidates=rows,
                    chain=chain,
                    run_cost_s=run_cost_s,
                )
                best = (score, choice)
    assert best is not None  # at least the root alone
    return best[1]


def plan_chains(request: PlanRequest) -> Plan:
    """`planner.plan` with chains: which runs to launch now, each a chain. `run_cost_s` is
    L, the fixed cost of a run (queue aside: launch and session), which a chain pays once;
    `steps_at_once`: steps a wide run executes at once, which its E counts."""
    rules = check_plan_args(request)
    jobs, now_us, policy, seed = request.jobs, request.now_us, request.policy, request.seed
    max_wait_s, first_runs_first = request.max_wait_s, request.first_runs_first
    run_cost_s, steps_at_once = request.run_cost_s, request.steps_at_once
    graph = Graph.of(jobs)
    by_job = {state.job: state for state in jobs}
    free = request.free_slots()
    bases: dict[str, JobChoice] = {}
    skipped: list[Skip] = []
    for state in jobs:
        outcome = choose_job(state, policy, rules, now_us)
        if isinstance(outcome, JobChoice):
            bases[state.job] = replace(outcome, waited_s=waited_s(state, now_us))
        else:
            skipped.append(outcome)
    taken = {state.job for state in jobs if state.running}
    first_runs = {s.job for s in jobs if s.t_done_us is None} if first_runs_first else set()
    launches: list[JobChoice] = []
    best: dict[str, JobChoice] = {}  # each root's best run given `taken`
    fresh: set[str] = set()  # tables taken by the last pick
    held: dict[str, str] = {}  # root -> why the machine's budget held its run back
    while len(launches) < free:
        search = _Search(by_job, graph, taken, now_us)
        for job, base in bases.items():
            if job in taken:
                best.pop(job, None)
            elif job not in best or _touches(best[job], fresh):
                best[job] = best_chain(base, bases, search, rules, run_cost_s, steps_at_once)
        options = _carry_waits(best, max_wait_s, first_runs)
        if not options:
            break
        ranked = rules.rank(options, jobs, now_us, seed)
        first = ranked[0].job
        if max_wait_s is not None or first_runs_first:
            ranked = age(ranked, jobs, max_wait_s, first_runs_first)
        pick = first_affordable(ranked, request, launches, held)
        if pick is None:
            break
        if pick.aged and pick.job == first and pick is ranked[0]:
            pick = replace(pick, aged="")  # the policy's order gave it the slot anyway
        launches.append(pick)
        fresh = set(pick.jobs)
        taken |= fresh
    chained_into = {d: c.job for c in launches for d in c.descendants}
    # A job with nothing pending before its parents' steps is refreshed all the same.
    skipped = [
        Skip(s.job, f"refreshed in the chain of {chained_into[s.job]}")
        if s.job in chained_into
        else s
        for s in skipped
    ]
    skipped += _why_not(bases, launches, request.no_slot(), held)
    launched = {c.job for c in launches}
    rest = rules.rank([b for j, b in bases.items() if j not in launched], jobs, now_us, seed)
    return Plan(now_us, policy, free, tuple(launches), tuple(skipped), (*launches, *rest))


def _carry_waits(
    best: Mapping[str, JobChoice], max_wait_s: float | None, first_runs: Collection[str] = ()
) -> list[JobChoice]:
    """Each root's best run, where a root that aging would put first (past the aging
    bound, or never materialized: `first_runs`) and that another root's best run refreshes
    as a descendant hands its aging to that run: aging puts that run first in its place
    (it moves the root further, to its parents' new commits), not the root's own run on
    its parents' old ones. After an outage every job had waited past the bound, and aging
    put market_features first on the aggregates' old commits: it took market_features and
    the tables below it out of the aggregates' runs, and its next run came 90 s later. At
    the start, market_features' first materialization went first the same way, and its
    runs and the aggregates' alternated from then on, each on the other's old commits.
    The root stays a candidate in the policy's order; only its aging moves. (Dropping
    such roots as candidates altogether made the recovery one run of every table,
    80-100 s, that held them all: Max-Benefit's P rose 15 %.)"""
    if max_wait_s is None and not first_runs:
        return list(best.values())
    above = _refreshed_by(best)
    past = {j for j, c in best.items() if max_wait_s is not None and c.waited_s > max_wait_s}
    handing = {job for job in best if job in above and (job in past or job in first_runs)}

    def takers(job: str) -> set[str]:
        """The roots that age in `job`'s place, through roots that hand on their own."""
        found: set[str] = set()
        for root in above.get(job, ()):
            found |= takers(root) if root in handing else {root}
        return found

    carried: dict[str, JobChoice] = {}  # a taker -> the longest-waiting root it ages for
    firsts: dict[str, str] = {}  # a taker -> a never-materialized root it ages for
    for job in (j for j in best if j in handing):  # the plan's order: ties go the same way
        for root in takers(job):
            waited = best[job].waited_s
            if job in past and (root not in carried or waited > carried[root].waited_s):
                carried[root] = best[job]
            if job in first_runs:
                firsts.setdefault(root, job)
    found = []
    for job, choice in best.items():
        giver = carried.get(job)
        found.append(
            replace(
                choice,
                hands_wait_on=job in handing,
                carried_from=giver.job if giver else "",
                carried_wait_s=giver.waited_s if giver else 0.0,
                carried_first_run=firsts.get(job, ""),
            )
        )
    return found


def _refreshed_by(best: Mapping[str, JobChoice]) -> dict[str, list[str]]:
    """A descendant in some root's best run -> those roots."""
    above: dict[str, list[str]] = {}
    for root, choice in best.items():
        for step in choice.chain:
            if step.after:
                above.setdefault(step.job, []).append(root)
    return above


def _touches(choice: JobChoice, fresh: set[str]) -> bool:
    """Whether tables just taken change a root's best run: one of its steps was taken.
    Otherwise its best is still its best: the options taken away were not it."""
    return any(job in fresh for job in choice.jobs)


def plan_runs(request: PlanRequest) -> Plan:
    """The tick's plan: chains (`plan_chains`), or with `chains` False the published plan,
    one table per run (`planner.plan`, which has no L: `run_cost_s` and `steps_at_once`
    are not read)."""
    return plan_chains(request) if request.chains else plan(request)


def _why_not(
    bases: Mapping[str, JobChoice],
    launches: Sequence[JobChoice],
    no_slot: str,
    held: Mapping[str, str] | None = None,
) -> list[Skip]:
    """Why each runnable job that is not a root of this tick's runs was not launched."""
    roots = {c.job for c in launches}
    chained_into = {d: c.job for c in launches for d in c.descendants}
    reasons = []
    for job in bases:
        if job in roots:
            continue
        if job in chained_into:
            reasons.append(Skip(job, f"refreshed in the chain of {chained_into[job]}"))
        elif held and job in held:
            reasons.append(Skip(job, held[job]))
        else:
            reasons.append(Skip(job, no_slot))
    return reasons
