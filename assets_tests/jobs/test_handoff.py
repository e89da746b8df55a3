"""When a step's kept rows stand in for a Hudi read, and their lifetime in the session
(a fake session here; test_oracle.py runs them on real Spark and Hudi, locally and through
the shared service, against the batch oracle)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from freshness_pipeline.jobs.handoff import HANDOFF_PREFIX, Handoffs
from freshness_pipeline.orchestration.assets import _read_later_in_run


class FakeSpark:
    def __init__(self, fail_on: str | None = None) -> None:
        self.views: dict[str, str] = {"run_result": "rows"}
        self.cached: set[str] = set()
        self.fail_on = fail_on
        self.catalog = SimpleNamespace(
            cacheTable=self._cache, dropTempView=self._drop, listTables=lambda: []
        )

    def table(self, name: str):
        if name not in self.views:
            raise LookupError(name)
        spark = self

        class Frame:
            def createOrReplaceTempView(self, view: str) -> None:
                spark.views[view] = spark.views[name]

            def count(self) -> int:
                if spark.fail_on == "count":
                    raise RuntimeError("executor lost")
                return 3

        return Frame()

    def _cache(self, name: str) -> None:
        self.cached.add(name)

    def _drop(self, name: str) -> bool:
        self.cached.discard(name)
        return self.views.pop(name, None) is not None


def test_kept_rows_serve_only_the_exact_window_of_the_run_that_kept_them():
    spark, handoffs = FakeSpark(), Handoffs()
    assert handoffs.keep(spark, "trade_aggr", "run_result", 100, 200)
    view = f"{HANDOFF_PREFIX}trade_aggr"
    assert view in spark.cached
    assert handoffs.view_for("trade_aggr", 100, 200) == view
    # a child behind the parent's previous watermark would miss rows of earlier commits;
    # one asking past the kept cutoff would miss rows of later ones
    assert handoffs.view_for("trade_aggr", 50, 200) is None
    assert handoffs.view_for("trade_aggr", 100, 250) is None
    assert handoffs.view_for("trade_aggr", None, 200) is None
    assert handoffs.view_for("price_aggr", 100, 200) is None


def test_a_first_run_hands_on_to_a_child_that_never_ran():
    spark, handoffs = FakeSpark(), Handoffs()
    handoffs.keep(spark, "price_aggr", "run_result", None, 200)
    assert handoffs.view_for("price_aggr", None, 200) == f"{HANDOFF_PREFIX}price_aggr"
    assert handoffs.view_for("price_aggr", 0, 200) is None


def test_a_newer_run_of_the_table_replaces_the_kept_rows():
    spark, handoffs = FakeSpark(), Handoffs()
    handoffs.keep(spark, "trade_aggr", "run_result", 100, 200)
    handoffs.keep(spark, "trade_aggr", "run_result", 200, 300)
    assert handoffs.view_for("trade_aggr", 100, 200) is None
    assert handoffs.view_for("trade_aggr", 200, 300) == f"{HANDOFF_PREFIX}trade_aggr"
    assert spark.cached == {f"{HANDOFF_PREFIX}trade_aggr"}


def test_a_result_that_cannot_be_kept_costs_a_hudi_read_not_the_run():
    spark, handoffs = FakeSpark(fail_on="count"), Handoffs()
    assert handoffs.keep(spark, "trade_aggr", "run_result", 100, 200) is False
    assert handoffs.view_for("trade_aggr", 100, 200) is None
    assert "trade_aggr" not in handoffs
    assert f"{HANDOFF_PREFIX}trade_aggr" not in spark.views  # nothing left in the session


def test_release_drops_and_uncaches_every_kept_result():
    spark, handoffs = FakeSpark(), Handoffs()
    handoffs.keep(spark, "trade_aggr", "run_result", 100, 200)
    handoffs.keep(spark, "price_aggr", "run_result", 100, 200)
    handoffs.release(spark)
    assert spark.cached == set()
    assert [v for v in spark.views if v.startswith(HANDOFF_PREFIX)] == []
    assert handoffs.view_for("trade_aggr", 100, 200) is None


@pytest.mark.parametrize(
    ("selection", "readers", "keep"),
    [
        ({"trade_aggr", "market_features"}, {"market_features", "sector_vwap"}, True),
        ({"trade_aggr"}, {"market_features", "sector_vwap"}, False),
        (None, {"market_features"}, False),  # a run that names no selection
        ({"trade_aggr", "market_features"}, set(), False),  # nothing reads the table
    ],
)
def test_a_step_keeps_its_rows_only_when_the_run_also_materializes_a_reader(
    selection, readers, keep
):
    from dagster import AssetKey

    keys = None if selection is None else {AssetKey(k) for k in selection}
    context = SimpleNamespace(run=SimpleNamespace(asset_selection=keys))
    assert _read_later_in_run(context, frozenset(readers)) is keep
