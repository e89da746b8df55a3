"""The jobs the project runs: the declarations in `jobs_sql/` (catalog/declaration.py), in
dependency order, with what the rest of the code asks of a job.

How a job's table is kept exact under any sequence of cutoffs and subsets is its merge
kind (METHOD 9); the runner generates the merge from it (execution/merge_sql.py). The kinds
reduce to three ways of running:
- `merge`: partial rows from the run's input are merged into the current target rows with
  the same key (partial aggregates, per-side replace, replace by key).
- `regroup`: input rows can change after they were counted, so each group the run
  touches is recomputed from the current input rows of that group.
- `window`: `regroup`, then every row whose trailing window holds a touched group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from freshness_pipeline.catalog.declaration import JobDeclaration, load_folder, with_layout
from freshness_pipeline.hudi.write import TableLayout
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.planner import Downstream

JobKind = Literal["merge", "regroup", "window"]
BUNDLED_JOBS_DIR = Path(__file__).resolve().parents[2] / "jobs_sql"


@dataclass(frozen=True)
class JobSpec:
    """A declared job as the runner, the sensor and the assets read it."""

    declaration: JobDeclaration

    @property
    def name(self) -> str:
        return self.declaration.name

    @property
    def inputs(self) -> tuple[str, ...]:
        """Incremental inputs: Hudi tables with watermarks."""
        return self.declaration.inputs

    @property
    def dimensions(self) -> tuple[str, ...]:
        """Static lookup tables, read whole."""
        return self.declaration.dimensions

    @property
    def key(self) -> tuple[str, ...]:
        """The record key; event time first, so bloom-index key ranges prune files."""
        return self.declaration.key

    @property
    def event_time(self) -> str:
        return self.declaration.event_time

    @property
    def partition_by(self) -> str | None:
        partition = self.declaration.partition
        return partition.column if partition else None

    @property
    def partition_expr(self) -> str | None:
        """How a row's partition follows from its columns (SQL)."""
        partition = self.declaration.partition
        return partition.expr if partition else None

    @property
    def kind(self) -> JobKind:
        if self.declaration.merge != "recompute_touched_groups":
            return "merge"
        return "window" if self.declaration.window is not None else "regroup"

    @property
    def window_s(self) -> int:
        window = self.declaration.window
        return window.seconds if window else 0

    @property
    def group_columns(self) -> tuple[str, ...]:
        """regroup/window: the key's columns besides event time (what a group is)."""
        return self.declaration.group_columns

    @property
    def group_name(self) -> str:
        return self.declaration.group

    @property
    def description(self) -> str:
        return self.declaration.description

    @property
    def index_name(self) -> str:
        """The declared index as a commit records it: `simple`, `bloom` or `bucket:<n>`."""
        index = self.declaration.index
        return f"bucket:{self.declaration.buckets}" if index == "bucket" else index

    @property
    def layout(self) -> TableLayout:
        return TableLayout(self.name, ",".join(self.key), None, self.partition_by)


def load_jobs(*folders: Path) -> dict[str, JobSpec]:
    """The declared jobs of one or more folders by name, in dependency order
    (DeclarationError lists every problem of every folder)."""
    return {name: JobSpec(decl) for name, decl in load_folder(*folders).items()}


def laid_out(jobs: Mapping[str, JobSpec], layout: str | None) -> dict[str, JobSpec]:
    """`jobs` with each table in its layout named `layout` where it declares one (the
    thesis reproductions: `published`); the declared layout otherwise."""
    return {name: JobSpec(with_layout(spec.declaration, layout)) for name, spec in jobs.items()}


JOBS: dict[str, JobSpec] = load_jobs(BUNDLED_JOBS_DIR)
# Dependency order: every job after the jobs it reads.
PIPELINE_ORDER: tuple[str, ...] = tuple(JOBS)


def downstream_of(
    job: str, t_dones: dict[str, int | None], jobs: Mapping[str, JobSpec] | None = None
) -> tuple[Downstream, ...]:
    """The children of `job` among `jobs` (the bundled ones by default) that could advance
    if it did (pmb_pipeline's bonus)."""
    children = []
    for child in (JOBS if jobs is None else jobs).values():
        if job not in child.inputs:
            continue
        others = [t_dones.get(o) for o in child.inputs if o != job]
        if any(o is None for o in others):
            continue  # another input has never run: the child cannot advance anyway
        cap = input_cap(others)
        children.append(Downstream(child.name, t_dones.get(child.name), cap))
    return tuple(children)
