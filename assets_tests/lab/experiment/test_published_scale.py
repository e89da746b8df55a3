"""The published-conditions scenario: its parameters are METHOD 4's,
its copy-on-write packing behaves as Hudi's rewrite does, and the command prints the
comparison. Pure and fast: no window longer than a few simulated minutes."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from freshness_pipeline.lab.experiment import published_scale as pub
from freshness_pipeline.lab.experiment.published_scale import (
    CopyOnWritePacking,
    DecisionCounts,
    PackedTable,
    published_conditions,
)
from freshness_pipeline.lab.experiment.simulate import _raw_commit_bytes, _Table
from freshness_pipeline.scheduling.planner import MIB, Candidate, JobChoice
from freshness_pipeline.scheduling.units import US_PER_S


def test_the_conditions_are_the_published_ones():
    cond = published_conditions()
    assert cond.duration_s == 10_800 and cond.k == 3
    assert cond.rate_eps == pytest.approx(14_815, abs=1)
    stream = cond.rate_eps * cond.bytes_per_event * cond.duration_s
    assert stream == pytest.approx(18e9, rel=0.01)  # about 18 GB in about 3 hours
    assert cond.fixed_s == 184.0
    # 2.5 GB in at most 6 minutes: the machine's per-MiB cost the run times allow
    assert cond.fixed_s + cond.per_mib_s * 2.5e9 / MIB == pytest.approx(360, abs=1)
    # the decision table's new trade_raw files, ~0.91 MiB per 13.6 s commit
    assert _raw_commit_bytes(cond, 1, "trade_raw") / MIB == pytest.approx(0.91, abs=0.01)
    price = _raw_commit_bytes(cond, 1, "price_raw")
    assert price / MIB == pytest.approx(20.7, abs=0.3)  # the rest of the 18 GB
    assert cond.derived_small_file_bytes == 100 * MIB  # Hudi's default, not our 2 MiB
    assert isinstance(cond.raw_layout, CopyOnWritePacking)


def test_the_scenarios_vary_one_thing_each_from_the_published_conditions():
    rows = dict(pub.scenarios())
    base = published_conditions()
    labels = list(rows)
    assert len(set(labels)) == len(labels) and rows[labels[0]] == base
    estimate = rows[labels[1]].planner_cost
    assert estimate is not None
    assert (estimate.a_s, estimate.b_s_per_byte * MIB) == pytest.approx((183.6, 1.204))
    assert replace(rows[labels[1]], planner_cost=None) == base
    assert rows[labels[2]] == replace(base, per_mib_s=1.2)
    assert rows[labels[3]] == replace(base, raw_layout=None)
    assert rows[labels[4]] == replace(base, capacity=1.0)
    assert rows[labels[5]] == replace(base, raw_layout=pub.published_packing(None))


def _commits(spec: PackedTable, seed: int = 1, n: int = 400, new: int = MIB):
    layout = CopyOnWritePacking((("trade_raw", spec), ("price_raw", spec)))
    write = layout.writer("trade_raw", published_conditions(), seed)
    return [write(i, new) for i in range(1, n + 1)]


def test_packing_rewrites_a_big_group_whole_and_carries_its_older_rows_once():
    spec = PackedTable(0.5, 3, 40 * MIB, 60 * MIB)
    commits = _commits(spec)
    packs = [c for c in commits if any(g.startswith("big") for g in c.written)]
    assert 150 < len(packs) < 250  # about half of 400
    carried_by_group = Counter(g for c in commits for g in c.carried)
    assert set(carried_by_group.values()) == {1}  # a group's older rows are copied once
    for c in commits:
        ((group, written),) = c.written.items()
        assert written == (MIB if group.startswith("big") else MIB + 5_000)
        for older in c.carried.values():
            assert 40 * MIB <= older <= 60 * MIB
    # a group that outgrows the range is closed and another opens in its slot
    assert any(g.endswith(".1") for g in carried_by_group)


def test_packing_replays_for_a_seed_and_differs_across_seeds():
    spec = PackedTable(0.5, 5, 29 * MIB, 68 * MIB)
    assert _commits(spec, 1) == _commits(spec, 1)
    assert _commits(spec, 1) != _commits(spec, 2)


def _runs_of_new_files(commits) -> list[int]:
    runs, length = [], 0
    for c in commits:
        if c.carried or any(g.startswith("big") for g in c.written):
            if length:
                runs.append(length)
            length = 0
        else:
            length += 1
    return runs


def test_packing_in_runs_keeps_the_share_and_groups_the_commits():
    independent = _commits(PackedTable(0.5, 5, MIB, 2 * MIB), n=4000)
    in_runs = _commits(PackedTable(0.5, 5, MIB, 2 * MIB, new_run_commits=8), n=4000)
    for commits in (independent, in_runs):
        packs = sum(1 for c in commits if next(iter(c.written)).startswith("big"))
        assert 0.45 < packs / len(commits) < 0.55
    assert 1.7 < sum(_runs_of_new_files(independent)) / len(_runs_of_new_files(independent)) < 2.3
    assert 6.5 < sum(_runs_of_new_files(in_runs)) / len(_runs_of_new_files(in_runs)) < 9.5


def test_pack_share_zero_writes_only_new_files_and_one_only_packs():
    never = _commits(PackedTable(0.0, 2, MIB, 2 * MIB), n=50)
    assert all(not c.carried and list(c.written) == [f"c{i}"] for i, c in enumerate(never, 1))
    always = _commits(PackedTable(1.0, 2, MIB, 2 * MIB), n=50)
    assert all(next(iter(c.written)).startswith("big") for c in always)


def test_a_packed_group_is_scanned_whole_but_pending_only_for_its_new_rows():
    """The published u8 -> u9 jump: a few new rows make a reader scan a big old file."""
    table = _Table()
    table.write(1 * US_PER_S, 10 * US_PER_S, {"c1": MIB})
    table.write(11 * US_PER_S, 20 * US_PER_S, {"big0.0": MIB}, {"big0.0": 60 * MIB})
    table.write(21 * US_PER_S, 30 * US_PER_S, {"big0.0": MIB})
    pending = {p.path: p for p in table.pending("trade_raw", 10 * US_PER_S)}
    assert set(pending) == {"trade_raw/big0.0@2"}
    big = pending["trade_raw/big0.0@2"]
    assert big.size_bytes == 62 * MIB and (big.tmin_us, big.tmax_us) == (
        11 * US_PER_S,
        30 * US_PER_S,
    )
    assert table.added_between(10 * US_PER_S, 30 * US_PER_S) == 2 * MIB  # carried rows are not new


@pytest.mark.parametrize(
    "bad",
    [
        {"pack_share": 1.5},
        {"pool_groups": 0},
        {"older_min_bytes": 2, "older_max_bytes": 1},
        {"older_min_bytes": -1},
        {"new_run_commits": 0.5},
    ],
)
def test_bad_packing_is_refused(bad):
    args = {"pack_share": 0.5, "pool_groups": 1, "older_min_bytes": 0, "older_max_bytes": 1}
    with pytest.raises(ValueError):
        PackedTable(**(args | bad))


def test_packing_needs_both_raw_tables():
    with pytest.raises(ValueError, match="price_raw"):
        CopyOnWritePacking((("trade_raw", PackedTable(0.5, 1, 0, 1)),))


def _choice(job: str, picked: int, rows: tuple[Candidate, ...]) -> JobChoice:
    row = rows[picked]
    return JobChoice(
        job,
        "pmb",
        row.cutoff_us,
        tuple(f"f{i}" for i in range(row.file_count)),
        row.scan_bytes,
        row.gain_s,
        row.cost_s,
        row.eta,
        rows[-1].file_count,
        rows,
    )


def test_decision_counts_see_subsets_what_pmb_would_cut_and_the_run_after():
    # the published trade_aggr decision's u8 and full-set rows
    rows = (
        Candidate(8, 8, int(7.28 * MIB), 117, 192.40, 0.608),
        Candidate(14, 13, int(249.26 * MIB), 267, 483.73, 0.552),
    )
    counts = DecisionCounts()
    counts.record(_choice("trade_aggr", 0, rows))  # PMB's subset
    counts.record(_choice("trade_aggr", 1, rows))  # then the full set
    assert counts.runs == {"trade_aggr": 2}
    assert counts.subsets == {"trade_aggr": 1}
    assert counts.pmb_would_subset == {"trade_aggr": 2}  # PMB would cut both tables
    assert counts.subset_then_full == {"trade_aggr": 1}
    assert counts.full_mib["trade_aggr"] == [pytest.approx(249.26, abs=0.01)]
    assert counts.eta_gain["trade_aggr"] == [pytest.approx(0.608 / 0.552)]
    counts.new_run()
    counts.record(_choice("trade_aggr", 1, rows))  # a new window's first run
    assert counts.subset_then_full == {"trade_aggr": 1}


def test_the_command_prints_the_comparison(capsys):
    assert pub.main(["--seeds", "1,2", "--scenarios", "4", "--duration", "240"]) == 0
    out = capsys.readouterr().out
    assert "| published (METHOD 4, one run) | 73,875,680 |" in out
    assert "| no packing: every commit a new file (control)" in out
    assert "PMB's decisions, no packing" in out


@pytest.mark.parametrize(
    "argv", [["--seeds", "1"], ["--dt", "0.3"], ["--scenarios", "9"], ["--dt", "0"]]
)
def test_the_command_refuses_bad_arguments(argv):
    with pytest.raises(SystemExit):
        pub.main(argv)
