"""The recovery condition's pieces that need no Spark: when every table is back within its
target after the hold, what the harness's settings give each run, and how the report
states the targets of the wide and recovery conditions."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from freshness_pipeline.catalog.jobs import BUNDLED_JOBS_DIR, JOBS
from freshness_pipeline.lab.experiment.harness import (
    ExperimentConfig,
    _conditions,
    recovered_s,
    variant_env,
)
from freshness_pipeline.lab.experiment.report import (
    RECOVERY_TARGETS,
    TARGETS,
    WIDE_TARGETS,
    targets_of,
)
from freshness_pipeline.lab.experiment.report_recovery import (
    HOLD_PHASES,
    backlog_cleared_s,
    hold_phase_rows,
    hold_phase_sums,
    recovery_rows,
    summed_staleness,
)
from freshness_pipeline.lab.experiment.run_files import RunSummary, job_specs
from freshness_pipeline.lab.experiment.staleness import Sample
from freshness_pipeline.lab.experiment.variants import VARIANTS

START_US = 1_000_000_000_000


def _tick(at_s: float, *staleness: float) -> list[Sample]:
    at_us = START_US + int(at_s * 1e6)
    return [Sample(at_us, f"t{i}", None, s, 0.0) for i, s in enumerate(staleness)]


def test_recovered_is_the_first_instant_after_the_hold_with_every_table_within_target():
    samples = [
        *_tick(50, 10, 20),  # within the target, but before the hold ended
        *_tick(100, 400, 20),
        *_tick(130, 290, 310),  # one table still out
        *_tick(160, 290, 300),  # both within (the target is inclusive)
        *_tick(190, 500, 10),
    ]
    assert recovered_s(samples, START_US, 90.0, 300.0) == pytest.approx(70.0)
    assert recovered_s(samples, START_US, 90.0, 100.0) is None  # never within the window


def _config(tmp_path: Path, **changes) -> ExperimentConfig:
    base = dict(
        out_dir=tmp_path,
        variants=(VARIANTS["pmb"],),
        seeds=(1,),
        duration_s=600,
        rate=300.0,
        speedup=1.0,
        universe_size=300,
    )
    return ExperimentConfig(**{**base, **changes})


@pytest.mark.parametrize("hold", [(-1.0, 60.0), (60.0, 60.0), (60.0, 601.0)])
def test_a_hold_outside_the_window_is_refused(tmp_path, hold):
    with pytest.raises(ValueError, match="must lie inside"):
        _config(tmp_path, hold_s=hold)


def test_wide_and_hold_conditions_are_part_of_what_runs_must_share(tmp_path):
    plain = _conditions(_config(tmp_path))
    assert "wide_seed" not in plain and "hold_s" not in plain  # earlier runs still match
    held = _conditions(_config(tmp_path, wide_seed=1, hold_s=(60.0, 360.0)))
    assert held["wide_seed"] == 1 and held["hold_s"] == [60.0, 360.0]
    assert held["recovery_target_s"] == 300.0


def test_every_run_of_a_wide_experiment_gets_both_job_folders(tmp_path):
    jobs = f"{BUNDLED_JOBS_DIR}:{tmp_path / 'wide-seed1'}"
    config = _config(tmp_path, wide_seed=1, jobs_dirs=jobs)
    env = variant_env(config, VARIANTS["pmb"], 1, tmp_path / "run")
    assert env["FRESHNESS_JOBS"] == jobs
    assert "FRESHNESS_JOBS" not in variant_env(
        _config(tmp_path), VARIANTS["pmb"], 1, tmp_path / "run"
    )


def test_the_report_names_the_targets_of_its_condition():
    assert targets_of({}) == TARGETS
    assert targets_of({"wide_seed": 1}) == WIDE_TARGETS
    assert targets_of({"wide_seed": 1, "hold_s": [60, 360]}) == RECOVERY_TARGETS
    assert dict(WIDE_TARGETS) == {"dagster_eager": 0.60, "random": 0.80}


def test_the_report_reads_the_wide_jobs_again_from_their_seed():
    assert job_specs({}) is JOBS
    wide = job_specs({"wide_seed": 1})
    assert len(wide) == 49 and set(JOBS) <= set(wide)


def _run(variant: str, seed: int, recovered: float | None) -> RunSummary:
    return RunSummary(variant, seed, recovered_s=recovered)


def test_recovery_rows_judge_the_time_ratio_only_when_every_seed_recovered():
    config = {"hold_s": [60, 360], "recovery_target_s": 300}
    order = ["pmb", "dagster_eager"]
    runs = [_run("pmb", 1, 40), _run("pmb", 2, 60), _run("dagster_eager", 1, 100)]
    runs.append(_run("dagster_eager", 2, 100))
    lines, verdicts = recovery_rows(runs, order, config)
    assert verdicts["recovered pmb/dagster_eager"] == {"value": 0.5, "limit": 0.7, "met": True}
    assert "| pmb | 40 | 60 | 50 |" in lines
    runs[-1] = _run("dagster_eager", 2, None)
    lines, verdicts = recovery_rows(runs, order, config)
    assert verdicts == {} and any("no value" in line for line in lines)
    assert "| dagster_eager | 100 | - | - |" in lines


def _totals(*pairs: tuple[float, float]) -> list[tuple[int, float]]:
    return [(START_US + int(at_s * 1e6), total) for at_s, total in pairs]


def test_the_hold_cuts_p_into_phases_and_the_backlog_is_worked_off_at_the_level_it_began():
    totals = _totals(
        (10, 100), (59, 120), (60, 130), (299, 400), (300, 450), (419, 140), (420, 125), (599, 110)
    )
    assert list(hold_phase_sums(totals, START_US, (60.0, 300.0)).values()) == [
        220,  # before the hold
        530,  # the hold
        590,  # the first 120 s after it
        235,  # the rest
    ]
    assert list(hold_phase_sums(totals, START_US, (60.0, 300.0))) == list(HOLD_PHASES)
    # the level when the hold began is 130 (the sample at 60 s): first back at or below it
    # 120 s after the hold's end
    assert backlog_cleared_s(totals, START_US, (60.0, 300.0)) == pytest.approx(120.0)
    assert backlog_cleared_s(totals[:-2], START_US, (60.0, 300.0)) is None
    assert backlog_cleared_s(totals[3:], START_US, (60.0, 300.0)) is None  # no level before


def test_the_report_sets_each_variants_phases_beside_its_backlog(tmp_path):
    def run(variant: str, seed: int, rows: list[tuple[float, float, float]]) -> RunSummary:
        folder = tmp_path / f"seed{seed}" / variant
        folder.mkdir(parents=True)
        with gzip.open(folder / "samples.csv.gz", "wt") as handle:
            handle.write("at_us,table,watermark_us,staleness_s,floor_s\n")
            for at_s, a, b in rows:
                at_us = START_US + int(at_s * 1e6)
                handle.write(f"{at_us},t0,,{a},0\n{at_us},t1,,{b},0\n")
        return RunSummary(variant, seed, dir=folder, start_us=START_US)

    quick = [(50, 10, 10), (200, 300, 300), (320, 5, 10)]
    slow = [(50, 10, 10), (200, 300, 300), (320, 200, 200), (500, 10, 20)]
    runs = [run("pmb", 1, quick), run("pmb", 2, quick), run("random", 1, slow)]
    runs.append(run("random", 2, quick[:2]))  # never back within the window
    pair = [{"at_us": "1", "staleness_s": "2"}, {"at_us": "1", "staleness_s": "3"}]
    assert summed_staleness(pair) == [(1, 5.0)]
    lines = hold_phase_rows(runs, ["pmb", "random"], {"hold_s": [60, 300]})
    assert "| pmb | 0.0 | 0.6 | 0.0 | 0.0 | 20 |" in lines
    assert "| random | 0.0 | 0.6 | 0.2 | 0.0 | - |" in lines
