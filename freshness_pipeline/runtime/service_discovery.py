"""How a run nobody pointed at a Spark service finds the one the demo is running.

The demo's runs get `FRESHNESS_SPARK_REMOTE` from the stack, but a person who types
`dagster asset materialize` beside the demo has only `DAGSTER_HOME`: without this their
run starts its own Spark JVM (minutes on 2 cores) next to a warm service. The
stack therefore announces its service in the Dagster instance's folder, the one thing a
hand run shares with the demo, and a run that has no remote of its own uses an announced
service that is alive, listening and serving the same lakehouse. Anything else keeps the
old behaviour (an own driver) and says why in the run's metadata.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlparse

ANNOUNCEMENT_FILE = "spark-service.json"


@dataclass(frozen=True)
class ServiceAnnouncement:
    url: str  # sc://host:port
    pid: int  # the service's process, so a stale file left by a killed demo is ignored
    lakehouse_root: str  # a service may only serve runs of the lakehouse it was set up for


@dataclass(frozen=True)
class Discovery:
    """The service a run should use (None: its own driver) and why, for run metadata."""

    url: str | None
    reason: str


def announce(home: Path, announcement: ServiceAnnouncement) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / ANNOUNCEMENT_FILE
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(asdict(announcement)))
    temporary.replace(path)  # a reader sees the old file or the whole new one
    return path


def withdraw(home: Path, pid: int) -> None:
    """Remove the announcement if it is still ours (a newer stack may have replaced it)."""
    path = home / ANNOUNCEMENT_FILE
    found = read_announcement(home)
    if found is not None and found.pid == pid:
        path.unlink(missing_ok=True)


def read_announcement(home: Path) -> ServiceAnnouncement | None:
    try:
        data = json.loads((home / ANNOUNCEMENT_FILE).read_text())
        return ServiceAnnouncement(
            url=str(data["url"]), pid=int(data["pid"]), lakehouse_root=str(data["lakehouse_root"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # none, or half-written by a crashed writer: not a service to use


def process_is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def url_is_listening(url: str, timeout_s: float = 1.0) -> bool:
    parsed = urlparse(url)
    if not parsed.hostname or not parsed.port:
        return False
    try:
        with socket.create_connection((parsed.hostname, parsed.port), timeout=timeout_s):
            return True
    except OSError:
        return False


def find_running_service(
    home: Path,
    lakehouse_root: str,
    is_alive: Callable[[int], bool] = process_is_alive,
    is_listening: Callable[[str], bool] = url_is_listening,
) -> Discovery:
    announcement = read_announcement(home)
    if announcement is None:
        return Discovery(None, f"no Spark service announced in {home}")
    if announcement.lakehouse_root.rstrip("/") != lakehouse_root.rstrip("/"):
        return Discovery(
            None,
            f"the service announced in {home} serves {announcement.lakehouse_root}, "
            f"this run's lakehouse is {lakehouse_root}",
        )
    if not is_alive(announcement.pid):
        return Discovery(None, f"the service announced in {home} (pid {announcement.pid}) is gone")
    if not is_listening(announcement.url):
        return Discovery(
            None, f"the service announced in {home} does not answer at {announcement.url}"
        )
    return Discovery(announcement.url, f"found running, announced in {home}")
