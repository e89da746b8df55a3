"""Rebuilding a job's table: moved aside whole, refused for tables no job writes."""

from __future__ import annotations

import pytest

from freshness_pipeline import cli
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.execution.rebuild import REBUILT_FOLDER, RebuildError, move_aside


def _table(lake, name):
    hoodie = lake / name / ".hoodie"
    hoodie.mkdir(parents=True)
    (hoodie / "hoodie.properties").write_text(f"hoodie.table.name={name}\n")
    (lake / name / "2026010214").mkdir()
    (lake / name / "2026010214" / "f1.parquet").write_bytes(b"rows")


def test_a_job_table_moves_aside_whole_and_its_place_is_free(tmp_path):
    lake = tmp_path / "tables"
    _table(lake, "trade_aggr")
    settings = load_settings({"FRESHNESS_LAKEHOUSE": str(lake)})
    where = move_aside(settings, "trade_aggr", now=0)
    assert where == str(lake / REBUILT_FOLDER / "trade_aggr-19700101T000000")
    assert not (lake / "trade_aggr").exists()
    assert (
        lake / REBUILT_FOLDER / "trade_aggr-19700101T000000" / "2026010214" / "f1.parquet"
    ).read_bytes() == b"rows"


def test_tables_no_job_writes_again_are_refused(tmp_path):
    lake = tmp_path / "tables"
    _table(lake, "trade_raw")
    settings = load_settings({"FRESHNESS_LAKEHOUSE": str(lake)})
    with pytest.raises(RebuildError, match="trade_raw is not the table of a job"):
        move_aside(settings, "trade_raw")
    assert (lake / "trade_raw" / ".hoodie").exists()
    with pytest.raises(RebuildError, match="price_aggr: no table at "):
        move_aside(settings, "price_aggr")


def test_the_command_says_where_each_table_went_or_why_not(tmp_path, monkeypatch, capsys):
    lake = tmp_path / "tables"
    _table(lake, "price_aggr")
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(lake))
    assert cli.main(["rebuild", "price_aggr"]) == 0
    assert "price_aggr: moved aside to " in capsys.readouterr().out
    assert cli.main(["rebuild", "price_aggr"]) == 2
    assert "freshness rebuild: price_aggr: no table at" in capsys.readouterr().err


@pytest.mark.spark
def test_a_table_in_another_layout_is_refused_then_rebuilt_exactly(spark, lakehouse, tmp_path):
    """A table written in the thesis's layout, then declared by event hour: refused with
    both values; moved aside, its job writes it again whole, equal to the batch recompute,
    and the check passes."""
    from dataclasses import replace

    from freshness_pipeline.catalog.jobs import JOBS, JobSpec, laid_out
    from freshness_pipeline.execution.batch_oracle import batch_recompute, differences
    from freshness_pipeline.execution.check import layout_problems
    from freshness_pipeline.execution.run_config import resolve_run
    from freshness_pipeline.execution.runner import JobRunner
    from freshness_pipeline.ingestion.feeder import StreamFeeder

    feeder = StreamFeeder(spark, lakehouse, seed=4)
    feeder.land(3)
    feeder.ingest()
    runner = JobRunner(spark, lakehouse.table_uri)
    published = laid_out(JOBS, "published")["trade_aggr"]
    runner.run(published, resolve_run(published, [], None, feeder.meta))
    declared = {"trade_aggr": JOBS["trade_aggr"]}
    (problem,) = [str(p) for p in layout_problems(declared, lakehouse.lakehouse)]
    assert "has partition 'symbol_prefix', the declaration says 'event_hour'" in problem
    assert "`freshness rebuild trade_aggr`" in problem
    bucketed = JobSpec(replace(published.declaration, index="bucket", buckets=2))
    (problem,) = [str(p) for p in layout_problems({"trade_aggr": bucketed}, lakehouse.lakehouse)]
    assert "has index 'simple', the declaration says 'bucket:2'" in problem

    move_aside(lakehouse, "trade_aggr")
    feeder.land(2)
    feeder.ingest()
    spec = JOBS["trade_aggr"]
    runner.run(spec, resolve_run(spec, [], None, feeder.meta))
    assert layout_problems(declared, lakehouse.lakehouse) == []
    expected = batch_recompute(spark, lakehouse.table_uri, tmp_path / "oracle", jobs=declared)
    missing, extra, examples = differences(
        spark, expected["trade_aggr"], lakehouse.table_uri("trade_aggr")
    )
    assert (missing, extra) == (0, 0), examples


def test_only_a_table_cut_short_in_its_creation_counts_as_half_created(tmp_path):
    """The runner starts afresh a table folder with no hoodie.properties, no backup of
    it and no data file; anything else is kept, whatever the reader's error."""
    from freshness_pipeline.execution.runner import JobRunner

    runner = JobRunner(None, lambda table: str(tmp_path / table))
    assert not runner._half_created("t")  # no folder at all
    hoodie = tmp_path / "t" / ".hoodie"
    (hoodie / "timeline").mkdir(parents=True)
    assert runner._half_created("t")
    (hoodie / "hoodie.properties.backup").write_text("hoodie.table.name=t\n")
    assert not runner._half_created("t")  # Hudi restores the properties from it
    (hoodie / "hoodie.properties.backup").unlink()
    (tmp_path / "t" / "p").mkdir()
    (tmp_path / "t" / "p" / "f.parquet").write_bytes(b"")
    assert not runner._half_created("t")  # a data file: not ours to remove
