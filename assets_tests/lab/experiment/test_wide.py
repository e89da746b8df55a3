"""The wide lakehouse from a seed, and the simulator over it and through an outage."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.scheduler_settings import DEFAULT_MAX_WAIT_S
from freshness_pipeline.lab.experiment.sim_conditions import (
    Conditions,
    SkewedFilesPerCommit,
    calibrated,
)
from freshness_pipeline.lab.experiment.simulate import simulate
from freshness_pipeline.lab.experiment.simulate_wide import (
    HOLD_S,
    WINDOW_S,
    Outcome,
    markdown,
    recovery,
    wide_conditions,
    work_factor,
)
from freshness_pipeline.lab.experiment.wide import (
    depth,
    describe,
    wide_declarations,
    wide_jobs,
    write_wide,
)

RAW = frozenset(RAW_TABLES)


def test_a_seed_makes_the_same_lakehouse_and_another_seed_another():
    assert wide_declarations(1) == wide_declarations(1)
    assert wide_declarations(1) != wide_declarations(2)


def test_the_wide_lakehouse_loads_beside_the_bundled_jobs(tmp_path: Path):
    write_wide(tmp_path, 1)
    jobs = wide_jobs(tmp_path)
    assert set(JOBS) < set(jobs)
    assert len(jobs) - len(JOBS) >= 30
    depths = depth(jobs, RAW)
    assert min(depths.values()) == 1 and max(depths.values()) >= 5
    names = list(jobs)
    for name, spec in jobs.items():  # dependency order: every input before its reader
        assert all(names.index(t) < names.index(name) for t in spec.inputs if t in jobs)
    table = describe(jobs, RAW)
    assert table.count("\n") == len(jobs) + 1 and "| symbol_window_" in table


def test_writing_a_seed_replaces_the_folders_declarations(tmp_path: Path):
    write_wide(tmp_path, 1)
    (tmp_path / "notes.txt").write_text("kept")
    write_wide(tmp_path, 2)
    assert sorted(p.name for p in tmp_path.glob("*.sql")) == sorted(wide_declarations(2))
    assert (tmp_path / "notes.txt").read_text() == "kept"


def test_steps_differ_in_cost_by_an_order_of_magnitude():
    jobs = wide_conditions(1).job_specs
    factors = [work_factor(spec) for spec in jobs.values()]
    assert max(factors) / min(factors) >= 10
    assert all(work_factor(JOBS[name]) == 1.0 for name in JOBS)


def test_the_simulator_runs_every_variant_over_the_wide_lakehouse():
    cond = replace(wide_conditions(1), duration_s=120)
    for variant in ("pmb", "dagster_eager", "interval"):
        result = simulate(cond, variant, 1)
        assert result.p > result.p0 > 0, variant
        assert result.refreshes > 0, variant


def test_while_held_nothing_is_launched_and_afterwards_the_tables_recover():
    six = replace(calibrated(), duration_s=90, hold=(0.0, 100.0))
    for variant in ("pmb", "dagster_eager", "interval"):
        assert simulate(six, variant, 1).runs == 0, variant
    outage = replace(calibrated(), duration_s=600, hold=(10.0, 130.0), recovery_target_s=120)
    result = simulate(outage, "pmb", 1)
    assert result.runs > 0
    assert result.recovered_s is not None and 0 < result.recovered_s < 470
    assert simulate(calibrated(), "pmb", 1).recovered_s is None  # no hold, no recovery


def test_the_recovery_condition_is_bursty_skewed_and_held_as_the_real_campaign():
    cond = recovery(calibrated(), 120.0)
    assert cond.hold == HOLD_S and cond.burst_every > 0 and cond.recovery_target_s == 120.0
    assert isinstance(cond.raw_layout, SkewedFilesPerCommit)
    # the Makefile's campaigns: the same window and hold, the sensor's own defaults
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    assert f"--duration {WINDOW_S}" in makefile
    assert f"--hold {HOLD_S[0]:g},{HOLD_S[1]:g}" in makefile
    wide = wide_conditions(1)
    assert (wide.max_wait_s, wide.first_runs_first) == (DEFAULT_MAX_WAIT_S, True)


def test_skewed_commits_keep_their_bytes_and_put_most_in_few_files():
    cond = Conditions(file_overhead_bytes=0)
    files = SkewedFilesPerCommit(1.2).writer("trade_raw", cond, 1)(1, 26_000_000).written
    sizes = list(files.values())
    assert abs(sum(sizes) - 26_000_000) <= len(sizes)
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 10 * sizes[-1]


def test_bad_per_job_settings_and_holds_are_refused():
    with pytest.raises(ValueError, match="work_factors: unknown jobs"):
        Conditions(work_factors=(("no_such_job", 2.0),))
    with pytest.raises(ValueError, match="hold must be"):
        Conditions(hold=(60.0, 30.0))


def test_the_predictions_table_names_each_variant_and_pair():
    cond = replace(calibrated(), duration_s=60, hold=(0.0, 30.0), recovery_target_s=1e9)
    outcome = Outcome(
        "short", {v: [simulate(cond, v, s) for s in (1, 2)] for v in ("pmb", "random")}
    )
    text = markdown([outcome], ("pmb", "random"))
    assert "| short |" in text and "pmb / random" in text
    assert "recovered pmb (s)" in text


def test_a_wide_chains_steps_side_by_side_leave_less_staleness_where_the_machine_has_room():
    # Steps of fixed cost; the spine's views go three at a time, each paying its process.
    base = replace(wide_conditions(1), duration_s=600, work_jitter=0.0)
    at_once = dict(steps_at_once=3, step_overhead_s=1.0, parallel_start_s=2.0)
    roomy = replace(base, capacity=3.0)
    assert simulate(replace(roomy, **at_once), "pmb", 1).p < 0.9 * simulate(roomy, "pmb", 1).p
    # where the runs in flight already share one run's speed, the processes only cost
    assert simulate(replace(base, **at_once), "pmb", 1).p > simulate(base, "pmb", 1).p
    # the peers' runs keep their in-process executor unless told otherwise
    short = replace(roomy, duration_s=200)
    for peer in ("dagster_eager", "interval"):
        assert simulate(replace(short, **at_once), peer, 1).p == simulate(short, peer, 1).p
    with_peers = replace(short, steps_at_once_peers=True, **at_once)
    assert simulate(with_peers, "interval", 1).p != simulate(short, "interval", 1).p
