"""The experiment's warm start: a cost prior fitted from a calibration run's records."""

from __future__ import annotations

import pytest

from freshness_pipeline.experiment.calibration import cost_prior_from_runs
from freshness_pipeline.experiment.report import MATERIALIZED_AT, _cost_prior_row


def _run(i: int, job: str, files: int, seconds: float, launch: bool = True) -> dict:
    meta = {
        "duration_s": seconds,
        "bytes_read": files * 1000,
        "files_read": files,
        MATERIALIZED_AT: 1000.0 + i,
    }
    if launch:
        meta |= {"phase_launch_s": 1.0 + i % 2, "phase_plan_s": 0.2, "phase_session_s": 0.8}
    return {"metadata_by_asset": {job: meta}}


def test_the_prior_is_each_jobs_fit_and_the_median_run_cost():
    # trade_aggr: 2 s + 0.1 s a file, exactly; price_aggr never ran
    runs = [_run(i, "trade_aggr", files, 2.0 + 0.1 * files) for i, files in enumerate(range(1, 9))]
    runs.append(_run(9, "market_features", 3, 5.0, launch=False))  # a chained step: no L
    prior = cost_prior_from_runs(runs, "a test run")
    model = prior.model("trade_aggr")
    assert model.estimate(10_000, 10) == pytest.approx(3.0, abs=0.05)
    assert prior.model("price_aggr").a_s == 20.0  # the built-in guess: no runs
    assert prior.run_cost_s == pytest.approx(2.5)  # launch 1 or 2 + 0.2 + 0.8
    assert prior.source.startswith("a test run; trade_aggr fit on 8 steps")
    assert "price_aggr prior on 0 steps" in prior.source


def test_the_report_says_where_the_coefficients_started(tmp_path):
    assert "built-in guess" in _cost_prior_row(tmp_path)
    prior = cost_prior_from_runs([_run(i, "trade_aggr", i + 1, 3.0) for i in range(6)], "cal")
    import json

    (tmp_path / "cost_prior.json").write_text(json.dumps(prior.to_json()))
    row = _cost_prior_row(tmp_path)
    assert "every variant's sensor started from the same coefficients" in row
    assert "trade_aggr 3.0 s" in row and "L = " in row
