"""A run's records (experiment/run_files.py): the summary and the Dagster runs, typed, and
every record the repository keeps under docs/results still read back whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.lab.experiment.run_files import (
    RUNS_FILE,
    SUMMARY_FILE,
    DagsterRunRecord,
    RunSummary,
    load_experiment,
    read_runs,
    read_summary,
    write_runs,
)

RESULTS = PROJECT_ROOT / "docs" / "results"


def _kept(name: str) -> list[Path]:
    return sorted(RESULTS.glob(f"**/{name}"))


def test_every_kept_summary_reads_back_with_each_of_its_keys():
    paths = _kept(SUMMARY_FILE)
    assert len(paths) > 50  # the committed campaigns' runs
    for path in paths:
        written = json.loads(path.read_text())
        summary = read_summary(path.parent)
        assert summary.dir == path.parent and summary.variant == written["variant"]
        again = summary.to_json()
        # every key the file had, with its value (a key this record does not name rides
        # in `extra`); the record adds only its own defaults
        assert {k: again[k] for k in written} == written, path
        assert RunSummary.from_json(again, path.parent) == summary


def test_every_kept_run_record_reads_back_with_each_of_its_keys():
    paths = _kept(RUNS_FILE)
    assert len(paths) > 50
    records = 0
    for path in paths[:: max(1, len(paths) // 20)]:  # a spread of them: each file is large
        written = json.loads(path.read_text())
        for raw, record in zip(written, read_runs(path.parent), strict=True):
            again = record.to_json()
            for key, value in raw.items():
                if key in ("start", "end", "created") and value is not None:
                    assert again[key] == pytest.approx(float(value)), (path, key)
                else:
                    assert again[key] == value, (path, key)
            records += 1
    assert records > 100


def test_a_summary_round_trips_and_keeps_a_key_it_does_not_name(tmp_path: Path):
    summary = RunSummary(
        "pmb",
        seed=3,
        P=10.0,
        P0=2.0,
        start_us=5_000_000,
        window_s=60.0,
        jobs=("trade_aggr",),
        conditions={"hold_s": [10, 20]},
        recovered_s=None,
        extra={"written_by_a_later_harness": 1},
    )
    summary.write(tmp_path)
    back = read_summary(tmp_path)
    assert back == RunSummary(**{**summary.__dict__, "dir": tmp_path})
    assert back.window_end_s == 65.0 and back.held
    assert not RunSummary("pmb").held  # a run without a hold has no recovery time to read


def test_run_records_round_trip_and_say_their_wall_time(tmp_path: Path):
    runs = [
        DagsterRunRecord("a", "SUCCESS", start=10.0, end=14.5, assets=("trade_aggr",)),
        DagsterRunRecord("b", "FAILURE", start=11.0),  # never ended
    ]
    write_runs(tmp_path, runs)
    back = read_runs(tmp_path)
    assert back == tuple(runs)
    assert back[0].wall_s == 4.5 and back[0].succeeded
    assert back[1].wall_s is None and not back[1].succeeded


def test_a_run_record_without_its_id_or_status_is_refused():
    with pytest.raises(TypeError, match="run_id"):
        DagsterRunRecord.from_json({"status": "SUCCESS"})


def test_an_experiment_folder_without_finished_runs_says_so(tmp_path: Path):
    (tmp_path / "experiment.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="no finished runs"):
        load_experiment(tmp_path)
    (tmp_path / "seed1" / "pmb").mkdir(parents=True)
    RunSummary("pmb", seed=1).write(tmp_path / "seed1" / "pmb")
    facts, runs = load_experiment(tmp_path)
    assert facts == {} and [r.variant for r in runs] == ["pmb"]
    assert runs[0].dir == tmp_path / "seed1" / "pmb"
