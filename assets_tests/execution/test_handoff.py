"""When a step's kept rows stand in for a Hudi read, and their lifetime in the session
(a fake session here; test_oracle.py runs them on real Spark and Hudi, locally and through
the shared service, against the batch oracle)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from freshness_pipeline.execution.handoff import HANDOFF_PREFIX, MAX_KEPT_ROWS, Handoffs
from freshness_pipeline.orchestration.assets import _read_later_in_run


class FakeSpark:
    def __init__(self, fail_on: str | None = None) -> None:
        self.views: dict[str, object] = {"run_result": ["row"]}
        self.fail_on = fail_on
        self.catalog = SimpleNamespace(dropTempView=self._drop, listTables=lambda: [])

    def table(self, name: str):
        if name not in self.views:
            raise LookupError(name)
        return self._frame(self.views[name])

    def createDataFrame(self, rows, schema):  # noqa: N802 (Spark's name)
        return self._frame(list(rows))

    def _frame(self, rows):
        spark = self

        class Frame:
            schema = "the result's schema"

            def collect(self):
                if spark.fail_on == "collect":
                    raise RuntimeError("executor lost")
                return rows

            def createOrReplaceTempView(self, view: str) -> None:  # noqa: N802
                spark.views[view] = rows

        return Frame()

    def _drop(self, name: str) -> bool:
        return self.views.pop(name, None) is not None


def test_kept_rows_serve_only_the_exact_window_of_the_run_that_kept_them():
    spark, handoffs = FakeSpark(), Handoffs()
    assert handoffs.keep(spark, "trade_aggr", "run_result", 100, 200, 10)
    view = f"{HANDOFF_PREFIX}trade_aggr"
    assert spark.views[view] == ["row"]  # the rows themselves
    assert handoffs.view_for("trade_aggr", 100, 200) == view
    # a child behind the parent's previous watermark would miss rows of earlier commits;
    # one asking past the kept cutoff would miss rows of later ones
    assert handoffs.view_for("trade_aggr", 50, 200) is None
    assert handoffs.view_for("trade_aggr", 100, 250) is None
    assert handoffs.view_for("trade_aggr", None, 200) is None
    assert handoffs.view_for("price_aggr", 100, 200) is None


def test_a_first_run_hands_on_to_a_child_that_never_ran():
    spark, handoffs = FakeSpark(), Handoffs()
    handoffs.keep(spark, "price_aggr", "run_result", None, 200, 10)
    assert handoffs.view_for("price_aggr", None, 200) == f"{HANDOFF_PREFIX}price_aggr"
    assert handoffs.view_for("price_aggr", 0, 200) is None


def test_a_newer_run_of_the_table_replaces_the_kept_rows():
    spark, handoffs = FakeSpark(), Handoffs()
    handoffs.keep(spark, "trade_aggr", "run_result", 100, 200, 10)
    handoffs.keep(spark, "trade_aggr", "run_result", 200, 300, 10)
    assert handoffs.view_for("trade_aggr", 100, 200) is None
    assert handoffs.view_for("trade_aggr", 200, 300) == f"{HANDOFF_PREFIX}trade_aggr"
    assert [v for v in spark.views if v.startswith(HANDOFF_PREFIX)] == [
        f"{HANDOFF_PREFIX}trade_aggr"
    ]


def test_a_result_that_cannot_be_kept_costs_a_hudi_read_not_the_run():
    spark, handoffs = FakeSpark(fail_on="collect"), Handoffs()
    assert handoffs.keep(spark, "trade_aggr", "run_result", 100, 200, 10) is False
    assert handoffs.view_for("trade_aggr", 100, 200) is None
    assert "trade_aggr" not in handoffs
    assert f"{HANDOFF_PREFIX}trade_aggr" not in spark.views  # nothing left in the session


def test_a_result_too_big_to_pass_through_the_client_is_not_kept():
    spark, handoffs = FakeSpark(), Handoffs()
    assert handoffs.keep(spark, "trade_aggr", "run_result", 100, 200, MAX_KEPT_ROWS + 1) is False
    assert handoffs.view_for("trade_aggr", 100, 200) is None


def test_release_drops_every_kept_result():
    spark, handoffs = FakeSpark(), Handoffs()
    handoffs.keep(spark, "trade_aggr", "run_result", 100, 200, 10)
    handoffs.keep(spark, "price_aggr", "run_result", 100, 200, 10)
    handoffs.release(spark)
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
