"""The sensor's decision for one run, as one record: written to run config and tags here,
and read back here only (the asset, the report, the experiment and the tests use
`RunPlan.from_run` / `from_tags`; nothing else parses `freshness/*` tags).

A run carries a few tags a reader takes in at a glance in the runs list (`VISIBLE_TAGS`:
the asset, the other tables of its chain, the policy, the cutoff as a UTC time, the files
it reads of those pending, who launched it, and a retry's number); the rest of the
decision (G, E, eta, bytes, the cost model, the exact microseconds) travels in the run
config's `sensor_plan` (the run does not act on it) and the run copies it into its
materialization metadata. Runs recorded before that split carry everything in tags;
`from_tags` reads both.

Pure Python: no dagster, pyspark or hudi, so it is unit-tested on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from freshness_pipeline.scheduling.cost_model import FittedCost
from freshness_pipeline.scheduling.planner import MIB, JobChoice
from freshness_pipeline.scheduling.timefmt import readable_utc

TAG_PREFIX = "freshness/"
APPROXIMATE = "completion_time"  # hudi_metadata.SOURCE_COMPLETION (pure module: no import)
ASSET_TAG = f"{TAG_PREFIX}asset"
# The other tables a chained sensor run commits besides its planned asset, in the order
# its steps run (comma list): the co-roots, then the descendants. The run's tags are the
# planned asset's; each step's part of the plan is in its own op config (`StepPlan`).
CHAINED_TAG = f"{TAG_PREFIX}chained"
SENSOR = "freshness_sensor"
BY_HAND = "hand"  # a Materialize click, `dagster asset materialize`, a backfill
PLAN_FIELD = "sensor_plan"  # the op config field that carries the rest of the decision


def _tag(name: str) -> str:
    return f"{TAG_PREFIX}{name}"


LAUNCHED_BY_TAG = _tag("launched_by")
AGING_TAG = _tag("aging")  # only on a run ranked ahead of eta's order (planner.age)
# Only on a chained run whose steps go side by side, each in its own process.
AT_ONCE_TAG = _tag("steps_at_once")
# Every tag a run may carry, in the order the runs list shows them; nothing else is a tag.
VISIBLE_TAGS = (
    ASSET_TAG,
    CHAINED_TAG,
    _tag("policy"),
    _tag("cutoff"),
    _tag("files"),
    LAUNCHED_BY_TAG,
    _tag("retry"),
    AGING_TAG,
    AT_ONCE_TAG,
)


def files_text(chosen: int, pending: int) -> str:
    """`3 of 12 files`: a subset is visible at a glance."""
    return f"{chosen} of {pending} files"


def hand_run_tags(cutoff_us: int | None, files_read: int, files_pending: int) -> dict[str, str]:
    """Tags for a run nobody planned (the asset adds them once it has resolved what the run
    reads), so the runs list says what it did like a sensor run. No `freshness/asset`: that
    tag marks the sensor's runs (its retries and run queue limit count those only)."""
    return {
        LAUNCHED_BY_TAG: BY_HAND,
        _tag("cutoff"): readable_utc(cutoff_us),
        _tag("files"): files_text(files_read, files_pending),
    }


