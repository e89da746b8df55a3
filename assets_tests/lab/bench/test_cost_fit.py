"""The cost model against a campaign's steps (bench/cost_fit.py): a campaign folder of
recorded runs replayed under both level rules, on a made-up campaign and on the wide
recovery campaign's runs committed under docs/results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.lab.bench import cost_fit
from freshness_pipeline.lab.experiment.run_files import (
    MATERIALIZED_AT,
    DagsterRunRecord,
    write_runs,
)


def _runs(steps: list[tuple[int, float]], job: str = "trades_m") -> list[DagsterRunRecord]:
    return [
        DagsterRunRecord(
            run_id=f"run{i}",
            status="SUCCESS",
            metadata_by_asset={
                job: {
                    "duration_s": seconds,
                    "bytes_read": files * 10_000,
                    "files_read": files,
                    MATERIALIZED_AT: 1000.0 + i,
                }
            },
        )
        for i, (files, seconds) in enumerate(steps)
    ]


def _campaign(
    root: Path, calibration: list[DagsterRunRecord], variants: dict[str, list[DagsterRunRecord]]
) -> Path:
    experiment = {
        "config": {
            "variants": [
                {"name": "pmb", "automation": "freshness_sensor"},
                {"name": "interval", "automation": "interval"},
            ]
        }
    }
    (root / "experiment.json").write_text(json.dumps(experiment))
    (root / "calibration/seed98/pmb").mkdir(parents=True)
    write_runs(root / "calibration/seed98/pmb", calibration)
    for variant, runs in variants.items():
        (root / "seed1" / variant).mkdir(parents=True)
        write_runs(root / "seed1" / variant, runs)
    return root


def test_backlog_steps_cheaper_than_the_slopes_are_met_by_the_scaled_rule_only(tmp_path):
    # A backlog of 900 files took 12 s (0.05 s/file alone is 45 s); then steps alike.
    calibration = _runs([(900, 12.0)])
    measured = _runs([(880, 11.0), (860, 12.5), (40, 4.0)])
    peer = _runs([(10, 900.0)])  # the interval's steps are not the sensor's to plan
    root = _campaign(tmp_path, calibration, {"pmb": measured, "interval": peer})
    estimates = cost_fit.campaign_estimates(root)
    assert {e.rule for e in estimates} == set(cost_fit.RULES)
    assert all(e.measured_s != 900.0 for e in estimates)
    by_rule = {
        rule: [e.estimate_s / e.measured_s for e in estimates if e.rule == rule]
        for rule in cost_fit.RULES
    }
    assert len(by_rule["scaled"]) == len(by_rule["clamped"]) == 3
    # clamped: 0 + 0.05 s/file ~ 44 s for an 11 s step; scaled meets the backlog's size
    assert by_rule["clamped"][0] == pytest.approx(44.0 / 11.0, rel=0.02)
    assert by_rule["scaled"][0] == pytest.approx(1.0, abs=0.15)
    lines = cost_fit.summary_lines(estimates)
    assert any(line.startswith("scaled   all    steps     3") for line in lines), lines


def test_the_scaled_rule_is_nearer_the_wide_recovery_campaigns_steps(capsys):
    """The committed runs of `make experiment-recovery-wide` (calibrated on seed 98):
    the rule the sensor plans on must stay nearer what the steps took than the old one."""
    root = PROJECT_ROOT / "docs/results/recovery-wide/runs"
    estimates = cost_fit.campaign_estimates(root)
    error = {
        rule: sorted(abs(e.estimate_s / e.measured_s - 1) for e in estimates if e.rule == rule)
        for rule in cost_fit.RULES
    }
    assert len(error["scaled"]) > 900
    median = {rule: values[len(values) // 2] for rule, values in error.items()}
    assert median["scaled"] < median["clamped"] - 0.05, median
    cost_fit.main([str(root)])
    assert "median |E-d|/d" in capsys.readouterr().out


def test_a_folder_that_is_not_a_campaign_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="no experiment.json"):
        cost_fit.main([str(tmp_path)])
    (tmp_path / "experiment.json").write_text(json.dumps({"config": {"variants": []}}))
    with pytest.raises(SystemExit, match="no calibration"):
        cost_fit.main([str(tmp_path)])
