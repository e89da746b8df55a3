"""A table's clustering state from Hudi metadata, and one clustering executed on Spark.

The decision is `clustering.decide` (pure); this module is its two impure ends: it reads
what the decision needs (each file's arrival range, pending clustering instants and their
heartbeats) and executes what it chose with Hudi's `run_clustering` procedure (Spark SQL,
so a Spark Connect session on the shared service works too). The plan holds exactly the
chosen groups (our `ArrivalWindowClusteringPlanStrategy`) and sorts rows by `arrival_ts`.
It runs beside live writers: optimistic concurrency under the table's lock, the same lock
folder as every other writer of the table, failed writes cleaned lazily.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from freshness_pipeline.hudi.commit_keys import ARRIVAL_COLUMN
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.hudi.write import (
    ARCHIVE_KEEP_MAX_COMMITS,
    ARCHIVE_KEEP_MIN_COMMITS,
    CLEAN_RETAINED_COMMITS,
    SHARED_OPTIONS,
    concurrent_writer_options,
)
from freshness_pipeline.scheduling.clustering import (
    ClusteringSettings,
    PendingClustering,
    TableFile,
    decode_groups,
)

PLAN_STRATEGY = "io.freshness.hudi.ArrivalWindowClusteringPlanStrategy"
EXECUTION_STRATEGY = "io.freshness.hudi.FaultInjectingClusteringExecutionStrategy"
GROUPS_KEY = "freshness.clustering.groups"
FAIL_KEY = "freshness.clustering.fail_after_write"
HOLD_KEY = "freshness.clustering.hold_ms"
FAULT_KIND = "fail_in_clustering"  # faults.arm(dir, table, 1, FAULT_KIND)


def table_files(meta: HudiTableMetadata) -> tuple[TableFile, ...]:
    """Every current file group with the arrival range of its rows: the pending range a
    consumer that has read nothing would see (commit metadata; clustering hands ranges on;
    footers for groups only archived commits wrote)."""
    return tuple(
        TableFile(
            p.slice.partition,
            p.slice.file_id,
            p.slice.size_bytes,
            p.pending_min_us,
            p.pending_max_us,
            p.slice.base_instant,
        )
        for p in meta.pending_files(None)
        if p.slice.path  # a merge-on-read group with logs only has no base file to merge
    )


def pending_clusterings(meta: HudiTableMetadata) -> tuple[PendingClustering, ...]:
    return tuple(PendingClustering(*p) for p in meta.pending_clustering())


def clustering_options(
    lock_path: str | None,
    settings: ClusteringSettings,
    groups: str = "",
    fail_after_write: bool = False,
    hold_s: float = 0.0,
) -> dict[str, str]:
    """Options of one `run_clustering` call: our plan of `groups`, rows sorted by arrival,
    and what every writer of the table shares (concurrency, lock, cleaning, retention)."""
    options = {
        **SHARED_OPTIONS,
        **concurrent_writer_options(lock_path, guard=False),
        "hoodie.clustering.plan.strategy.class": PLAN_STRATEGY,
        "hoodie.clustering.execution.strategy.class": EXECUTION_STRATEGY,
        "hoodie.clustering.plan.strategy.sort.columns": ARRIVAL_COLUMN,
        "hoodie.clustering.plan.strategy.small.file.limit": str(settings.small_file_bytes),
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(settings.target_file_bytes),
        "hoodie.clustering.plan.strategy.max.num.groups": str(settings.max_groups),
        # Every partition our groups name, not only those written since the last clustering.
        "hoodie.table.services.incremental.enabled": "false",
    }
    if groups:
        options[GROUPS_KEY] = groups
    if fail_after_write:
        options[FAIL_KEY] = "true"
    if hold_s > 0:
        options[HOLD_KEY] = str(int(hold_s * 1000))
    for key, value in options.items():
        # The procedure splits `k=v,k=v` on commas and `=`: an empty value breaks it too.
        if not value or "," in value or "=" in value or "'" in value:
            raise ValueError(
                f"clustering option {key}={value!r} cannot pass through a Hudi procedure's "
                "options (no comma, '=' or quote)"
            )
    return options


@dataclass(frozen=True)
class ClusteringOutcome:
    table: str
    resumed: tuple[str, ...]
    instants: tuple[str, ...]  # clustering instants this run completed
    groups: int
    files_before: int  # the table's files before and after (ingestion may add some meanwhile)
    files_after: int
    seconds: float
    files_replaced: int = 0  # what the clustering commits themselves did
    files_written: int = 0


def _call(spark, uri: str, options: dict[str, str], **params: str) -> list:
    text = ",".join(f"{k}={v}" for k, v in options.items())
    args = [f"path => '{uri}'", *(f"{k} => '{v}'" for k, v in params.items())]
    return spark.sql(f"CALL run_clustering({', '.join(args)}, options => '{text}')").collect()


def archive_timeline(
    spark,
    uri: str,
    keep_min: int = ARCHIVE_KEEP_MIN_COMMITS,
    keep_max: int = ARCHIVE_KEEP_MAX_COMMITS,
    clean_retained: int = CLEAN_RETAINED_COMMITS,
) -> None:
    """Archives the table's active timeline down to `keep_min` commits once it holds more
    than `keep_max` (Hudi's archiver, which keeps what the cleaner and pending instants
    still need). A clustering table service does not archive after its commit (only a
    write does), and a clustered raw table's ingestion leaves archival to its clustering
    (hudi_write.ingestion_archival_options), so the clustering run archives here, once its
    file groups no longer read the timeline."""
    spark.sql(
        f"CALL archive_commits(path => '{uri}', min_commits => {keep_min}, "
        f"max_commits => {keep_max}, retain_commits => {clean_retained}, "
        "enable_metadata => false)"
    ).collect()


def execute_clustering(
    spark,
    lakehouse: Lakehouse,
    table: str,
    settings: ClusteringSettings,
    groups: str = "",
    resume: Sequence[str] = (),
    fail_after_write: bool = False,
    hold_s: float = 0.0,
) -> ClusteringOutcome:
    """Finishes the pending clustering instants in `resume` (Hudi rolls an inflight one's
    partial files back, then runs its plan again), then plans and runs `groups` (encoded by
    `clustering.encode_groups`). Raises what Hudi raises; whatever it leaves pending is
    resumed by the next run. `fail_after_write` and `hold_s` are faults for tests."""
    started = time.monotonic()
    uri = lakehouse.table_uri(table)
    lock_path = lakehouse.lock_path(table)
    before = len(lakehouse.metadata(table).latest_file_slices())
    instants: list[str] = []
    base = clustering_options(lock_path, settings, "", fail_after_write, hold_s)
    if resume:
        # Named instants: the procedure executes exactly those (rolling back what an
        # inflight one had written), never schedules.
        rows = _call(spark, uri, base, instants=",".join(resume))
        instants += [str(r[0]) for r in rows]
    if groups:
        # No op: schedule our plan, then execute it (and any other pending plan, which the
        # pool makes one a failed run of ours left).
        options = clustering_options(lock_path, settings, groups, fail_after_write, hold_s)
        rows = _call(spark, uri, options)
        instants += [str(r[0]) for r in rows if str(r[0]) not in instants]
    archive_timeline(spark, uri)
    meta = lakehouse.metadata(table)
    after = len(meta.latest_file_slices())
    done = [c for c in meta.commits() if c.instant in set(instants) and c.is_clustering]
    return ClusteringOutcome(
        table,
        tuple(resume),
        tuple(instants),
        len(decode_groups(groups)),
        before,
        after,
        time.monotonic() - started,
        sum(len(fids) for c in done for fids in c.replaced_file_ids.values()),
        sum(len(c.written) for c in done),
    )
