"""A model of the pipeline for the conditions the real system cannot reach here.

The long experiment misses its targets on 2 cores, and its results page names conditions
that would change the verdict: a smaller fixed cost per run, bursty arrivals, more
concurrency. Measuring each through the real system costs about an hour a condition, so
this module answers "which conditions, and how much" first, with the real decision code
and a modelled machine:

- real: `planner.plan` (every policy), costs fitted by `cost_model.fit_cost_model` from the
  simulated runs' own history, the sensor's pending-range semantics (METHOD 5.5), the
  pipeline-aware `downstream_of`, and P / P0 by `staleness.sample_tables`;
- modelled: ingestion (a raw commit every `commit_interval_s` writing `files_per_commit`
  new files, every `burst_every`-th commit `burst_factor` times larger; or another
  `RawLayout`, such as the copy-on-write packing of `published_scale.py`), the machine (a
  run's work is `fixed_s + per_mib_s * MiB + per_file_s * files` seconds, and the runs in
  flight share `capacity` runs' worth of speed, processor-sharing, after `launch_s` of
  queue and process start), and each job's commit (its new rows go to one young file
  group per partition, which a consumer reads whole, as Hudi's copy-on-write makes it).

Pure Python (no Spark, no Dagster): a 300 s run of one policy takes well under a second;
a table's commits are kept in arrival order and searched by bisection, so a 3-hour window
(`published_scale.py`) costs seconds, not the minutes a scan of every commit per tick took.
It is calibrated against the measured long run in `sim_conditions.calibrated()`; its
figures are a model's, and `docs/results/README.md` quotes them as such. What it is asked,
and the tables it prints, are `sim_studies.py`'s.
"""

from __future__ import annotations

import bisect
import functools
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from freshness_pipeline.catalog.jobs import downstream_of
from freshness_pipeline.execution.runner import DERIVED_SMALL_FILE_BYTES
from freshness_pipeline.lab.experiment.sim_conditions import (
    BASE_US,
    PARTITION_GROUPS,
    RAW_STREAMS,
    Conditions,
    NewFilesPerCommit,
    RawCommitFiles,
)
from freshness_pipeline.lab.experiment.staleness import Sample, sample_tables, total_staleness
from freshness_pipeline.lab.experiment.variants import MODELLED, SIMULATED_PEERS, VARIANTS
from freshness_pipeline.scheduling.budget import (
    BUDGET_RULES,
    DEFAULT_CAPACITY,
    MachineBudget,
    Work,
    fit_capacity,
    slowdown,
    step_left_s,
)
from freshness_pipeline.scheduling.chains import plan_runs, steps_at_once_for
from freshness_pipeline.scheduling.cost_model import (
    CostMode,
    RunSample,
    fit_cost_model,
    typical_input,
)
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.planner import (
    MIB,
    CostModel,
    JobChoice,
    JobState,
    PendingInput,
    PlanRequest,
    get_policy,
)
from freshness_pipeline.scheduling.units import US_PER_S

# The variants the model runs are the registry's: MODELLED, every variant of our sensor
# whose settings it models (variants.Variant.model: the policy, cost mode, chains, runs and
# steps at once), and SIMULATED_PEERS, each by its own rule below (what a Dagster user would pick:
# eager automation, and all six every `Conditions.interval_s`; neither reads our planner).


@dataclass
class _Commit:
    arrival_min_us: int
    arrival_max_us: int
    groups: tuple[str, ...]
    added_bytes: int
    landed_us: int | None = None  # when it committed (the planner's aging clock)


