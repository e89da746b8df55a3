"""The experiment's warm start: a cost prior fitted from a calibration run's records."""

from __future__ import annotations

import dataclasses

import pytest

from freshness_pipeline.lab.experiment.calibration import cost_prior_from_runs
from freshness_pipeline.lab.experiment.report import _cost_prior_row
from freshness_pipeline.lab.experiment.run_files import (
    MATERIALIZED_AT,
    DagsterRunRecord,
    RunSummary,
    write_runs,
)
from freshness_pipeline.lab.experiment.variants import variant_named


def _run(i: int, job: str, files: int, seconds: float, launch: bool = True) -> DagsterRunRecord:
    meta = {
        "duration_s": seconds,
        "bytes_read": files * 1000,
        "files_read": files,
        MATERIALIZED_AT: 1000.0 + i,
    }
    if launch:
        meta |= {"phase_launch_s": 1.0 + i % 2, "phase_plan_s": 0.2, "phase_session_s": 0.8}
    return DagsterRunRecord(f"run{i}", "SUCCESS", metadata_by_asset={job: meta})


def test_the_prior_is_each_jobs_fit_and_the_median_run_cost():
    # trade_aggr: 2 s + 0.1 s a file, exactly; price_aggr never ran
    runs = [_run(i, "trade_aggr", files, 2.0 + 0.1 * files) for i, files in enumerate(range(1, 9))]
    runs.append(_run(9, "market_features", 3, 5.0, launch=False))  # a chained step: no L
    prior = cost_prior_from_runs(runs, "a test run")
    model = prior.model("trade_aggr")
    assert model.estimate(10_000, 10) == pytest.approx(3.0, abs=0.05)
    assert prior.model("price_aggr").a_s == 20.0  # the built-in guess: no runs
    assert prior.run_cost_s == pytest.approx(2.5)  # launch 1 or 2 + 0.2 + 0.8
    assert (
        prior.source.startswith("a test run; ") and "; trade_aggr fit on 8 steps;" in prior.source
    )
    assert "price_aggr prior on 0 steps" in prior.source


def test_the_report_says_where_the_coefficients_started(tmp_path):
    assert "built-in guess" in _cost_prior_row(tmp_path)
    prior = cost_prior_from_runs([_run(i, "trade_aggr", i + 1, 3.0) for i in range(6)], "cal")
    import json

    (tmp_path / "cost_prior.json").write_text(json.dumps(prior.to_json()))
    row = _cost_prior_row(tmp_path)
    assert "every variant's sensor started from the same coefficients" in row
    assert "trade_aggr 3.0 s" in row and "L = " in row


def test_calibrate_runs_pmb_on_its_own_seed_and_folder_and_keeps_a_prior_of_this_commit(
    tmp_path, monkeypatch
):
    """The harness's wiring, with the stack replaced by a recorded runs.json (the real
    run is the long mode's; the fit itself is tested above)."""
    import json

    from freshness_pipeline.config.settings import load_settings
    from freshness_pipeline.lab.experiment import harness
    from freshness_pipeline.lab.experiment.calibration import CALIBRATION_SEED
    from freshness_pipeline.lab.experiment.progress import Progress

    calls = []

    def fake_run_variant(config, variant, seed, stream, settings, progress=None):
        calls.append((config.out_dir, variant.name, seed, config.warm_cost))
        run_dir = config.out_dir / f"seed{seed}" / variant.name
        run_dir.mkdir(parents=True)
        runs = [_run(i, "trade_aggr", i + 1, 2.0) for i in range(6)]
        write_runs(run_dir, runs)
        # the summary names the run's jobs
        return RunSummary(variant.name, seed, dir=run_dir, jobs=("trade_aggr", "price_aggr"))

    monkeypatch.setattr(harness, "run_variant", fake_run_variant)
    monkeypatch.setattr(harness, "record", lambda config, seed: tmp_path / "stream")
    monkeypatch.setattr(harness, "code_version", lambda: "abc1234")
    config = harness.ExperimentConfig(
        out_dir=tmp_path / "raw",
        variants=(variant_named("pmb"),),
        seeds=(1,),
        duration_s=60,
        rate=300.0,
        speedup=1.0,
        universe_size=300,
        warm_cost=True,
        resume=True,
    )
    config.out_dir.mkdir()
    progress = Progress(2, 60.0)
    path = harness.calibrate(config, load_settings({}), progress)
    assert calls == [(tmp_path / "raw" / "calibration", "pmb", CALIBRATION_SEED, False)]
    prior = json.loads(path.read_text())
    assert path == tmp_path / "raw" / "cost_prior.json" and prior["commit"] == "abc1234"
    assert prior["jobs"]["trade_aggr"]["a_s"] == pytest.approx(2.0, abs=0.1)
    assert set(prior["jobs"]) == {"trade_aggr", "price_aggr"}  # the run's jobs, no other
    # resumed on the same commit: kept; on another: calibrated again
    harness.calibrate(config, load_settings({}), progress)
    assert len(calls) == 1
    monkeypatch.setattr(harness, "code_version", lambda: "def5678")
    import shutil

    shutil.rmtree(tmp_path / "raw" / "calibration")
    harness.calibrate(config, load_settings({}), progress)
    assert len(calls) == 2
    # and every variant's stack then starts from it
    env = harness.variant_env(
        dataclasses.replace(config, cost_prior=path),
        variant_named("pmb"),
        1,
        tmp_path,
    )
    assert env["FRESHNESS_COST_PRIOR"] == str(path)
