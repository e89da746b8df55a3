"""The demo check: each table's first materialization after the start,
and the verdict against 3 minutes."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.test_utils import create_run_for_test

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.lab.bench.first_materializations import (
    FirstMaterialization,
    read_firsts,
    report,
)

START = 1_800_000_000.0


@pytest.mark.parametrize(("latest_after_s", "met"), [(150.0, True), (181.0, False)])
def test_the_verdict_names_the_tables_past_the_target(latest_after_s, met):
    jobs = list(JOBS)
    firsts = [FirstMaterialization(job, START + 20.0 * i) for i, job in enumerate(jobs)]
    firsts[-1] = FirstMaterialization(jobs[-1], START + latest_after_s, "first run")
    lines = report(START, firsts)
    assert lines[0] == f"{jobs[0]}: 08:00:00 UTC, 0 s after the start"
    assert lines[5].endswith(
        f"{latest_after_s:.0f} s after the start, launched by aging: first run"
    )
    assert lines[-1] == ("all 6 within 180 s: met" if met else f"past 180 s: {jobs[-1]}: MISSED")


def test_a_table_never_materialized_misses_the_target():
    firsts = [FirstMaterialization(job, START if job != "sector_vwap" else None) for job in JOBS]
    lines = report(START, firsts)
    assert "sector_vwap: never materialized" in lines
    assert lines[-1] == "past 180 s: sector_vwap: MISSED"


def test_the_first_materializations_are_read_from_the_instance():
    with dg.instance_for_test() as instance:
        assert read_firsts(instance) == ([FirstMaterialization(j, None) for j in JOBS], None)
        create_run_for_test(instance, job_name="first_launch")
        instance.report_runless_asset_event(dg.AssetMaterialization("trade_aggr"))
        first = read_firsts(instance)[0][list(JOBS).index("trade_aggr")].at_s
        instance.report_runless_asset_event(dg.AssetMaterialization("trade_aggr"))
        firsts, earliest = read_firsts(instance)
    trade = list(JOBS).index("trade_aggr")
    assert firsts[trade] == FirstMaterialization("trade_aggr", first)  # the first, not the last
    assert all(f.at_s is None for i, f in enumerate(firsts) if i != trade)
    assert earliest is not None and earliest <= first  # the start: the earliest run
