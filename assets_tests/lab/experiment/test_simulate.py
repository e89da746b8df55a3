"""The condition sweep's model: the pending-range rule, its invariants, and that it reacts
to the conditions the results page names the way the planner's arithmetic says it must."""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshness_pipeline.lab.experiment import sim_studies
from freshness_pipeline.lab.experiment import simulate as sim
from freshness_pipeline.lab.experiment.sim_conditions import (
    SINGLE_RUN_CALIBRATION,
    Conditions,
    calibrated,
)
from freshness_pipeline.lab.experiment.simulate import _Table, simulate
from freshness_pipeline.lab.experiment.variants import MODELLED
from freshness_pipeline.scheduling.units import US_PER_S


def test_pending_ranges_follow_the_unconsumed_commits():
    table = _Table()
    table.write(1 * US_PER_S, 10 * US_PER_S, {"a": 100, "b": 100})
    table.write(11 * US_PER_S, 20 * US_PER_S, {"a": 50})
    table.write(21 * US_PER_S, 30 * US_PER_S, {"c": 70})
    everything = {p.path: p for p in table.pending("t", None)}
    assert set(everything) == {"t/a@2", "t/b@1", "t/c@1"}
    assert (everything["t/a@2"].tmin_us, everything["t/a@2"].tmax_us) == (
        1 * US_PER_S,
        20 * US_PER_S,
    )
    assert everything["t/a@2"].size_bytes == 150  # the group's whole latest file
    after_first = {p.path: p for p in table.pending("t", 10 * US_PER_S)}
    assert set(after_first) == {"t/a@2", "t/c@1"}
    assert after_first["t/a@2"].tmin_us == 11 * US_PER_S
    assert table.pending("t", 30 * US_PER_S) == []


def test_a_derived_partition_starts_a_new_group_past_the_small_file_limit():
    table = _Table()
    big = sim.DERIVED_SMALL_FILE_BYTES // 2 + 1
    for second in range(1, 4):
        table.append(second * US_PER_S, second * US_PER_S + 1, {"p0": big, "p1": 10})
    assert table.sizes == {"p0.0": 2 * big, "p0.1": big, "p1.0": 30}
    # a consumer past the first two commits reads only the young group of p0
    young = {p.path for p in table.pending("t", 2 * US_PER_S + 1)}
    assert young == {"t/p0.1@1", "t/p1.0@3"}
    assert table.added_between(US_PER_S + 1, 3 * US_PER_S) == big + 10 + big + 10


def test_no_table_is_ever_fresher_than_its_raw_inputs(monkeypatch):
    """P >= P0 sample by sample: a run's cutoff never passes what ingestion committed."""
    seen = []
    real = sim.sample_tables
    monkeypatch.setattr(sim, "sample_tables", lambda *a: seen.extend(real(*a)) or seen[-6:])
    for variant in MODELLED:
        result = simulate(replace(calibrated(), duration_s=120), variant)
        assert result.runs > 0 and result.p >= result.p0
    assert seen and all(s.staleness_s >= s.floor_s for s in seen)


def test_a_variant_replays_exactly_and_random_depends_on_its_seed():
    cond = replace(calibrated(), duration_s=120)
    assert simulate(cond, "pmb", 1) == simulate(cond, "pmb", 1)
    assert len({simulate(cond, "random", s).p for s in (1, 2, 3)}) > 1


def test_a_faster_machine_leaves_less_staleness():
    slow = simulate(calibrated(), "pmb", 1)
    fast = simulate(replace(calibrated(), fixed_s=2.0, launch_s=1.0, session_s=0.5), "pmb", 1)
    assert fast.p < 0.9 * slow.p
    assert fast.p0 == slow.p0  # the floor is ingestion's alone


def test_subsets_pay_only_where_a_later_cutoff_costs_disproportionately_more():
    """Even commits and a run cost dominated by its fixed part: eta rises to the full set,
    so PMB takes every pending file (the long run's finding). Rare large bursts with a
    real per-byte cost: leaving the burst for later beats waiting for it. (One table per
    run, as published: in a chain the root's cutoff also caps every descendant's, which
    makes a subset of the root's files worth less.)"""
    even = simulate(replace(SINGLE_RUN_CALIBRATION, duration_s=600), "pmb", 1)
    assert even.subset_runs == 0
    bursty = replace(
        SINGLE_RUN_CALIBRATION,
        duration_s=600,
        burst_every=5,
        burst_factor=30.0,
        per_mib_s=10.0,
        output_ratio=0.05,
        fixed_s=1.0,
        launch_s=1.0,
        capacity=3.0,
    )
    assert simulate(bursty, "pmb", 1).subset_runs > 0
    assert simulate(bursty, "max_benefit", 1).subset_runs == 0


@pytest.mark.parametrize(
    "bad",
    [{"k": 0}, {"capacity": 0}, {"tick_s": -1}, {"burst_factor": 0}, {"work_jitter": -0.1}],
)
def test_bad_conditions_are_refused(bad):
    with pytest.raises(ValueError):
        Conditions(**bad)


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="unknown variant"):
        simulate(calibrated(), "pmb_fast")


def test_the_command_prints_one_row_per_condition(capsys, monkeypatch):
    short = replace(calibrated(), duration_s=60)
    monkeypatch.setattr(
        sim_studies, "sweep", lambda: [("short", short), ("K = 1", replace(short, k=1))]
    )
    assert sim_studies.main(["--seeds", "1", "--variants", "pmb,max_benefit,random"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| condition | P(pmb) | P(max_benefit) | P(random) |")
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| short", "| K = 1"]
    with pytest.raises(SystemExit):
        sim_studies.main(["--variants", "pmb,random"])


def test_chained_runs_commit_several_tables_each_and_pay_fewer_launches():
    cond = replace(calibrated(), duration_s=300)
    chained = simulate(cond, "pmb", 1)
    single = simulate(cond, "pmb_single", 1)
    assert chained.refreshes >= 2 * chained.runs  # a run commits several tables
    assert single.refreshes <= single.runs  # one table a run (a run may end with none)
    assert chained.runs < single.runs
    assert chained.p < single.p  # one launch per chain instead of per table


def test_the_peers_run_without_the_planner():
    cond = replace(calibrated(), duration_s=200)
    interval = simulate(cond, "interval", 1)
    # all six every 40 s: a run at 40, 80, ..., 200 s
    assert interval.runs == 200 // 40
    eager = simulate(cond, "dagster_eager", 1)
    assert eager.runs > 0 and eager.refreshes > 0
    # Dagster's in_progress ends at each asset's materialization, so eager requests an
    # aggregate again while its run is still below it: more, smaller runs than when the
    # run held its tables to the end
    held = simulate(replace(cond, eager_release=False), "dagster_eager", 1)
    assert eager.runs > held.runs


def test_the_prediction_table_names_every_variant_and_ratio(capsys):
    from freshness_pipeline.lab.experiment.sim_studies import main

    assert main(["--peers", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    assert "| calibrated: the long mode on 2 cores |" in out
    assert "pmb / dagster_eager" in out and "pmb / interval" in out


def test_the_capacity_table_has_a_row_per_capacity(capsys):
    from freshness_pipeline.lab.experiment.sim_studies import CAPACITIES, main

    assert main(["--capacity", "--seeds", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert len(rows) == 1 + len(CAPACITIES)
    assert "pmb, 1 at once" in rows[0] and "interval" in rows[0]
    # on a machine that runs one run at full speed, one run in flight beats filling K
    one = [float(c) for c in rows[1].strip("| ").split(" | ")[1:]]
    assert one[2] < one[0]
