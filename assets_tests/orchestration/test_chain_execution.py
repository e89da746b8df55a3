"""What a chained run relies on from Dagster, shown on toy assets (no Spark): the steps
of one run execute in one process in dependency order, each claims its own pool, and a
failed step stops only its own descendants: its sibling still commits."""

from __future__ import annotations

import os

import dagster as dg


def _assets(order: list[str], fail: str | None = None) -> list[dg.AssetsDefinition]:
    def make(name: str, deps: list[str]) -> dg.AssetsDefinition:
        @dg.asset(name=name, deps=[dg.AssetKey(d) for d in deps], pool=f"hudi_writer/{name}")
        def step() -> dg.MaterializeResult:
            order.append(f"{name}:{os.getpid()}")
            if name == fail:
                raise RuntimeError(f"{name} failed")
            return dg.MaterializeResult()

        return step

    # trade and price are the run's roots; features reads both; views reads features;
    # spike is a sibling of features below trade alone
    return [
        make("trade", []),
        make("price", []),
        make("features", ["trade", "price"]),
        make("views", ["features"]),
        make("spike", ["trade"]),
    ]


def _run(order: list[str], fail: str | None):
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            _assets(order, fail),
            instance=instance,
            raise_on_error=False,
            selection=["trade", "price", "features", "views", "spike"],
        )
        done = {
            e.asset_key.to_user_string()
            for e in result.get_asset_materialization_events()
            if e.asset_key is not None
        }
        return result, done


def test_the_steps_of_a_run_go_in_dependency_order_in_one_process():
    order: list[str] = []
    result, done = _run(order, None)
    assert result.success and done == {"trade", "price", "features", "views", "spike"}
    names = [entry.split(":")[0] for entry in order]
    assert names.index("features") > max(names.index("trade"), names.index("price"))
    assert names.index("views") > names.index("features")
    assert len({entry.split(":")[1] for entry in order}) == 1  # one process


def test_a_failed_step_stops_only_its_own_descendants():
    order: list[str] = []
    result, done = _run(order, fail="price")
    assert not result.success
    # price failed: features (reads it) and views (below features) never ran; trade and
    # spike, which do not read price, still committed
    assert done == {"trade", "spike"}
    assert [entry.split(":")[0] for entry in order if entry.startswith(("features", "views"))] == []


def test_chaos_sees_which_steps_of_a_run_committed():
    from freshness_pipeline.lab.reliability.chaos import _materialized_in

    order: list[str] = []
    with dg.instance_for_test() as instance:
        result = dg.materialize(
            _assets(order, "features"),
            instance=instance,
            raise_on_error=False,
            selection=["trade", "price", "features", "views", "spike"],
        )
        assert _materialized_in(instance, result.run_id) == {"trade", "price", "spike"}
