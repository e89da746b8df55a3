"""The short chaos campaign (`make chaos` runs 50 faults): one fault of every kind on a
live pipeline, then the drain, and both oracles find nothing lost and nothing doubled."""

from __future__ import annotations

import pytest

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.ops.chaos import FAULT_KINDS, ChaosConfig, report_markdown, run_chaos
from freshness_pipeline.runtime.code_version import code_version

pytestmark = pytest.mark.spark


def test_short_chaos_loses_and_doubles_nothing(tmp_path):
    config = ChaosConfig(
        faults=len(FAULT_KINDS),
        duration_s=75,
        seed=2,
        rate=200,
        universe_size=120,
        drain_timeout_s=600,
        out_dir=tmp_path,
    )
    result = run_chaos(config, load_settings())
    report = report_markdown(result, "test")
    injected = {f.kind for f in result.faults if f.injected}
    assert injected >= {"kill_spark_service", "kill_ingest", "kill_daemon", "fail_write"}, report
    assert result.drained, report
    assert {"price_raw", "trade_raw"} <= set(result.oracle), report  # raw events checked too
    assert result.rows_lost == 0 and result.rows_doubled == 0, report
    assert result.survived, report
    assert any("restarted" in e for e in result.supervisor_events), report
    # the report names the code it measured and how the sensor planned
    assert f"Code: commit `{code_version()}`; chains `planned`" in report, report