@dataclass
class _Table:
    commits: list[_Commit] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # group -> latest file size
    versions: dict[str, int] = field(default_factory=dict)  # group -> commits that wrote it
    generation: dict[str, int] = field(default_factory=dict)  # partition -> current group
    # Each commit's arrival_max_us, in commit order. Commits arrive in arrival order (a
    # raw table's by ingestion, a job's by its rising watermark), so a reader's unconsumed
    # commits are a suffix found by bisection.
    marks: list[int] = field(default_factory=list)

    @property
    def watermark_us(self) -> int | None:
        return self.commits[-1].arrival_max_us if self.commits else None

    def write(
        self,
        low_us: int,
        high_us: int,
        group_bytes: Mapping[str, int],
        carried: Mapping[str, int] | None = None,
    ) -> None:
        """One commit: `group_bytes` new rows per group; `carried` older rows a
        copy-on-write rewrite copies into a group's new file (sized, never new)."""
        if self.marks and high_us < self.marks[-1]:
            raise ValueError(f"commit up to {high_us} after one up to {self.marks[-1]}")
        for group, older in (carried or {}).items():
            self.sizes[group] = self.sizes.get(group, 0) + older
        for group, added in group_bytes.items():
            self.sizes[group] = self.sizes.get(group, 0) + added
            self.versions[group] = self.versions.get(group, 0) + 1
        self.commits.append(_Commit(low_us, high_us, tuple(group_bytes), sum(group_bytes.values())))
        self.marks.append(high_us)

    def _unconsumed(self, floor_us: int) -> list[_Commit]:
        return self.commits[bisect.bisect_right(self.marks, floor_us) :]

    def append(
        self,
        low_us: int,
        high_us: int,
        per_partition: dict[str, int],
        small_file_bytes: int = DERIVED_SMALL_FILE_BYTES,
    ) -> None:
        """A derived table's commit: new rows go to each partition's young file group
        until it passes Hudi's small-file limit (`runner.DERIVED_SMALL_FILE_BYTES` in our
        jobs); then a new group starts and the old one is never rewritten again."""
        groups = {}
        for part, added in per_partition.items():
            gen = self.generation.get(part, 0)
            if self.sizes.get(f"{part}.{gen}", 0) >= small_file_bytes:
                gen += 1
                self.generation[part] = gen
            groups[f"{part}.{gen}"] = added
        self.write(low_us, high_us, groups)

    def pending_since(self, t_done_us: int | None) -> int | None:
        """When the oldest commit a consumer at t_done has not consumed landed (the rule of
        `HudiTableMetadata.pending_files`' `pending_since_us`)."""
        floor = -1 if t_done_us is None else t_done_us
        return next((c.landed_us for c in self.commits if c.arrival_max_us > floor), None)

    def added_between(self, floor_us: int, cutoff_us: int) -> int:
        """Bytes the commits holding arrivals in (floor, u] added: a run's new input."""
        return sum(
            c.added_bytes for c in self._unconsumed(floor_us) if c.arrival_min_us <= cutoff_us
        )

    def pending(self, table: str, t_done_us: int | None) -> list[PendingInput]:
        """The same rule as `HudiTableMetadata.pending_files`: a group is pending when an
        unconsumed commit wrote it; its range spans those commits, clipped above t_done."""
        floor = -1 if t_done_us is None else t_done_us
        ranges: dict[str, tuple[int, int]] = {}
        for commit in self._unconsumed(floor):
            low = max(commit.arrival_min_us, floor + 1)
            for group in commit.groups:
                old = ranges.get(group)
                ranges[group] = (
                    (low, commit.arrival_max_us)
                    if old is None
                    else (min(old[0], low), max(old[1], commit.arrival_max_us))
                )
        return [
            PendingInput(f"{table}/{g}@{self.versions[g]}", self.sizes[g], lo, hi)
            for g, (lo, hi) in sorted(ranges.items())
        ]


@dataclass
class _Step:
    """One table a run commits: a root with the files its plan chose (`planned`), or a
    step that reads everything its inputs hold when its turn comes (`planned` None)."""

    job: str
    cutoff_us: int | None = None
    files: frozenset[str] | None = None
    planned_s: float = 0.0  # the plan's E for it (what the machine's budget forecasts)
    gain_s: float = 0.0  # the plan's G for it


@dataclass
class _Lane:
    """A step under way in a run: what it reads and commits, and the work left."""

    job: str
    cutoff_us: int
    scan_bytes: int
    files: int
    new_bytes: int
    inputs_low_us: int
    started_s: float
    remaining_s: float
    planned_s: float = 0.0
    gain_s: float = 0.0
    beside_s: float = 0.0  # the integral of other steps working beside it over its time


