"""Which commits of an input a run reads: the ones that wrote its new rows (an incremental
read of someone else's table, execution/external_read.py) and, for a table with change data
capture, the ones whose changes it must follow.

A job that recomputes its groups sees a new or changed row in its input's new rows, but not
where a row was before: a deleted row, or one moved to another group, leaves its old group
counting it. A table written with Hudi's CDC on (`hoodie.table.cdc.enabled`) keeps the old
version of every changed row; the run reads the before-images of the commits whose
arrival lies in its range (t_done, u], by the same rule the planner used for the table's
rows (HudiTableMetadata.commit_arrival): a deletion arrives with its commit.

Hudi's CDC query takes a range of completion times, (start, end]; the commits a run wants
need not be contiguous in it (a declared arrival column orders commits its own way), so
the query spans them and the rows are kept by their commit's instant.
"""

from __future__ import annotations

from dataclasses import dataclass

# Before every completion time Hudi writes (yyyyMMddHHmmssSSS): a range from the start.
BEFORE_ALL = "000"


@dataclass(frozen=True)
class ChangeWindow:
    """The commits whose changes a run reads: the CDC query's (start, end] and the instants
    and completion times to keep, with their arrival range."""

    start: str
    end: str
    # What a CDC row's commit-time column may hold for the commits kept: each one's
    # instant (its requested time, what Hudi's reader writes there) and its completion.
    commit_times: frozenset[str]
    instants: frozenset[str]  # the commits' own instants (`_hoodie_commit_time` of their rows)
    # A replacecommit (clustering, insert_overwrite) completed after `start`: the files the
    # commits wrote may be replaced, which Hudi's incremental query leaves out.
    replaced_since_start: bool
    arrival_low_us: int
    arrival_high_us: int


def commit_window(
    meta, t_done_us: int | None, cutoff_us: int, overlapping: bool = False
) -> ChangeWindow | None:
    """The commits of `meta`'s table a run from t_done (exclusive) to the cutoff u
    (inclusive) reads; None when there is none. Compactions and clusterings rewrite rows
    without changing them and are left out.

    `overlapping`: every commit that wrote a row arriving in the range (its arrival range
    meets it), for reading the rows themselves. Otherwise each commit whose arrival ends
    in the range, so that runs over consecutive ranges read each commit's changes once."""
    chosen = []
    for commit in meta.commits():
        if commit.is_rewrite:
            continue
        arrival = meta.commit_arrival(commit)
        if arrival is None:
            continue
        low = arrival.low if arrival.low is not None else arrival.high
        after_t_done = t_done_us is None or arrival.high > t_done_us
        if overlapping:
            keep = after_t_done and (arrival.low is None or arrival.low <= cutoff_us)
        else:
            keep = after_t_done and arrival.high <= cutoff_us
        if keep:
            chosen.append((commit, low, arrival.high))
    if not chosen:
        return None
    # Hudi's incremental queries range over completion times from table version 8 on,
    # over instants before it.
    time_of = _completion if getattr(meta, "table_version", 8) >= 8 else _instant
    first = min(time_of(c) for c, _, _ in chosen)
    earlier = [time_of(c) for c in meta.commits() if time_of(c) < first]
    start = max(earlier) if earlier else BEFORE_ALL
    replaced = any(c.action == "replacecommit" and time_of(c) > start for c in meta.commits())
    return ChangeWindow(
        start=start,
        end=max(time_of(c) for c, _, _ in chosen),
        commit_times=frozenset(t for c, _, _ in chosen for t in (c.instant, c.completion)),
        instants=frozenset(c.instant for c, _, _ in chosen),
        arrival_low_us=min(low for _, low, _ in chosen),
        arrival_high_us=max(high for _, _, high in chosen),
        replaced_since_start=replaced,
    )


def change_window(meta, t_done_us: int | None, cutoff_us: int) -> ChangeWindow | None:
    """The commits whose changes (deletes, old versions) a run reads: those whose arrival
    ends in (t_done, u]; a deletion arrives with its commit."""
    return commit_window(meta, t_done_us, cutoff_us, overlapping=False)


def _completion(commit) -> str:
    return commit.completion


def _instant(commit) -> str:
    return commit.instant
