"""Which commits of a table with change data capture a run must read the changes of.

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
    arrival_low_us: int
    arrival_high_us: int


def change_window(meta, t_done_us: int | None, cutoff_us: int) -> ChangeWindow | None:
    """The CDC window of a run over `meta`'s table from t_done (exclusive) to the cutoff u
    (inclusive); None when no commit in it changed rows. Compactions and clusterings
    rewrite rows without changing them and are left out."""
    chosen = []
    for commit in meta.commits():
        if commit.is_rewrite:
            continue
        arrival = meta.commit_arrival(commit)
        if arrival is None:
            continue
        if arrival.high <= cutoff_us and (t_done_us is None or arrival.high > t_done_us):
            low = arrival.low if arrival.low is not None else arrival.high
            chosen.append((commit, low, arrival.high))
    if not chosen:
        return None
    first = min(c.completion for c, _, _ in chosen)
    earlier = [c.completion for c in meta.commits() if c.completion < first]
    return ChangeWindow(
        start=max(earlier) if earlier else BEFORE_ALL,
        end=max(c.completion for c, _, _ in chosen),
        commit_times=frozenset(t for c, _, _ in chosen for t in (c.instant, c.completion)),
        arrival_low_us=min(low for _, low, _ in chosen),
        arrival_high_us=max(high for _, _, high in chosen),
    )
