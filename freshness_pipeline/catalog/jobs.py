"""What each of the six jobs is: inputs, key, layout and how its output is maintained.

Three ways a target is kept exact under any sequence of cutoffs and subsets:
- `merge`: partial rows from the run's input are merged into the current target rows with
  the same key (sums add, min/max combine, open/close by event time, join sides replace).
- `regroup`: input rows can change after they were counted, so each group the run
  touches is recomputed from the current input rows of that group.
- `window`: `regroup`, then every row whose trailing window holds a touched group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from freshness_pipeline.hudi.write import TableLayout
from freshness_pipeline.scheduling.planner import Downstream

JobKind = Literal["merge", "regroup", "window"]
WINDOW_SECONDS = 60  # industry_spike's trailing window; the SQL file says the same


@dataclass(frozen=True)
class JobSpec:
    name: str
    inputs: tuple[str, ...]  # incremental inputs: Hudi tables with watermarks
    dimensions: tuple[str, ...]  # static lookup tables, read whole
    key: tuple[str, ...]  # record key, time first so bloom-index key ranges prune files
    # The published layout (METHOD 4): the four upstream tables by the symbol's first
    # letter, so a commit touches ~26 files, the sector/industry views unpartitioned.
    # Measured through the Spark service on 2 cores, a trade_aggr commit rewrites ~26
    # small files in ~9 s partitioned, ~1.8 s unpartitioned (docs/BENCHMARKS.md); we keep
    # the published layout because the experiment must reproduce its file dispersion.
    partition_by: str | None
    kind: JobKind
    group_name: str
    description: str
    group_column: str | None = None  # regroup/window: the non-time group column

    @property
    def layout(self) -> TableLayout:
        return TableLayout(self.name, ",".join(self.key), None, self.partition_by)


JOBS: dict[str, JobSpec] = {
    spec.name: spec
    for spec in (
        JobSpec(
            "trade_aggr",
            ("trade_raw",),
            (),
            ("second", "symbol"),
            "symbol_prefix",
            "merge",
            "aggregates",
            "Per symbol per event second: open, high, low, close (by event time), volume, "
            "trade count, notional and VWAP of trade_raw.",
        ),
        JobSpec(
            "price_aggr",
            ("price_raw",),
            (),
            ("second", "symbol"),
            "symbol_prefix",
            "merge",
            "aggregates",
            "Per symbol per event second: best bid and best ask of price_raw with their sizes.",
        ),
        JobSpec(
            "market_features",
            ("price_aggr", "trade_aggr"),
            (),
            ("second", "symbol"),
            "symbol_prefix",
            "merge",
            "features",
            "price_aggr full-outer-joined with trade_aggr on (second, symbol): mid, spread, "
            "spread in bps, order imbalance, VWAP against mid.",
        ),
        JobSpec(
            "enriched_features",
            ("market_features",),
            ("company_master",),
            ("second", "symbol"),
            "symbol_prefix",
            "merge",
            "features",
            "market_features with sector and industry from company_master.",
        ),
        JobSpec(
            "sector_vwap",
            ("enriched_features",),
            (),
            ("second", "sector"),
            None,
            "regroup",
            "views",
            "Per sector per event second: VWAP, volume, trade count, active and quoted symbols.",
            group_column="sector",
        ),
        JobSpec(
            "industry_spike",
            ("enriched_features",),
            (),
            ("second", "industry"),
            None,
            "window",
            "views",
            "Per industry per event second: volume against its trailing 60 s average, and "
            "the spike ratio.",
            group_column="industry",
        ),
    )
}
# Dependency order: every job after the jobs it reads.
PIPELINE_ORDER: tuple[str, ...] = tuple(JOBS)


def downstream_of(job: str, t_dones: dict[str, int | None]) -> tuple[Downstream, ...]:
    """The children of `job` that could advance if it did (pmb_pipeline's bonus)."""
    children = []
    for child in JOBS.values():
        if job not in child.inputs:
            continue
        others = [t_dones.get(o) for o in child.inputs if o != job]
        if any(o is None for o in others):
            continue  # another input has never run: the child cannot advance anyway
        cap = min(others) if others else None  # type: ignore[type-var]
        children.append(Downstream(child.name, t_dones.get(child.name), cap))
    return tuple(children)