@dataclass
class _Run:
    """A run on the modelled machine: `launch_s` of queue and process start, the session
    once, then its steps, each committing its own table: one after another (Dagster's
    in-process executor), or up to `Conditions.steps_at_once` at once, a step as soon as
    its parents in the run have committed (a multiprocess executor)."""

    steps: list[_Step]
    jobs: frozenset[str]
    work_at_s: float  # when it starts working (after launch)
    remaining_s: float  # of the session
    started: bool = False  # the session is done: its steps are under way
    lanes: list[_Lane] = field(default_factory=list)  # the steps under way
    at_once: int = 1  # steps it executes side by side


@dataclass(frozen=True)
class SimResult:
    variant: str
    seed: int
    p: float
    p0: float
    runs: int
    subset_runs: int
    run_seconds_median: float | None
    waits: WaitLog | None = None
    refreshes: int = 0  # tables committed (a chained run commits several)
    # After a hold: seconds from its end until every table was within the recovery
    # target (None: no hold, or never within the window).
    recovered_s: float | None = None


@dataclass
class WaitLog:
    """Per job: the longest it waited runnable without a slot (the planner's `waited_s`,
    seen on every tick, so a job that never gets a slot shows its whole wait) and when it
    was first launched and first committed (seconds into the window; absent: never)."""

    max_wait_s: dict[str, float] = field(default_factory=dict)
    first_launch_s: dict[str, float] = field(default_factory=dict)
    first_commit_s: dict[str, float] = field(default_factory=dict)  # first materialization


def _raw_commit_bytes(cond: Conditions, index: int, table: str = "trade_raw") -> int:
    share = cond.trade_share if table == "trade_raw" else 1 - cond.trade_share
    events = cond.rate_eps * share * cond.commit_interval_s
    if cond.burst_every and index % cond.burst_every == 0:
        events *= cond.burst_factor
    return int(events * cond.bytes_per_event)


