"""The simulator's hooks for other scenarios: the raw layout, the trade
share, per-job output ratios, the derived small-file limit, a fixed planner cost and the
launch observer; and that commits out of arrival order are refused (the bisection over a
table's commits relies on that order)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.lab.experiment import simulate as sim
from freshness_pipeline.lab.experiment.sim_conditions import (
    Conditions,
    NewFilesPerCommit,
    RawCommitFiles,
    RawLayout,
    calibrated,
)
from freshness_pipeline.lab.experiment.simulate import _Table, simulate
from freshness_pipeline.scheduling.planner import CostModel, JobChoice
from freshness_pipeline.scheduling.units import US_PER_S

SHORT = replace(calibrated(), duration_s=120)


def test_the_default_layout_is_the_long_runs():
    write = NewFilesPerCommit().writer("trade_raw", SHORT, 1)
    files = write(7, 26_000)
    assert files.written == {f"c7-f{i}": 1_000 + SHORT.file_overhead_bytes for i in range(26)}
    assert not files.carried
    assert simulate(SHORT, "pmb", 1) == simulate(
        replace(SHORT, raw_layout=NewFilesPerCommit()), "pmb", 1
    )


def test_the_trade_share_splits_the_stream():
    cond = replace(SHORT, trade_share=0.25)
    trade = sim._raw_commit_bytes(cond, 1, "trade_raw")
    price = sim._raw_commit_bytes(cond, 1, "price_raw")
    assert price == pytest.approx(3 * trade, rel=1e-6)
    assert trade + price == pytest.approx(sim._raw_commit_bytes(SHORT, 1) * 2, rel=1e-6)


class _OneBigFile(RawLayout):
    """Every commit rewrites one group holding 50 MB of older rows."""

    def writer(self, table, cond, seed):
        first = [True]

        def commit(index: int, new_bytes: int) -> RawCommitFiles:
            carried = {"big": 50_000_000} if first[0] else {}
            first[0] = False
            return RawCommitFiles({"big": new_bytes}, carried)

        return commit


def test_a_layout_decides_what_a_reader_scans():
    seen: list[JobChoice] = []
    simulate(replace(SHORT, raw_layout=_OneBigFile()), "pmb", 1, on_launch=seen.append)
    raw_readers = [c for c in seen if c.job in ("trade_aggr", "price_aggr")]
    assert raw_readers and all(c.scan_bytes > 50_000_000 for c in raw_readers)


def test_the_observer_sees_every_launch():
    seen: list[JobChoice] = []
    result = simulate(SHORT, "max_benefit", 1, on_launch=seen.append)
    assert len(seen) == result.runs > 0
    assert sum(c.is_subset for c in seen) == result.subset_runs


def test_a_fixed_planner_cost_is_the_one_the_planner_uses():
    fixed = CostModel(a_s=123.0, b_s_per_byte=0.0)
    seen: list[JobChoice] = []
    simulate(replace(SHORT, planner_cost=fixed), "pmb", 1, on_launch=seen.append)
    assert seen and all(s.cost_s == pytest.approx(123.0) for c in seen for s in c.chain)


def test_output_ratios_and_the_small_file_limit_shape_the_derived_tables(monkeypatch):
    tables: dict[str, _Table] = {}
    real_table = sim._Table

    def spy() -> _Table:
        table = real_table()
        tables[f"t{len(tables)}"] = table
        return table

    monkeypatch.setattr(sim, "_Table", spy)
    cond = replace(
        SHORT,
        output_ratios=(("trade_aggr", 0.0),),
        derived_small_file_bytes=0,
    )
    simulate(cond, "pmb", 1)
    names = (*sim.RAW_STREAMS, *JOBS)
    by_name = dict(zip(names, tables.values(), strict=True))
    trade_aggr = by_name["trade_aggr"]
    assert trade_aggr.commits
    # nothing but the per-file overhead, and with a zero limit every commit a new group
    assert all(size == cond.file_overhead_bytes for size in trade_aggr.sizes.values())
    assert all(v == 1 for v in trade_aggr.versions.values())
    assert any(size > cond.file_overhead_bytes for size in by_name["price_aggr"].sizes.values())


@pytest.mark.parametrize(
    "bad",
    [
        {"trade_share": 0.0},
        {"trade_share": 1.0},
        {"derived_small_file_bytes": -1},
        {"output_ratios": (("no_such_job", 0.1),)},
        {"output_ratios": (("trade_aggr", -0.1),)},
    ],
)
def test_bad_hook_conditions_are_refused(bad):
    with pytest.raises(ValueError):
        Conditions(**bad)


def test_a_commit_out_of_arrival_order_is_refused():
    table = _Table()
    table.write(1 * US_PER_S, 10 * US_PER_S, {"a": 1})
    with pytest.raises(ValueError, match="after one up to"):
        table.write(1 * US_PER_S, 5 * US_PER_S, {"a": 1})
