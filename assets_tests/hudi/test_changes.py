"""Which commits' changes a run reads (hudi/changes.py), on a fake timeline: the run's
arrival range picks them, rewrites are left out, and the CDC query's completion-time range
spans the chosen commits from the completion just before them."""

from __future__ import annotations

from freshness_pipeline.hudi.changes import BEFORE_ALL, change_window, commit_window
from freshness_pipeline.hudi.metadata import ArrivalRange
from freshness_pipeline.hudi.timeline import Commit


def commit(instant: str, completion: str, operation: str = "upsert") -> Commit:
    action = "commit" if operation != "cluster" else "replacecommit"
    return Commit(instant, completion, action, operation, (), {}, {})


class FakeMeta:
    """Commits with their arrival ranges (what HudiTableMetadata.commit_arrival says)."""

    def __init__(self, *rows: tuple[Commit, ArrivalRange | None]) -> None:
        self.rows = rows
        self.table_version = 8

    def commits(self) -> list[Commit]:
        return [c for c, _ in self.rows]

    def commit_arrival(self, c: Commit) -> ArrivalRange | None:
        return dict((x.instant, r) for x, r in self.rows)[c.instant]


META = FakeMeta(
    (commit("100", "105"), ArrivalRange(None, 105, "completion_time")),
    (commit("110", "115"), ArrivalRange(None, 115, "completion_time")),
    (commit("120", "125", "compact"), ArrivalRange(None, 125, "completion_time")),
    (commit("130", "135"), ArrivalRange(None, 135, "completion_time")),
    (commit("140", "145"), ArrivalRange(None, 145, "completion_time")),
)


def test_a_first_run_reads_every_change_up_to_its_cutoff():
    window = change_window(META, None, 135)
    assert window is not None
    assert (window.start, window.end) == (BEFORE_ALL, "135")
    # the compaction rewrote rows without changing them: not among the commits kept
    assert window.commit_times == {"100", "105", "110", "115", "130", "135"}
    assert (window.arrival_low_us, window.arrival_high_us) == (105, 135)


def test_a_later_run_starts_after_the_completion_before_its_first_commit():
    window = change_window(META, 115, 145)
    assert window is not None
    assert (window.start, window.end) == ("125", "145")
    assert window.commit_times == {"130", "135", "140", "145"}


def test_no_commit_in_the_range_reads_nothing():
    assert change_window(META, 145, 200) is None
    assert change_window(META, 115, 125) is None  # only the compaction


def test_commits_ordered_by_a_declared_arrival_are_kept_by_instant():
    # arrival from a column: the second commit holds the earlier rows
    meta = FakeMeta(
        (commit("100", "105"), ArrivalRange(50, 60, "arrival_column")),
        (commit("110", "115"), ArrivalRange(10, 20, "arrival_column")),
        (commit("120", "125"), None),  # wrote no rows of its own
    )
    window = change_window(meta, 15, 30)
    assert window is not None
    assert (window.start, window.end) == ("105", "115")
    assert window.commit_times == {"110", "115"}
    assert (window.arrival_low_us, window.arrival_high_us) == (10, 20)


def test_rows_are_read_from_every_commit_whose_arrivals_meet_the_range():
    meta = FakeMeta(
        (commit("100", "105"), ArrivalRange(10, 40, "arrival_column")),
        (commit("110", "115"), ArrivalRange(45, 60, "arrival_column")),
        (commit("120", "125"), ArrivalRange(None, 125, "completion_time")),  # a log: no low
        (commit("130", "135"), ArrivalRange(70, 80, "arrival_column")),
    )
    rows = commit_window(meta, 30, 50, overlapping=True)
    assert rows is not None and rows.instants == {"100", "110", "120"}
    changes = commit_window(meta, 30, 50)
    assert changes is not None and changes.instants == {"100"}  # arrivals ending in (30, 50]


def test_before_table_version_8_the_range_is_of_instants():
    meta = FakeMeta(
        (commit("100", "20261127000000000"), ArrivalRange(None, 105, "completion_time")),
        (commit("110", "20261127000001000"), ArrivalRange(None, 115, "completion_time")),
    )
    meta.table_version = 6
    window = change_window(meta, 105, 115)
    assert window is not None and (window.start, window.end) == ("100", "110")


def test_a_clustering_since_the_start_is_flagged():
    meta = FakeMeta(
        (commit("100", "105"), ArrivalRange(None, 105, "completion_time")),
        (commit("110", "115"), ArrivalRange(None, 115, "completion_time")),
        (commit("120", "125", "cluster"), None),
    )
    window = commit_window(meta, 105, 115, overlapping=True)
    assert window is not None and window.replaced_since_start
    before = FakeMeta(*meta.rows[:2])
    window = commit_window(before, 105, 115, overlapping=True)
    assert window is not None and not window.replaced_since_start