@dataclass
class _Machine:
    """The modelled system during one window: tables, runs in flight and queued, each
    job's run history, and what the sampler and the result count."""

    cond: Conditions
    variant: str
    seed: int
    tables: dict[str, _Table]
    history: dict[str, list[RunSample]] = field(default_factory=dict)
    last_refresh: dict[str, int | None] = field(default_factory=dict)
    last_request_us: dict[str, int] = field(default_factory=dict)  # eager's "handled"
    runs: list[_Run] = field(default_factory=list)  # launched: in flight
    queued: list[_Run] = field(default_factory=list)  # waiting for a slot (peers)
    waits: WaitLog = field(default_factory=WaitLog)
    launched: int = 0
    subsets: int = 0
    refreshes: int = 0
    _capacity: tuple[int, float] | None = None  # (steps it was fitted on, the capacity)

    def held(self) -> set[str]:
        """Tables of the runs in flight or queued, until the run ends: what Dagster's
        eager automation counts as in progress, and what the sensor reads
        (`sensor.running_jobs`). (Freeing each table once its step committed, so a new run
        can pipeline behind, was tried here: on the modelled 2-core machine the extra runs
        in flight share its speed and each pays its fixed cost, and P rose by 20-40 %.)"""
        return {job for run in (*self.runs, *self.queued) for job in run.jobs}

    def in_progress(self) -> set[str]:
        """Tables with planned work not yet committed: Dagster's in_progress() for an
        unpartitioned asset ends when the asset materializes in its run, not when the run
        ends (CachingInstanceQueryer.get_in_progress_asset_subset), so eager pipelines:
        it requests an aggregate again while the run that refreshed it is still below."""
        busy = {job for run in self.queued for job in run.jobs}
        for run in self.runs:
            busy |= {step.job for step in run.steps}
            if not run.started:
                busy |= set(run.jobs)
            busy |= {lane.job for lane in run.lanes}
        return busy

    def writing(self) -> set[str]:
        return {lane.job for run in self.runs for lane in run.lanes}

    def launch(self, run: _Run, now_s: float) -> None:
        if len(self.runs) >= self.cond.k:
            self.queued.append(run)  # the run queue holds it until a slot frees
            return
        run.work_at_s = now_s + self.cond.launch_s
        run.remaining_s = self.cond.session_s
        if run.at_once > 1:
            run.remaining_s += self.cond.parallel_start_s
        self.runs.append(run)
        self.launched += 1
        for step in run.steps:
            self.waits.first_launch_s.setdefault(step.job, now_s)

    def _fill(self, run: _Run, now_s: float, now_us: int) -> None:
        """Starts the run's steps that can start, up to its parallelism: in order, one at
        a time, or (parallel) any whose parents in the run have committed. A step waits
        while another run writes its table (the pool): in order, the run waits with it."""
        parallel = run.at_once
        while len(run.lanes) < parallel:
            ready = self._next_ready(run, parallel > 1)
            if ready is None:
                return
            run.steps.remove(ready)
            lane = self._lane(ready, now_s, now_us, parallel > 1)
            if lane is not None:
                run.lanes.append(lane)

    def _next_ready(self, run: _Run, any_ready: bool) -> _Step | None:
        writing = self.writing()
        below = {lane.job for lane in run.lanes}
        for step in run.steps:
            inputs = self.cond.job_specs[step.job].inputs
            if step.job not in writing and not any(t in below for t in inputs):
                return step
            if not any_ready:
                return None
            below.add(step.job)  # its children in the run wait for it
        return None

    def _lane(self, step: _Step, now_s: float, now_us: int, overhead: bool) -> _Lane | None:
        """The step's read as its inputs hold now; None when it has nothing to read."""
        spec = self.cond.job_specs[step.job]
        cap = input_cap(self.tables[t].watermark_us for t in spec.inputs)
        if cap is None:
            return None  # an input has no data yet: the step has nothing to read
        cutoff = cap if step.cutoff_us is None else min(step.cutoff_us, cap)
        t_done = self.tables[step.job].watermark_us
        if t_done is not None and cutoff <= t_done:
            return None  # nothing new: the step ends at once
        pending = [p for t in spec.inputs for p in self.tables[t].pending(t, t_done)]
        chosen = [
            p
            for p in pending
            if (step.files is None and p.tmin_us <= cutoff)
            or (step.files is not None and p.path in step.files)
        ]
        scan = sum(p.size_bytes for p in chosen)
        cond = self.cond
        work = cond.fixed_s + cond.per_mib_s * scan / MIB + cond.per_file_s * len(chosen)
        work *= cond.work_factor_of(step.job)
        # Real runs vary (JIT, GC, disk); seeded per step so a variant replays exactly.
        noise = random.Random(f"{self.seed}:{step.job}:{now_us}").lognormvariate(
            0, cond.work_jitter
        )
        low = (
            t_done if t_done is not None else min((p.tmin_us for p in pending), default=cutoff) - 1
        )
        new_bytes = sum(self.tables[t].added_between(low, cutoff) for t in spec.inputs)
        extra = cond.step_overhead_s if overhead else 0.0
        return _Lane(
            step.job,
            cutoff,
            scan,
            len(chosen),
            new_bytes,
            low,
            now_s,
            work * noise + extra,
            step.planned_s,
            step.gain_s,
        )

    def _commit(self, lane: _Lane, now_s: float, now_us: int) -> None:
        spec = self.cond.job_specs[lane.job]
        # By symbol letter, a commit writes a young file group in each; by event hour (or
        # none), one.
        groups = PARTITION_GROUPS if spec.partition_by == "symbol_prefix" else 1
        out = int(lane.new_bytes * self.cond.output_ratio_of(lane.job)) // groups
        out += self.cond.file_overhead_bytes
        self.tables[lane.job].append(
            lane.inputs_low_us + 1,
            lane.cutoff_us,
            {f"p{i}": out for i in range(groups)},
            self.cond.derived_small_file_bytes,
        )
        self.tables[lane.job].commits[-1].landed_us = now_us
        self.waits.first_commit_s.setdefault(lane.job, now_s)
        took = now_s - lane.started_s
        beside = lane.beside_s / took if took > 0 else 0.0
        self.history[lane.job].append(RunSample(lane.scan_bytes, lane.files, took, beside))
        self.last_refresh[lane.job] = now_us
        self.refreshes += 1

    def units(self, now_s: float) -> int:
        """Runs' worth of work under way: a step each (a run in its session counts as one)."""
        working = [r for r in self.runs if r.work_at_s <= now_s]
        return sum(max(1, len(r.lanes)) if r.started else 1 for r in working)

    def capacity(self) -> float:
        """The machine's capacity as the planner fits it from the steps so far (budget.py),
        the default before they can say (the planner never sees `Conditions.capacity`)."""
        key = sum(len(h) for h in self.history.values())
        if self._capacity is None or self._capacity[0] != key:
            steps = {job: [(s.seconds, s.beside) for s in h] for job, h in self.history.items()}
            fitted = fit_capacity(steps).capacity
            self._capacity = (key, DEFAULT_CAPACITY if fitted is None else fitted)
        return self._capacity[1]

    def budget(self, now_s: float) -> MachineBudget:
        """The runs in flight as the planner forecasts them (budget.py): each step's planned
        work and gain, a working step's work left estimated from its wall time so far at
        the machine's present sharing (the planner never sees the true work left)."""
        capacity = self.capacity()
        stretch = slowdown(self.units(now_s) - 1, capacity)
        works = []
        for run in self.runs:
            steps = [
                (step_left_s(lane.planned_s, now_s - lane.started_s, stretch), lane.gain_s)
                for lane in run.lanes
            ]
            steps += [(step.planned_s, step.gain_s) for step in run.steps]
            starts = max(0.0, run.work_at_s - now_s)
            if not run.started:
                starts += max(0.0, run.remaining_s)
            works.append(Work(tuple(steps), starts))
        return MachineBudget(capacity, tuple(works))

    def work(self, now_s: float, now_us: int, dt_s: float) -> None:
        """dt of the machine: the steps under way (a run in its session counts as one)
        share `capacity`."""
        working = [r for r in self.runs if r.work_at_s <= now_s]
        units = self.units(now_s)
        share = min(1.0, self.cond.capacity / units) if units else 0.0
        for run in working:
            if not run.started:
                run.remaining_s -= share * dt_s
                if run.remaining_s > 0:
                    continue
                run.started = True
            else:
                for lane in list(run.lanes):
                    lane.remaining_s -= share * dt_s
                    lane.beside_s += (units - 1) * dt_s
                    if lane.remaining_s <= 0:
                        run.lanes.remove(lane)
                        self._commit(lane, now_s, now_us)
            self._fill(run, now_s, now_us)
            if not run.lanes and not run.steps:
                self._finish(run, now_s)

    def _finish(self, run: _Run, now_s: float) -> None:
        self.runs.remove(run)
        if self.queued:
            self.launch(self.queued.pop(0), now_s)


