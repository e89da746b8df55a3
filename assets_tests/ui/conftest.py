"""Fixtures of the browser tests: a Dagster webserver over the project's definitions on a
fresh DAGSTER_HOME, headless Chromium, a folder for the screenshots."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from assets_tests.ui.browser import Page, chromium_missing, headless_chromium
from assets_tests.ui.webserver import DagsterWebserver
from freshness_pipeline.config.settings import Settings, load_settings

# A staleness target other than the default, so the freshness policy the asset pages show
# is seen to come from the settings (10 and 5 minutes, worded exactly by the UI).
UI_SETTINGS = {"FRESHNESS_STALENESS_TARGET_S": "600", "FRESHNESS_STALENESS_WARN_FRACTION": "0.5"}


@pytest.fixture(scope="session")
def shots_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where every browser test saves its screenshots (failures included: FAILED-*.png)."""
    return tmp_path_factory.mktemp("ui-screenshots")


@pytest.fixture(scope="module")
def ui_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("ui-lakehouse")
    return {
        **os.environ,
        "FRESHNESS_LAKEHOUSE": str(root / "tables"),
        "FRESHNESS_LANDING": str(root / "landing"),
        **UI_SETTINGS,
    }


@pytest.fixture(scope="module")
def ui_settings(ui_env: dict[str, str]) -> Settings:
    """The settings the webserver's code server loads the definitions with."""
    return load_settings(ui_env)


@pytest.fixture(scope="module")
def webserver(
    ui_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DagsterWebserver]:
    root = tmp_path_factory.mktemp("ui-webserver")
    with DagsterWebserver(root / "dagster_home", ui_env, root / "webserver.log") as server:
        yield server


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    reason = chromium_missing()
    if reason:
        pytest.fail(reason)  # a missing browser is a broken setup, not a skip
    root = tmp_path_factory.mktemp("ui-chromium")
    with headless_chromium(root / "profile", root / "chromedriver.log") as driver:
        yield driver


@pytest.fixture
def page(browser, webserver: DagsterWebserver, shots_dir: Path) -> Page:
    return Page(browser, webserver.url, shots_dir)