@dataclass(frozen=True)
class RunPlan:
    """What a sensor-launched run processes (`files`, `cutoff_u`, planned from `t_done_us`)
    and why (the policy's G, E, eta, the pending set and the cost model behind E)."""

    asset: str
    cutoff_us: int  # process arrivals in (t_done, cutoff]; the run config's `cutoff_u`
    t_done_us: int | None  # the asset's watermark the plan was made from; None: never ran
    file_count: int
    pending_files: int
    scan_bytes: int
    policy: str
    gain_s: float  # G
    cost_s: float  # E
    eta: float
    candidates: int
    cost_a_s: float
    cost_b_s_per_mib: float
    cost_c_s_per_file: float
    cost_model: str  # where the coefficients came from: "prior:three_term", "fit:two_term"
    cost_fit: str  # how well they fit, for people
    attempt: int = 0  # failed runs of the job since its last success (retries get a new key)
    files: tuple[str, ...] = ()  # the files themselves travel in run config only
    # Where the pending files' arrival ranges came from (hudi_metadata.ARRIVAL_SOURCES);
    # "completion_time" marks an approximation (an external table without arrival column).
    arrival_sources: tuple[str, ...] = ()
    waited_s: float = 0.0  # how long the job had been runnable without a slot
    aged: str = ""  # why aging ranked it ahead of the policy's order; "": it did not
    # A chained run: the other tables it commits, in step order, and L, the run's fixed
    # cost counted once in cost_s (gain_s, cost_s and eta are then the whole run's).
    chain: tuple[str, ...] = ()
    run_cost_s: float = 0.0

    @property
    def is_subset(self) -> bool:
        return self.file_count < self.pending_files

    @property
    def scan_mib(self) -> float:
        return self.scan_bytes / MIB

    @classmethod
    def from_choice(
        cls,
        choice: JobChoice,
        t_done_us: int | None,
        cost: FittedCost,
        attempt: int = 0,
        arrival_sources: tuple[str, ...] = (),
    ) -> RunPlan:
        fit = (
            f"{cost.samples_used} runs, rmse {cost.rmse_s:.2f}s"
            if cost.rmse_s is not None
            else f"prior ({cost.samples_used} runs so far)"
        )
        return cls(
            asset=choice.job,
            cutoff_us=choice.cutoff_us,
            t_done_us=t_done_us,
            file_count=len(choice.files),
            pending_files=choice.pending_files,
            scan_bytes=choice.scan_bytes,
            policy=choice.policy,
            gain_s=choice.gain_s,
            cost_s=choice.cost_s,
            eta=choice.eta,
            candidates=len(choice.candidates),
            cost_a_s=cost.model.a_s,
            cost_b_s_per_mib=cost.model.b_s_per_byte * MIB,
            cost_c_s_per_file=cost.model.c_s_per_file,
            cost_model=f"{cost.source}:{cost.mode}",
            cost_fit=fit,
            attempt=attempt,
            files=tuple(choice.files),
            arrival_sources=tuple(sorted(arrival_sources)),
            waited_s=choice.waited_s,
            aged=choice.aged,
            chain=choice.descendants,
            run_cost_s=choice.run_cost_s,
        )

    # --- written here ---------------------------------------------------------------------

    @property
    def run_key(self) -> str:
        """Idempotent per decision: a tick that repeats the same decision adds no run; the
        same decision after a failed run differs in `attempt`, so it is retried."""
        key = f"{self.asset}:{self.t_done_us}:{self.cutoff_us}:{self.file_count}:a{self.attempt}"
        return f"{key}+{','.join(self.chain)}" if self.chain else key

    def op_config(self) -> dict[str, Any]:
        return {
            "files": list(self.files),
            "cutoff_u": str(self.cutoff_us),
            # The run re-plans instead of committing if another run moves t_done meanwhile.
            "t_done_planned": "none" if self.t_done_us is None else str(self.t_done_us),
            PLAN_FIELD: self.decision(),
        }

    def run_config(self) -> dict[str, Any]:
        return {"ops": {self.asset: {"config": self.op_config()}}}

    def tags(self) -> dict[str, str]:
        """The few tags the runs list shows; the rest is `decision()`, in run config."""
        tags = {
            ASSET_TAG: self.asset,
            _tag("policy"): self.policy,
            _tag("cutoff"): readable_utc(self.cutoff_us),
            _tag("files"): files_text(self.file_count, self.pending_files),
            LAUNCHED_BY_TAG: SENSOR,
        }
        if self.attempt:
            tags[_tag("retry")] = f"{self.attempt} after failed runs"
        if self.aged:
            tags[AGING_TAG] = self.aged
        if self.chain:
            tags[CHAINED_TAG] = ",".join(self.chain)
        return tags

    def decision(self) -> dict[str, str]:
        """Why the sensor chose this run, as text (the names the tags had before; exact
        floats as repr), for run config and the run's materialization metadata."""
        return {
            "t_done_us": "" if self.t_done_us is None else str(self.t_done_us),
            "u_us": str(self.cutoff_us),
            "G_s": f"{self.gain_s:.3f}",
            "E_s": f"{self.cost_s:.3f}",
            "eta": f"{self.eta:.6f}",
            "files_chosen": str(self.file_count),
            "files_pending": str(self.pending_files),
            "scan_bytes": str(self.scan_bytes),
            "scan_mib": f"{self.scan_mib:.3f}",
            "subset": str(self.is_subset).lower(),
            "candidates": str(self.candidates),
            "cost_a_s": repr(self.cost_a_s),
            "cost_b_s_per_mib": repr(self.cost_b_s_per_mib),
            "cost_c_s_per_file": repr(self.cost_c_s_per_file),
            "cost_model": (
                f"{self.cost_model} a={self.cost_a_s:.3f}s b={self.cost_b_s_per_mib:.5f}s/MiB "
                f"c={self.cost_c_s_per_file:.4f}s/file"
            ),
            "cost_source": self.cost_model,
            "cost_fit": self.cost_fit,
            "attempt": str(self.attempt),
            "arrival_source": ",".join(self.arrival_sources),
            "arrival_approximate": str(APPROXIMATE in self.arrival_sources).lower(),
            "waited_s": f"{self.waited_s:.3f}",
            "aging": self.aged,
            "chain": ",".join(self.chain),
            "run_cost_s": f"{self.run_cost_s:.3f}",
        }

    def describe(self) -> str:
        """The decision in words, for the run's own log."""
        retry = f", retry {self.attempt}" if self.attempt else ""
        aged = f"; ahead of {self.policy}'s order by aging: {self.aged}" if self.aged else ""
        chain = (
            f"; the run then commits {', '.join(self.chain)} (G, E and eta are the run's, "
            f"with {self.run_cost_s:.1f} s of launch and session counted once)"
            if self.chain
            else ""
        )
        return (
            f"planned by {SENSOR} ({self.policy}{retry}): "
            f"{files_text(self.file_count, self.pending_files)} up to "
            f"{readable_utc(self.cutoff_us)}, to remove {self.gain_s:.1f} s of staleness in "
            f"about {self.cost_s:.1f} s (eta {self.eta:.3g}; cost model {self.cost_model}, "
            f"{self.cost_fit}){aged}{chain}"
        )

    # --- read back here -------------------------------------------------------------------

    @classmethod
    def from_tags(
        cls, tags: Mapping[str, str], run_config: Mapping[str, Any] | None = None
    ) -> RunPlan | None:
        """The plan a run was launched with, or None for a run the sensor did not plan (a
        Materialize click, the CLI). The decision is read from `run_config`'s `sensor_plan`
        (or, for runs recorded before it moved there, from the tags); with `run_config`,
        `files` is filled in too."""
        asset = tags.get(ASSET_TAG)
        if not asset:
            return None
        op = _op_config(asset, run_config)
        tags = plan_tags(tags, run_config)
        if _tag("u_us") not in tags:
            return None
        t_done = tags.get(_tag("t_done_us"), "")
        files = tuple(op.get("files", ()))
        return cls(
            asset=asset,
            cutoff_us=int(tags[_tag("u_us")]),
            t_done_us=int(t_done) if t_done not in ("", "None") else None,
            file_count=int(tags[_tag("files_chosen")]),
            pending_files=int(tags[_tag("files_pending")]),
            scan_bytes=int(tags.get(_tag("scan_bytes")) or _mib_bytes(tags[_tag("scan_mib")])),
            policy=tags[_tag("policy")],
            gain_s=float(tags[_tag("G_s")]),
            cost_s=float(tags[_tag("E_s")]),
            eta=float(tags[_tag("eta")]),
            candidates=int(tags.get(_tag("candidates"), "0")),
            cost_a_s=float(tags.get(_tag("cost_a_s"), "nan")),
            cost_b_s_per_mib=float(tags.get(_tag("cost_b_s_per_mib"), "nan")),
            cost_c_s_per_file=float(tags.get(_tag("cost_c_s_per_file"), "nan")),
            cost_model=tags.get(_tag("cost_source"), tags.get(_tag("cost_model"), "")),
            cost_fit=tags.get(_tag("cost_fit"), ""),
            attempt=int(tags.get(_tag("attempt"), "0")),
            files=files,
            arrival_sources=tuple(s for s in tags.get(_tag("arrival_source"), "").split(",") if s),
            waited_s=float(tags.get(_tag("waited_s")) or "0"),
            aged=tags.get(AGING_TAG, ""),
            chain=chained_steps(tags),
            run_cost_s=float(tags.get(_tag("run_cost_s")) or "0"),
        )

    @classmethod
    def from_run(cls, run: Any) -> RunPlan | None:
        """From a Dagster run (anything with `.tags` and `.run_config`)."""
        return cls.from_tags(run.tags, getattr(run, "run_config", None))