def simulate(
    cond: Conditions,
    variant: str,
    seed: int = 1,
    dt_s: float = 0.1,
    on_launch: Callable[[JobChoice], None] | None = None,
) -> SimResult:
    """One variant over one window; deterministic for a given (conditions, variant, seed).
    `on_launch` sees every launched choice (its candidate table too), for decision counts."""
    if variant not in MODELLED and variant not in SIMULATED_PEERS:
        known = sorted({*MODELLED, *SIMULATED_PEERS})
        raise ValueError(f"unknown variant {variant!r}; expected one of {known}")
    jobs = cond.job_specs
    machine = _Machine(
        cond,
        variant,
        seed,
        {name: _Table() for name in (*RAW_STREAMS, *jobs)},
        {job: [] for job in jobs},
        dict.fromkeys(jobs),
    )
    layout = cond.raw_layout or NewFilesPerCommit()
    raw_writers = {table: layout.writer(table, cond, seed) for table in RAW_STREAMS}
    samples = []
    raw_index = dict.fromkeys(RAW_STREAMS, 0)
    steps = int(round(cond.duration_s / dt_s))
    tick_every = max(1, int(round(cond.tick_s / dt_s)))
    interval_every = max(1, int(round(cond.interval_s / dt_s)))
    sample_every = int(round(1 / dt_s))
    recovered_s: float | None = None
    for step in range(1, steps + 1):
        now_s = step * dt_s
        now_us = BASE_US + int(round(now_s * US_PER_S))
        _ingest(machine, raw_writers, raw_index, now_s, now_us)
        machine.work(now_s, now_us, dt_s)
        if cond.held_at(now_s):
            pass  # held: nothing is launched (the runs in flight finish)
        elif variant == "interval":
            if step % interval_every == 0:
                run = _Run([_Step(j) for j in jobs], frozenset(jobs), 0.0, 0.0)
                machine.launch(_peer_at_once(cond, run), now_s)
        elif step % tick_every == 0:
            if variant == "dagster_eager":
                _eager_tick(machine, now_s, now_us)
            else:
                _tick(machine, now_s, now_us, on_launch)
        if step % sample_every == 0:
            marks = {name: t.watermark_us for name, t in machine.tables.items()}
            tick = sample_tables(now_us, BASE_US, marks, jobs, jobs)  # (names, specs)
            samples.extend(tick)
            if recovered_s is None:
                recovered_s = _recovered(cond, tick, now_s)
    p, p0 = total_staleness(samples)
    seconds = [s.seconds for h in machine.history.values() for s in h]
    return SimResult(
        variant,
        seed,
        p,
        p0,
        machine.launched,
        machine.subsets,
        statistics.median(seconds) if seconds else None,
        machine.waits,
        machine.refreshes,
        recovered_s,
    )


