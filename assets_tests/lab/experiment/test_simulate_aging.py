"""Aging on the modelled machine: the simulator feeds the planner its aging clock, records
each job's longest wait and first materialization, and the command prints both ways."""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.lab.experiment import simulate_aging as aging
from freshness_pipeline.lab.experiment.sim_conditions import SINGLE_RUN_CALIBRATION, Conditions
from freshness_pipeline.lab.experiment.simulate import _Table, simulate
from freshness_pipeline.scheduling.units import US_PER_S


def test_a_tables_aging_clock_is_its_oldest_unconsumed_commit():
    table = _Table()
    for landed, (low, high) in enumerate([(1, 10), (11, 20), (21, 30)], start=1):
        table.write(low * US_PER_S, high * US_PER_S, {"a": 100})
        table.commits[-1].landed_us = landed * 100 * US_PER_S
    assert table.pending_since(None) == 100 * US_PER_S
    assert table.pending_since(10 * US_PER_S) == 200 * US_PER_S
    assert (
        table.pending_since(25 * US_PER_S) == 300 * US_PER_S
    )  # a commit partly consumed still pends
    assert table.pending_since(30 * US_PER_S) is None


def test_waits_and_first_materializations_are_recorded():
    result = simulate(replace(SINGLE_RUN_CALIBRATION, duration_s=300), "pmb", 1)
    assert result.waits is not None
    assert set(result.waits.first_commit_s) == set(JOBS)
    for job, launched in result.waits.first_launch_s.items():
        assert launched < result.waits.first_commit_s[job]
    assert all(wait >= 0 for wait in result.waits.max_wait_s.values())


@pytest.mark.parametrize("bound", [60.0, 120.0])
def test_aging_shortens_the_longest_wait_and_the_first_materializations(bound):
    """The calibrated machine, 10 minutes: with aging no job waits as long as the longest
    wait without it, and with first runs first the sector and industry tables exist
    sooner."""
    cond = replace(SINGLE_RUN_CALIBRATION, duration_s=600)
    off = simulate(cond, "pmb", 1).waits
    on = simulate(replace(cond, max_wait_s=bound, first_runs_first=True), "pmb", 1).waits
    assert off is not None and on is not None
    assert max(on.max_wait_s.values()) < max(off.max_wait_s.values())
    for job in ("sector_vwap", "industry_spike"):
        assert on.first_commit_s[job] < off.first_commit_s[job]


def test_a_slow_machine_starves_a_job_past_the_bound_only_without_aging():
    """Runs of about 3 minutes (the demo's load): without aging some job waits far past
    120 s; with the bound every wait stays within the bound plus about a run."""
    cond = replace(SINGLE_RUN_CALIBRATION, duration_s=1800, fixed_s=60.0, launch_s=20.0)
    off = simulate(cond, "pmb", 1).waits
    on = simulate(replace(cond, max_wait_s=120.0), "pmb", 1).waits
    assert off is not None and on is not None
    assert max(off.max_wait_s.values()) > 120 + 240
    assert max(on.max_wait_s.values()) <= 120 + 240


def test_a_bad_bound_is_refused():
    with pytest.raises(ValueError, match="max_wait_s must be positive"):
        Conditions(max_wait_s=0)


def test_the_command_prints_each_bound_beside_aging_off(capsys, monkeypatch):
    short = replace(SINGLE_RUN_CALIBRATION, duration_s=120)
    monkeypatch.setattr(aging, "aging_conditions", lambda: [("short", short)])
    assert aging.main(["--seeds", "1", "--bound", "60"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| condition | aging | P | P / P(off) per seed: mean (range) |")
    rows = [line.split(" | ") for line in lines[2:]]
    assert [r[1] for r in rows] == [
        "off",
        "bound 60 s",
        "first runs first",
        "bound 60 s + first runs first",
    ]
    assert rows[0][3] == "1.000 (1.000-1.000)"  # aging off against itself
    assert all(r[-1].endswith(" s |") or r[-1] == "never |" for r in rows)
    with pytest.raises(SystemExit):
        aging.main(["--bound", "0"])