@dataclass(frozen=True)
class StepPlan:
    """A step of a chained sensor run other than its planned asset: its part of the plan,
    carried in its own op config. A co-root reads the files its policy chose, up to its
    cutoff; a descendant reads everything its inputs hold when its turn comes, which the
    plan expects to be `cutoff_us` (its parents' planned cutoffs)."""

    asset: str
    root: str  # the run's planned asset
    cutoff_us: int
    t_done_us: int | None
    gain_s: float
    cost_s: float
    scan_bytes: int
    file_count: int
    after: tuple[str, ...] = ()  # the steps it reads; empty for a co-root
    files: tuple[str, ...] = ()  # a co-root's files; a descendant has none

    @property
    def is_root(self) -> bool:
        return not self.after

    @classmethod
    def of_chain(cls, choice: JobChoice, t_dones: Mapping[str, int | None]) -> list[StepPlan]:
        return [
            cls(
                step.job,
                choice.job,
                step.cutoff_us,
                t_dones.get(step.job),
                step.gain_s,
                step.cost_s,
                step.scan_bytes,
                step.files,
                step.after,
                step.paths,
            )
            for step in choice.chain[1:]
        ]

    def decision(self) -> dict[str, str]:
        return {
            "chain_root": self.root,
            "t_done_us": "" if self.t_done_us is None else str(self.t_done_us),
            "u_us": str(self.cutoff_us),
            "G_s": f"{self.gain_s:.3f}",
            "E_s": f"{self.cost_s:.3f}",
            "scan_bytes": str(self.scan_bytes),
            "files_chosen": str(self.file_count),
            "after": ",".join(self.after),
        }

    def op_config(self) -> dict[str, Any]:
        if not self.is_root:
            return {PLAN_FIELD: self.decision()}
        return {
            "files": list(self.files),
            "cutoff_u": str(self.cutoff_us),
            "t_done_planned": "none" if self.t_done_us is None else str(self.t_done_us),
            PLAN_FIELD: self.decision(),
        }

    @classmethod
    def from_decision(cls, asset: str, decision: Mapping[str, str]) -> StepPlan | None:
        """A step's plan from its op config's `sensor_plan`; None when it is not a step of
        a chained run (a run's planned asset, or a run launched by hand)."""
        if not decision.get("chain_root"):
            return None
        t_done = decision.get("t_done_us", "")
        return cls(
            asset,
            decision["chain_root"],
            int(decision["u_us"]),
            int(t_done) if t_done else None,
            float(decision["G_s"]),
            float(decision["E_s"]),
            int(decision.get("scan_bytes") or 0),
            int(decision.get("files_chosen") or 0),
            tuple(s for s in decision.get("after", "").split(",") if s),
        )

    def describe(self) -> str:
        what = (
            f"{self.file_count} chosen files"
            if self.is_root
            else f"what {', '.join(self.after)} just committed"
        )
        return (
            f"planned by {SENSOR} in the run of {self.root}: {what}, up to "
            f"{readable_utc(self.cutoff_us)}, to remove {self.gain_s:.1f} s of staleness in "
            f"about {self.cost_s:.1f} s"
        )