def _ingest(
    machine: _Machine,
    raw_writers: Mapping[str, Callable[[int, int], RawCommitFiles]],
    raw_index: dict[str, int],
    now_s: float,
    now_us: int,
) -> None:
    """Commit n holds the arrivals of [(n-1)*interval, n*interval); the second raw
    table's commit lands `raw_stagger_s` after the first's (ingestion commits them one
    after the other)."""
    cond = machine.cond
    for order, table in enumerate(RAW_STREAMS):
        lag_s = cond.ingest_lag_s + order * cond.raw_stagger_s
        while (raw_index[table] + 1) * cond.commit_interval_s + lag_s <= now_s + 1e-9:
            index = raw_index[table] = raw_index[table] + 1
            low = BASE_US + int((index - 1) * cond.commit_interval_s * US_PER_S)
            high = BASE_US + int(index * cond.commit_interval_s * US_PER_S) - 1
            files = raw_writers[table](index, _raw_commit_bytes(cond, index, table))
            machine.tables[table].write(low, high, files.written, files.carried)
            machine.tables[table].commits[-1].landed_us = now_us


def _recovered(cond: Conditions, tick: Sequence[Sample], now_s: float) -> float | None:
    """After a hold: seconds since its end, once every table is within the target."""
    if cond.hold is None or now_s < cond.hold[1]:
        return None
    if all(s.staleness_s <= cond.recovery_target_s for s in tick):
        return now_s - cond.hold[1]
    return None


@functools.lru_cache(maxsize=4096)
def _fitted(history: tuple[RunSample, ...], cost_mode: CostMode) -> CostModel:
    """The online fit, once per distinct history: it changes only when a run completes,
    while the sensor asks every tick (refitting each tick was most of a long run's time)."""
    return fit_cost_model(history, cost_mode).model


