"""The demo check: each table's first materialization after the start,
and the verdict against 3 minutes."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster._core.test_utils import create_run_for_test

from freshness_pipeline.bench.first_materializations import (
    FirstMaterialization,
    read_firsts,
    report,
)
from freshness_pipeline.catalog.jobs import JOBS

START = 1_800_000_000.0


@pytest.mark.parametrize(
    ("latest_after_s", "verdict"),
    [(150.0, "all 6 within 180 s: met"), (181.0, "past 180 s: industry_spike: MISSED")],
)
def test_the_verdict_names_the_tables_past_the_target(latest_after_s, verdict):
    firsts = [FirstMaterialization(job, START + 20.0 * i) for i, job in enumerate(JOBS)]
    firsts[-1] = FirstMaterialization("industry_spike", START + latest_after_s, "first run")
    lines = report(START, firsts)
    assert lines[0] == "trade_aggr: 08:00:00 UTC, 0 s after the start"
    assert lines[5].endswith(
        f"{latest_after_s:.0f} s after the start, launched by aging: first run"
    )
    assert lines[-1] == verdict


def test_a_table_never_materialized_misses_the_target():
    firsts = [FirstMaterialization(job, START) for job in JOBS]
    firsts[4] = FirstMaterialization("sector_vwap", None)
    lines = report(START, firsts)
    assert "sector_vwap: never materialized" in lines
    assert lines[-1] == "past 180 s: sector_vwap: MISSED"


def test_the_first_materializations_are_read_from_the_instance():
    with dg.instance_for_test() as instance:
        assert read_firsts(instance) == ([FirstMaterialization(j, None) for j in JOBS], None)
        create_run_for_test(instance, job_name="first_launch")
        instance.report_runless_asset_event(dg.AssetMaterialization("trade_aggr"))
        first = read_firsts(instance)[0][0].at_s
        instance.report_runless_asset_event(dg.AssetMaterialization("trade_aggr"))
        firsts, earliest = read_firsts(instance)
    assert firsts[0] == FirstMaterialization("trade_aggr", first)  # the first, not the last
    assert all(f.at_s is None for f in firsts[1:])
    assert earliest is not None and earliest <= first  # the start: the earliest run