def chained_steps(tags: Mapping[str, str]) -> tuple[str, ...]:
    """The steps a sensor run took along after its planned asset (its chain tag)."""
    return tuple(s for s in tags.get(CHAINED_TAG, "").split(",") if s)


def execution_config(at_once: int) -> dict[str, Any]:
    """The run config that selects the run's executor (orchestration/step_executor.py):
    nothing for one step at a time (in process, the default), else `at_once` step
    processes started from a fork server (`chains.steps_at_once_for` says how many)."""
    if at_once <= 1:
        return {}
    multiprocess = {"max_concurrent": at_once, "start_method": {"forkserver": {}}}
    return {"execution": {"config": {"multiprocess": multiprocess}}}


def execution_tags(at_once: int) -> dict[str, str]:
    """The tag a run with its steps side by side carries; none otherwise."""
    return {AT_ONCE_TAG: str(at_once)} if at_once > 1 else {}


def run_config_of(plan: RunPlan, steps: Sequence[StepPlan], at_once: int = 1) -> dict[str, Any]:
    """A sensor run's config: its planned asset's, each other step's part, and its
    executor when its steps go side by side."""
    ops = plan.run_config()["ops"]
    for step in steps:
        ops[step.asset] = {"config": step.op_config()}
    return {"ops": ops, **execution_config(at_once)}


