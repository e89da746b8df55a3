"""The live demo on Kafka in a real browser: a short stream through the stack (`dagster
dev`: webserver + daemon, the shared Spark service, a local KRaft broker, the replayer
producing to its topics, ingestion consuming them with Streamer checkpoints in the Hudi
commits) on a fresh lakehouse and DAGSTER_HOME (`freshness demo --source kafka`,
shortened), and headless Chromium on its webserver while it runs:
- the sensor's tick history lists the ticks' one-line summaries, and a tick's logs give
  every job's decision in words (launch or waits, and why);
- a run the sensor launched shows its decision tags (asset, policy, cutoff as UTC time,
  `n of m files`, launched_by);
- a job asset's page lists its staleness metadata and plots it over materializations;
- the asset graph of the running pipeline draws every asset and edge, as defined.
Every expectation comes from the instance (its ticks, runs and materializations).
Screenshots go to the session's `ui-screenshots` folder. (That the stream then drains
through Kafka into all six tables with nothing lost or doubled is the secure cluster
profile's test, runtime/test_cluster_profile.py, through Kafka as well: one drain in CI.)"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import dagster as dg
import pytest

from assets_tests.conftest import short_stack_config
from assets_tests.ui.browser import Page
from assets_tests.ui.dagster_pages import (
    check_asset_graph,
    check_run_page,
    check_sensor_ticks,
    check_staleness_metadata,
    definitions_graph,
    job_decision_line,
    sensor_ticks,
)
from assets_tests.ui.webserver import code_locations_loaded, prepare_dagster_home
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.definitions import build_definitions
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.runtime.stack import Stack
from freshness_pipeline.scheduling.run_plan import (
    ASSET_TAG,
    CHAINED_TAG,
    LAUNCHED_BY_TAG,
    SENSOR,
    VISIBLE_TAGS,
)

pytestmark = [pytest.mark.spark, pytest.mark.ui]
SENSOR_NAME = "freshness_sensor"
STALENESS_ASSET = "price_aggr"  # first in line: the most materializations soonest
PLOTTED = ("staleness_s", "staleness_before_s")  # numbers the asset page plots
LIVE_TIMEOUT_S = 480  # 2 cores: Spark service, ingestion and Dagster start first


def sensor_materializations(instance: dg.DagsterInstance, asset: str) -> list:
    """The asset's materializations by the sensor's runs that recorded staleness."""
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=50).records
    found = []
    for record in records:
        metadata = record.asset_materialization.metadata
        run = instance.get_run_by_id(record.run_id)
        if (
            run is not None
            and run.tags.get(LAUNCHED_BY_TAG) == SENSOR
            and "staleness_s" in metadata
        ):
            found.append(record)
    return found


def wait_for(stack: Stack, what: str, ready, timeout_s: float = LIVE_TIMEOUT_S):
    """Supervises the stack until `ready()` returns something truthy, and returns it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stack.supervise()
        found = ready()
        if found:
            return found
        time.sleep(2)
    logs = stack.config.logs_dir / "dagster.log"
    tail = logs.read_text()[-3000:] if logs.exists() else "(no dagster log)"
    raise AssertionError(f"the live stack never produced {what} within {timeout_s} s:\n{tail}")


def test_live_kafka_demo_in_the_browser(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, browser, shots_dir: Path
):
    monkeypatch.delenv("FRESHNESS_SPARK_REMOTE", raising=False)
    monkeypatch.delenv("FRESHNESS_KAFKA_BOOTSTRAP", raising=False)
    env = {
        "FRESHNESS_LAKEHOUSE": str(tmp_path / "tables"),
        "FRESHNESS_LANDING": str(tmp_path / "landing"),
        "FRESHNESS_SOURCE": "kafka",
        "FRESHNESS_KAFKA_BROKER_PORT": str(free_port()),
        "FRESHNESS_TICK_S": "5",
        "FRESHNESS_SPARK_SERVICE_PORT": str(free_port()),
        "FRESHNESS_SPARK_SERVICE_MEMORY": "2g",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    home = prepare_dagster_home(tmp_path / "dagster_home")
    port = free_port()
    # The end-to-end tests' 20 s stream, with the webserver on (`dagster dev`).
    config = dataclasses.replace(
        short_stack_config(tmp_path, env, home, seed=11), webserver=True, port=port
    )
    url = f"http://127.0.0.1:{port}"
    settings = load_settings()
    stack = Stack(config, settings)
    stack.start()
    try:
        wait_for(
            stack, "a loaded code location in the webserver", lambda: code_locations_loaded(url)
        )
        page = Page(browser, url, shots_dir)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            # 1. The sensor's ticks, as soon as one has launched runs.
            launched = wait_for(
                stack,
                "a sensor tick that launched runs",
                lambda: [t for t in sensor_ticks(instance, SENSOR_NAME) if t.run_ids],
            )
            cursors = [t.cursor for t in launched if t.cursor]
            assert any(c.startswith("launch ") for c in cursors), cursors
            shot = check_sensor_ticks(
                page, SENSOR_NAME, cursors, [job_decision_line(job) for job in JOBS]
            )
            print(f"sensor ticks: {shot}")
            # 2. and 3. A sensor run's page, and the staleness it recorded, once the asset
            # has two points to plot.
            records = wait_for(
                stack,
                f"two materializations of {STALENESS_ASSET} with staleness",
                lambda: (
                    (found := sensor_materializations(instance, STALENESS_ASSET))
                    and len(found) >= 2
                    and found
                ),
            )
            run = instance.get_run_by_id(records[0].run_id)
            assert run is not None
            tags = {key: run.tags[key] for key in VISIBLE_TAGS if key in run.tags}
            # the run's planned asset, or a step of its chain (freshness/chained)
            steps = [tags[ASSET_TAG], *run.tags.get(CHAINED_TAG, "").split(",")]
            assert STALENESS_ASSET in steps, run.tags
            assert {"freshness/policy", "freshness/cutoff", "freshness/files"} <= set(tags), tags
            assert tags["freshness/cutoff"].endswith("UTC"), tags
            print(f"run page: {check_run_page(page, run.run_id, tags)}")
            print(f"staleness: {check_staleness_metadata(page, STALENESS_ASSET, PLOTTED)}")
            # 4. The graph of the running pipeline (materialized assets), as defined.
            assets, edges = definitions_graph(build_definitions(load_settings()))
            print(f"asset graph: {check_asset_graph(page, assets, edges)}")
    finally:
        # the pages are checked: runs still in flight are cut off after 30 s, not waited for
        stack.stop(drain_timeout_s=30)