def _tick(
    machine: _Machine,
    now_s: float,
    now_us: int,
    on_launch: Callable[[JobChoice], None] | None = None,
) -> None:
    """The sensor: one JobState per job, the planner's plan (chains unless the variant or
    the conditions say one table per run), the launches."""
    cond, tables = machine.cond, machine.tables
    how = VARIANTS[machine.variant].model
    assert how is not None  # simulate() takes only modelled variants and peers
    policy, cost_mode = how.policy, how.cost_mode
    chained = cond.chains and how.chains is not False
    steps_at_once = how.steps_at_once or cond.steps_at_once
    held = machine.held()
    rule = how.launch_rule or cond.launch_rule
    budget = rule in BUDGET_RULES
    capacity = machine.capacity() if budget else cond.capacity
    states: list[JobState] = []
    t_dones: dict[str, int | None] = {}
    for order, spec in enumerate(cond.job_specs.values()):
        t_done = tables[spec.name].watermark_us
        t_dones[spec.name] = t_done
        marks = tuple((t, tables[t].watermark_us) for t in spec.inputs)
        cap = input_cap(m for _, m in marks)
        busy = spec.name in held
        pending = (
            ()
            if busy or cap is None
            else tuple(p for t in spec.inputs for p in tables[t].pending(t, t_done))
        )
        history = tuple(machine.history[spec.name])
        if budget:
            # Under the budget a step's E is its work alone; the forecast adds the sharing.
            history = tuple(
                replace(s, seconds=s.seconds / slowdown(s.beside, capacity)) for s in history
            )
        model = cond.planner_cost or _fitted(history, cost_mode)
        landed = [tables[t].pending_since(t_done) for t in spec.inputs] if pending else []
        states.append(
            JobState(
                spec.name,
                t_done,
                cap,
                pending,
                model,
                busy,
                order=order,
                last_refresh_us=machine.last_refresh[spec.name],
                pending_since_us=min((t for t in landed if t is not None), default=None),
                inputs=marks,
                step_input=typical_input(history),
            )
        )
    if get_policy(policy).uses_downstream:
        states = [
            replace(s, downstream=downstream_of(s.job, t_dones, cond.job_specs)) for s in states
        ]
    request = PlanRequest(
        tuple(states),
        k=cond.k,
        now_us=now_us,
        runs_at_once=cond.runs_at_once if how.runs_at_once is None else how.runs_at_once,
        policy=policy,
        seed=machine.seed,
        max_wait_s=cond.max_wait_s,
        first_runs_first=cond.first_runs_first,
        job_runs=len(machine.runs) if chained else None,
        run_cost_s=cond.launch_s + cond.session_s,
        chains=chained,
        steps_at_once=steps_at_once,
        machine=replace(machine.budget(now_s), batch=rule == "batch") if budget else None,
    )
    result = plan_runs(request)
    for choice in result.ranked:
        machine.waits.max_wait_s[choice.job] = max(
            machine.waits.max_wait_s.get(choice.job, 0.0), choice.waited_s
        )
    for choice in result.launches:
        steps = [_Step(choice.job, choice.cutoff_us, frozenset(choice.files), *_planned(choice, 0))]
        for index, step in enumerate(choice.chain[1:], start=1):
            paths = frozenset(step.paths) if not step.after else None
            steps.append(
                _Step(step.job, step.cutoff_us if paths else None, paths, *_planned(choice, index))
            )
        at_once = steps_at_once_for(choice.chain, steps_at_once)
        machine.launch(_Run(steps, frozenset(choice.jobs), 0.0, 0.0, at_once=at_once), now_s)
        machine.subsets += int(choice.is_subset)
        if on_launch is not None:
            on_launch(choice)


def _planned(choice: JobChoice, index: int) -> tuple[float, float]:
    """(E, G) the plan gave a run's step `index` (the root's are the choice's own when the
    run is not a chain)."""
    if not choice.chain:
        return (choice.cost_s, choice.gain_s)
    step = choice.chain[index]
    return (step.cost_s, step.gain_s)


def _eager_tick(machine: _Machine, now_s: float, now_us: int) -> None:
    """Dagster's AutomationCondition.eager() as its daemon evaluates it each tick: an
    asset is requested when an input has updated since it was last requested (or it has
    never run and its inputs exist), it is not in progress and no input is in progress,
    or missing; a parent requested on the same tick counts as updated. One run takes every
    requested asset, in dependency order, each step reading all its pending input."""
    held = machine.in_progress() if machine.cond.eager_release else machine.held()
    requested: list[str] = []
    for spec in machine.cond.job_specs.values():
        if spec.name in held or any(t in held for t in spec.inputs):
            continue
        if any(machine.tables[t].watermark_us is None for t in spec.inputs):
            continue
        since = machine.last_request_us.get(spec.name, -1)
        updated = any(
            t in requested
            or (
                machine.tables[t].commits and (machine.tables[t].commits[-1].landed_us or 0) > since
            )
            for t in spec.inputs
        )
        if updated:
            requested.append(spec.name)
    if not requested:
        return
    for job in requested:
        machine.last_request_us[job] = now_us
    steps = [_Step(job) for job in requested]
    machine.launch(_peer_at_once(machine.cond, _Run(steps, frozenset(requested), 0.0, 0.0)), now_s)


def _peer_at_once(cond: Conditions, run: _Run) -> _Run:
    if cond.steps_at_once_peers:
        run.at_once = cond.steps_at_once
    return run