def _mib_bytes(text: str) -> int:
    # Runs recorded before `scan_bytes` was a tag carry only the rounded MiB figure.
    return round(float(text) * MIB)


def _op_config(asset: str, run_config: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not run_config:
        return {}
    return run_config.get("ops", {}).get(asset, {}).get("config", {}) or {}


def plan_tags(
    tags: Mapping[str, str], run_config: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """A run's whole decision as flat `freshness/*` names: its tags and, from `run_config`,
    the `sensor_plan` under the same prefix (what the experiment records per run, in the
    shape runs recorded before the split have, so `from_tags` reads either)."""
    found = {k: v for k, v in tags.items() if k.startswith(TAG_PREFIX)}
    asset = tags.get(ASSET_TAG)
    if asset:
        decision = _op_config(asset, run_config).get(PLAN_FIELD) or {}
        found |= {_tag(k): str(v) for k, v in decision.items() if _tag(k) not in found}
    return found


def planned_steps(
    tags: Mapping[str, str], run_config: Mapping[str, Any] | None = None
) -> tuple[tuple[str, float, float], ...]:
    """A sensor run's steps in the order they commit, each (asset, E, G) as planned: the
    planned asset's own part is the run's G and E less its other steps' and L. Empty for a
    run the sensor did not plan (a Materialize click, a peer's run)."""
    plan = RunPlan.from_tags(tags, run_config)
    if plan is None:
        return ()
    others = []
    for asset in plan.chain:
        step = StepPlan.from_decision(asset, _op_config(asset, run_config).get(PLAN_FIELD) or {})
        if step is not None:
            others.append((asset, step.cost_s, step.gain_s))
    root_cost = plan.cost_s - plan.run_cost_s - sum(cost for _, cost, _ in others)
    root_gain = plan.gain_s - sum(gain for _, _, gain in others)
    return ((plan.asset, max(0.0, root_cost), max(0.0, root_gain)), *others)
