"""A hand run finds the demo's Spark service through the instance's folder, and only a
live one serving its own lakehouse (service_discovery.py)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.orchestration.resources import HudiSparkResource
from freshness_pipeline.runtime.service_discovery import (
    ANNOUNCEMENT_FILE,
    ServiceAnnouncement,
    announce,
    find_running_service,
    read_announcement,
    url_is_listening,
    withdraw,
)

LAKEHOUSE = "/data/lakehouse/tables"


@pytest.fixture
def listening_url() -> Iterator[str]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield f"sc://127.0.0.1:{server.getsockname()[1]}"


def test_no_announcement_means_an_own_driver(tmp_path: Path):
    found = find_running_service(tmp_path, LAKEHOUSE)
    assert found.url is None and "no Spark service announced" in found.reason


def test_a_live_listening_service_of_the_same_lakehouse_is_used(tmp_path: Path, listening_url):
    announce(tmp_path, ServiceAnnouncement(listening_url, os.getpid(), LAKEHOUSE + "/"))
    found = find_running_service(tmp_path, LAKEHOUSE)
    assert found.url == listening_url and "found running" in found.reason


@pytest.mark.parametrize(
    ("announced_lakehouse", "alive", "listening", "says"),
    [
        ("/other/lakehouse", True, True, "serves /other/lakehouse"),
        (LAKEHOUSE, False, True, "is gone"),
        (LAKEHOUSE, True, False, "does not answer"),
    ],
)
def test_a_service_that_cannot_serve_this_run_is_not_used(
    tmp_path: Path, announced_lakehouse: str, alive: bool, listening: bool, says: str
):
    announce(tmp_path, ServiceAnnouncement("sc://127.0.0.1:15002", 4242, announced_lakehouse))
    found = find_running_service(
        tmp_path, LAKEHOUSE, is_alive=lambda pid: alive, is_listening=lambda url: listening
    )
    assert found.url is None and says in found.reason


def test_a_half_written_announcement_is_ignored(tmp_path: Path):
    (tmp_path / ANNOUNCEMENT_FILE).write_text('{"url": "sc://127.0.0.1:1')
    assert read_announcement(tmp_path) is None
    assert find_running_service(tmp_path, LAKEHOUSE).url is None


def test_withdraw_removes_only_its_own_announcement(tmp_path: Path):
    announce(tmp_path, ServiceAnnouncement("sc://127.0.0.1:15002", 111, LAKEHOUSE))
    withdraw(tmp_path, 222)  # a newer stack replaced it: not ours to remove
    assert read_announcement(tmp_path) is not None
    withdraw(tmp_path, 111)
    assert not (tmp_path / ANNOUNCEMENT_FILE).exists()


def test_a_closed_port_is_not_listening():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening
        assert not url_is_listening(f"sc://127.0.0.1:{port}", timeout_s=0.5)
    assert not url_is_listening("sc://no-port")


@pytest.fixture
def no_remote_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FRESHNESS_SPARK_REMOTE", raising=False)
    monkeypatch.setenv("FRESHNESS_SPARK_MODE", "service")


def test_the_resource_of_a_hand_run_uses_the_announced_service(
    tmp_path: Path, listening_url: str, no_remote_settings: None
):
    lakehouse = load_settings().lakehouse_root
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        announce(
            Path(instance.root_directory),
            ServiceAnnouncement(listening_url, os.getpid(), lakehouse),
        )
        resource = HudiSparkResource.for_settings(load_settings())
        resource.setup_for_execution(dg.build_init_resource_context(instance=instance))
        assert resource.description.startswith(f"shared Spark service {listening_url}")
        assert "found running" in resource.description
        # a resource given its own remote keeps it and looks for nothing
        own = HudiSparkResource.for_settings(load_settings(), remote="sc://10.0.0.1:15002")
        own.setup_for_execution(dg.build_init_resource_context(instance=instance))
        assert own.description == "shared Spark service sc://10.0.0.1:15002"


def test_the_resource_says_why_it_starts_its_own_driver(tmp_path: Path, no_remote_settings: None):
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        resource = HudiSparkResource.for_settings(load_settings())
        resource.setup_for_execution(dg.build_init_resource_context(instance=instance))
        assert resource.description.startswith("own Spark driver")
        assert "no Spark service announced" in resource.description
