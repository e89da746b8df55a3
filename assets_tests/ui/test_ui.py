"""The product in a real browser, no Spark: Dagster's webserver over the project's
definitions (fresh SQLite DAGSTER_HOME) in headless Chromium. The asset graph draws every
asset and every edge the definitions declare, each job asset's page shows its column
schema, its column lineage table and its freshness policy, and the freshness sensor's tick
history shows a real tick (evaluated by Dagster's sensor daemon code, here over an empty
lakehouse) with every job's decision in words. Screenshots go to the session's
`ui-screenshots` folder (its path is printed); docs/img holds a few of them."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest

from assets_tests.ui.browser import Page, UiCheckFailed
from assets_tests.ui.dagster_pages import (
    asset_page_expectation,
    check_asset_checks,
    check_asset_graph,
    check_asset_page,
    check_sensor_ticks,
    definitions_graph,
    job_decision_line,
    sensor_ticks,
)
from assets_tests.ui.webserver import WORKSPACE, DagsterWebserver
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.definitions import build_definitions
from freshness_pipeline.execution.sampled_check import ExactnessResult, KeyVerdict
from freshness_pipeline.orchestration.asset_checks import EXACTNESS_CHECK, exactness_metadata

pytestmark = pytest.mark.ui


@pytest.fixture(scope="module")
def definitions(ui_settings: Settings) -> dg.Definitions:
    """The definitions the webserver's code server loads (same settings)."""
    return build_definitions(ui_settings)


def test_asset_graph_shows_every_asset_and_edge(
    page: Page, definitions: dg.Definitions, shots_dir: Path
):
    assets, edges = definitions_graph(definitions)
    assert set(JOBS) <= assets and {"price_raw", "trade_raw"} <= assets
    assert len(edges) >= len(JOBS)  # every job reads at least one table
    shot = check_asset_graph(page, assets, edges)
    print(f"asset graph: {shot}")


@pytest.mark.parametrize("asset", list(JOBS))
def test_asset_page_shows_schema_lineage_and_freshness_policy(
    page: Page, definitions: dg.Definitions, asset: str
):
    expected = asset_page_expectation(definitions, asset)
    assert expected.columns and expected.lineage_rows, f"{asset}: nothing to look for"
    assert expected.policy[0].startswith("Fails if more than 10 minutes")  # UI_SETTINGS
    shot = check_asset_page(page, expected)
    print(f"{asset} page: {shot}")


def test_a_graph_check_that_does_not_find_an_edge_names_it_and_saves_a_screenshot(
    page: Page, definitions: dg.Definitions
):
    assets, edges = definitions_graph(definitions)
    absent = ("company_master", "price_aggr")  # no such dependency
    assert absent not in edges
    with pytest.raises(UiCheckFailed) as failure:
        check_asset_graph(page, assets, edges | {absent}, timeout_s=10)
    message = str(failure.value)
    assert "edges not drawn: company_master -> price_aggr" in message
    shot = Path(message.rsplit("screenshot: ", 1)[1])
    assert shot.name == "FAILED-asset-graph.png" and shot.stat().st_size > 10_000
    shot.rename(shot.with_name("EXPECTED-FAILURE-asset-graph.png"))  # not a real failure


@pytest.fixture(scope="module")
def sensor_tick(webserver: DagsterWebserver, ui_env: dict[str, str]) -> list:
    """One real tick of the freshness sensor in the webserver's instance: Dagster's sensor
    daemon iteration, run once in this process (its code server loads the definitions with
    the test's settings). The lakehouse is empty, so every job waits for upstream data;
    nothing launches and no Spark is needed."""
    import logging

    from dagster._core.test_utils import create_test_daemon_workspace_context
    from dagster._core.workspace.load_target import WorkspaceFileTarget
    from dagster._daemon.sensor import execute_sensor_iteration

    with pytest.MonkeyPatch.context() as env:
        for name in ("DAGSTER_HOME", "PYTHONPATH"):
            env.setenv(name, webserver.env[name])
        for name, value in ui_env.items():
            if name.startswith("FRESHNESS_"):
                env.setenv(name, value)
        env.delenv("FRESHNESS_SPARK_REMOTE", raising=False)
        with (
            dg.DagsterInstance.from_config(str(webserver.dagster_home)) as instance,
            create_test_daemon_workspace_context(
                WorkspaceFileTarget([str(WORKSPACE)]), instance
            ) as workspace,
        ):
            for _ in execute_sensor_iteration(workspace, logging.getLogger(__name__), None, None):
                pass
            return sensor_ticks(instance, "freshness_sensor")


def test_sensor_tick_history_shows_every_jobs_reason(page: Page, sensor_tick: list):
    assert len(sensor_tick) == 1 and sensor_tick[0].cursor, sensor_tick
    assert not sensor_tick[0].run_ids  # an empty lakehouse: nothing to launch
    shot = check_sensor_ticks(
        page, "freshness_sensor", [sensor_tick[0].cursor], [job_decision_line(j) for j in JOBS]
    )
    print(f"sensor ticks: {shot}")


def test_a_passing_and_a_failing_exactness_check_on_the_asset_pages(
    page: Page, webserver: DagsterWebserver
):
    """Two evaluations as the exactness check makes them (its result worded and its
    metadata; the check itself runs against broken Hudi tables in
    execution/test_sampled_check.py), recorded in the webserver's instance: the failing
    one names the key and the column that differ."""
    key = ("second", "symbol")
    results = [
        ExactnessResult(
            "price_aggr", 1_700_000_005_000_000, key, (KeyVerdict((1, "AB"), "equal"),)
        ),
        ExactnessResult(
            "trade_aggr",
            1_700_000_005_000_000,
            key,
            (
                KeyVerdict((1_700_000_001_000_000, "BROKEN"), "differs", ("volume",)),
                KeyVerdict((1_700_000_002_000_000, "OK"), "equal"),
            ),
            timestamp_columns=("second",),
        ),
    ]
    with dg.DagsterInstance.from_config(str(webserver.dagster_home)) as instance:
        for result in results:
            instance.report_runless_asset_event(
                dg.AssetCheckEvaluation(
                    asset_key=dg.AssetKey(result.table),
                    check_name=EXACTNESS_CHECK,
                    passed=result.passed,
                    metadata=exactness_metadata(result),
                    description=result.describe(),
                )
            )
    failed = check_asset_checks(
        page,
        "trade_aggr",
        EXACTNESS_CHECK,
        [
            "Failed",
            "trade_aggr at watermark 2023-11-14T22:13:25.000000+00:00",
            "second=2023-11-14T22:13:21.000000+00:00, symbol=BROKEN): columns volume differ",
        ],
    )
    passed = check_asset_checks(
        page, "price_aggr", EXACTNESS_CHECK, ["Passed", "equals the batch oracle"]
    )
    print(f"exactness checks: {failed}, {passed}")
