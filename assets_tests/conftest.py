"""Shared fixtures: an isolated lakehouse per test, one local Spark JVM and one shared Spark
service (Spark Connect server) per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from freshness_pipeline.config.settings import Settings, load_settings


@pytest.fixture
def lakehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings pointing at a fresh lakehouse and landing folder under tmp_path."""
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "tables"))
    monkeypatch.setenv("FRESHNESS_LANDING", str(tmp_path / "landing"))
    return load_settings()


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    from freshness_pipeline.runtime.spark import build_spark_session, hudi_jars, s3a_jars

    # With s3a's jars whatever the lakehouse: the S3 lakehouse tests point this session at
    # their object store at run time (spark.apply_lakehouse_conf).
    jars_dir = load_settings().jars_dir
    jars = ",".join(str(j) for j in [*hudi_jars(jars_dir), *s3a_jars(jars_dir)])
    session = build_spark_session(
        load_settings(), master="local[2]", app_name="assets_tests", extra={"spark.jars": jars}
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One real Spark Connect server (the shared Spark service) for the test session."""
    from freshness_pipeline.runtime.ports import free_port
    from freshness_pipeline.runtime.spark_service import SparkService, SparkServiceConfig

    config = SparkServiceConfig(
        settings=load_settings(),
        state_dir=tmp_path_factory.mktemp("spark_service"),
        port=free_port(),
        driver_memory="3g",
    )
    with SparkService(config) as service:
        yield service


@pytest.fixture
def connect_spark(spark_service) -> Iterator[object]:
    """A Spark Connect session on the shared service, stopped after the test (which also
    takes pyspark out of Connect mode for the local-session tests that follow)."""
    from freshness_pipeline.runtime.spark import build_spark_session

    session = build_spark_session(
        load_settings(), remote=spark_service.url, app_name="assets_tests"
    )
    yield session
    session.stop()


def assert_listens_on_loopback_only(addresses: set[tuple[str, int]], what: str) -> None:
    """The project's rule for every server it starts: bound to 127.0.0.1, nothing wider."""
    from freshness_pipeline.runtime.processes import is_loopback

    assert addresses, f"{what} listens on no TCP port"
    wide = sorted(a for a in addresses if not is_loopback(a[0]))
    assert not wide, f"{what} listens beyond the loopback interface: {wide}"


def child_env(settings: Settings) -> dict[str, str]:
    """Environment for a child process that must see the same lakehouse."""
    env = dict(os.environ)
    env["FRESHNESS_LAKEHOUSE"] = settings.lakehouse_root
    env["FRESHNESS_LANDING"] = str(settings.landing_dir)
    return env


def table_watermark(lakehouse, table: str) -> int | None:
    """A table's watermark, None while it does not exist (stack tests poll it)."""
    from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound

    try:
        return HudiTableMetadata(lakehouse.table(table)).watermark_us()
    except TableNotFound:
        return None


def short_stack_config(tmp_path: Path, env: dict[str, str], dagster_home: Path, seed: int):
    """The stack of the short end-to-end tests: 20 s of stream at 200 events/s."""
    from freshness_pipeline.runtime.stack import StackConfig
    from freshness_pipeline.stream.generator import StreamConfig

    return StackConfig(
        stream=StreamConfig(seed=seed, rate=200, universe_size=80),
        malformed_rate=0.0,
        commit_interval_s=5.0,
        duration_s=20,
        webserver=False,
        dagster_home=dagster_home,
        logs_dir=tmp_path / "logs",
        env=env,
    )
