"""Where a run's time goes: the phases from the runner's marks and the Hudi timeline
(run_phases.py), and the timeline's marks of a commit (hudi_metadata.instant_timing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from freshness_pipeline.execution.run_phases import (
    PHASES,
    StepTimes,
    TimelineTimes,
    as_metadata,
    dagster_phases,
    from_metadata,
    median_phases,
    runner_phases,
)
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.hudi.timeline import Commit, instant_to_us
from freshness_pipeline.scheduling.units import US_PER_S

STEP = StepTimes(
    started_us=0,
    inputs_read_us=2 * US_PER_S,
    transformed_us=3 * US_PER_S,
    write_returned_us=10 * US_PER_S,
)


def test_the_write_splits_into_four_phases_that_add_up_to_its_wall_time():
    timeline = TimelineTimes(
        requested_us=4 * US_PER_S,
        inflight_us=6 * US_PER_S,
        completed_us=8 * US_PER_S,
        clean_us=(8_500_000, 9 * US_PER_S),
    )
    phases = runner_phases(STEP, timeline)
    assert phases == {
        "read": 2.0,
        "transform": 1.0,
        "write_prepare": 1.0,
        "index_lookup": 2.0,
        "write_files": 2.0,
        "after_commit": 2.0,
        "clean": 0.5,
    }
    write = ("write_prepare", "index_lookup", "write_files", "after_commit")
    assert sum(phases[p] for p in write) == pytest.approx(7.0)


def test_a_writer_clock_ahead_of_ours_keeps_the_sum_and_the_timeline_spans():
    # The driver's clock runs 5 s ahead: requested appears after the write returned.
    skewed = TimelineTimes(
        requested_us=9 * US_PER_S, inflight_us=11 * US_PER_S, completed_us=13 * US_PER_S
    )
    phases = runner_phases(STEP, skewed)
    assert (phases["index_lookup"], phases["write_files"]) == (2.0, 2.0)  # same clock: exact
    assert phases["write_prepare"] + phases["after_commit"] == pytest.approx(3.0)
    assert min(phases.values()) >= 0


def test_without_an_inflight_mark_the_whole_span_is_writing():
    phases = runner_phases(STEP, TimelineTimes(4 * US_PER_S, None, 8 * US_PER_S))
    assert (phases["index_lookup"], phases["write_files"]) == (0.0, 4.0)
    assert "clean" not in phases


def test_without_a_timeline_the_write_is_one_phase():
    assert runner_phases(STEP, None) == {"read": 2.0, "transform": 1.0, "write": 7.0}


def test_dagster_phases_with_and_without_the_run_queue():
    queued = dagster_phases(
        created_us=0,
        enqueued_us=1 * US_PER_S,
        dequeued_us=31 * US_PER_S,
        body_started_us=35 * US_PER_S,
        planned_us=36 * US_PER_S,
        session_us=37_500_000,
    )
    assert queued == {"queue_wait": 30.0, "launch": 4.0, "plan": 1.0, "session": 1.5}
    in_process = dagster_phases(0, None, None, 2 * US_PER_S, 3 * US_PER_S, None)
    assert in_process == {"launch": 2.0, "plan": 1.0}  # no queue: no queue_wait measured


def test_metadata_round_trip_and_medians_per_phase():
    runs = [
        {"read": 1.0, "write_files": 4.0},
        {"read": 3.0, "write_files": 2.0, "clean": 1.0},
        {"read": 2.0, "write_files": 3.0},
    ]
    stored = [as_metadata(r) | {"duration_s": 9.0, "spark": "x"} for r in runs]
    assert [from_metadata(m) for m in stored] == runs
    medians = median_phases(from_metadata(m) for m in stored)
    # a phase a run did not have is not a zero: clean's median is over the one that had it
    assert medians == {"read": 2.0, "write_files": 3.0, "clean": 1.0}
    assert list(medians) == ["read", "write_files", "clean"]  # pipeline order
    assert "queue_wait" in PHASES


def test_instant_timing_reads_the_timeline(tmp_path: Path):
    table = tmp_path / "trade_aggr"
    timeline = table / ".hoodie" / "timeline"
    timeline.mkdir(parents=True)
    (table / ".hoodie" / "hoodie.properties").write_text(
        "hoodie.table.name=trade_aggr\nhoodie.table.version=9\n"
        "hoodie.timeline.layout.version=2\nhoodie.table.timeline.timezone=UTC\n"
    )
    instant, completion = "20261123213255466", "20261123213306538"
    for name in (
        f"{instant}.commit.requested",
        f"{instant}.inflight",
        f"{instant}_{completion}.commit",
        "20261123213300000_20261123213301000.clean",  # before the commit completed: not its
        "20261123213307000_20261123213308250.clean",
        "20261123213309000_20261123213309500.clean",  # a later one
    ):
        (timeline / name).write_text("{}")
    inflight_us = instant_to_us("20261123213301252")
    os.utime(timeline / f"{instant}.inflight", ns=(inflight_us * 1000, inflight_us * 1000))
    meta = HudiTableMetadata(str(table))
    commit = Commit(instant, completion, "commit", "upsert", (), {}, {})
    timing = meta.instant_timing(commit)
    assert timing.requested_us == instant_to_us(instant)
    assert timing.inflight_us == inflight_us
    assert timing.completed_us == instant_to_us(completion)
    assert timing.clean_us == (
        instant_to_us("20261123213307000"),
        instant_to_us("20261123213308250"),
    )
