"""The simulator under the machine's budget (scheduling/budget.py): the launch rule is the
planner's, the capacity the planner's own fit from the simulated steps, and the rule holds
runs back where the machine is saturated."""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshness_pipeline.lab.experiment import simulate as sim
from freshness_pipeline.lab.experiment.sim_conditions import Conditions, calibrated

SINGLE = replace(calibrated(), duration_s=300, chains=False, capacity=1.0)


def test_an_unknown_launch_rule_is_refused():
    with pytest.raises(ValueError, match="launch_rule"):
        Conditions(launch_rule="greedy")


def test_on_a_saturated_machine_the_budget_launches_fewer_runs():
    slots = sim.simulate(SINGLE, "pmb", 1)
    budget = sim.simulate(replace(SINGLE, launch_rule="budget"), "pmb", 1)
    assert budget.runs < slots.runs
    # replayed exactly
    assert sim.simulate(replace(SINGLE, launch_rule="budget"), "pmb", 1) == budget


def test_steps_record_the_work_beside_them_and_the_planner_fits_the_capacity(monkeypatch):
    seen = []
    original = sim._Machine.capacity

    def spy(machine):
        seen.append((machine, original(machine)))
        return seen[-1][1]

    monkeypatch.setattr(sim._Machine, "capacity", spy)
    sim.simulate(replace(SINGLE, launch_rule="budget"), "pmb", 1)
    machine, fitted = seen[-1]
    besides = [s.beside for h in machine.history.values() for s in h]
    assert max(besides) > 0.5  # steps ran beside others
    # the machine gives one run's worth of speed, and the fit finds it from the steps
    assert fitted == pytest.approx(1.0, abs=0.15)
