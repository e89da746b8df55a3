"""A Dagster webserver over the project's definitions for the browser tests: a fresh
DAGSTER_HOME, `dagster-webserver` on 127.0.0.1 and a free port, ready once its code
location has loaded, stopped by the process id it was started with (its group)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.runtime.processes import stop_process_group
from freshness_pipeline.runtime.stack import default_signals

WORKSPACE = PROJECT_ROOT / "workspace.yaml"
READY_TIMEOUT_S = 180.0  # the code server imports pyspark and dagster on 2 busy cores
LOCATIONS_QUERY = """
{ workspaceOrError { __typename ... on Workspace { locationEntries {
    name loadStatus
    locationOrLoadError { __typename ... on PythonError { message } }
} } } }
"""


def prepare_dagster_home(home: Path) -> Path:
    """A DAGSTER_HOME with the repo's instance settings (SQLite storage under it) and the
    UI's first-visit newsletter dialog marked as seen, so it covers no page."""
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
    nux = home / ".nux"  # dagster._core.nux: the webserver asks whether this file exists
    nux.mkdir(exist_ok=True)
    (nux / "nux.yaml").write_text("seen: 1\n")
    return home


def graphql(base_url: str, query: str, timeout_s: float = 10.0) -> dict:
    request = urllib.request.Request(
        f"{base_url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read())


def code_locations_loaded(base_url: str) -> bool:
    """True once every code location has loaded; raises naming a location that failed."""
    try:
        answer = graphql(base_url, LOCATIONS_QUERY)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False  # not listening yet
    workspace = answer.get("data", {}).get("workspaceOrError", {})
    entries = workspace.get("locationEntries") or []
    for entry in entries:
        error = entry.get("locationOrLoadError") or {}
        if error.get("__typename") == "PythonError":
            raise RuntimeError(f"code location {entry['name']} failed to load: {error['message']}")
    return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)


def wait_until_loaded(base_url: str, proc: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"the Dagster webserver exited with code {proc.returncode}; see {log_path}"
            )
        if code_locations_loaded(base_url):
            return
        time.sleep(0.5)
    raise RuntimeError(
        f"the Dagster webserver at {base_url} did not load its code location within "
        f"{READY_TIMEOUT_S:.0f} s; see {log_path}"
    )


class DagsterWebserver:
    """`dagster-webserver` over workspace.yaml; use as a context manager."""

    def __init__(self, dagster_home: Path, env: dict[str, str], log_path: Path) -> None:
        self.dagster_home = prepare_dagster_home(dagster_home)
        # The code server imports this checkout (the one the test runs from), whatever
        # else is installed or a relative PYTHONPATH would point at from DAGSTER_HOME.
        python_path = [str(PROJECT_ROOT), *filter(None, [env.get("PYTHONPATH")])]
        self.env = {
            **env,
            "DAGSTER_HOME": str(self.dagster_home),
            "PYTHONPATH": os.pathsep.join(python_path),
        }
        self.log_path = log_path
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def start(self) -> DagsterWebserver:
        argv = [
            str(Path(sys.executable).parent / "dagster-webserver"),
            "-w",
            str(WORKSPACE),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
        ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            # From DAGSTER_HOME, as the stack runs Dagster: the checkout's dagster.yaml is
            # then not mistaken for a second instance config.
            self.proc = subprocess.Popen(
                argv,
                env=self.env,
                cwd=self.dagster_home,
                stdout=log,
                stderr=subprocess.STDOUT,
                # SIGINT (the clean stop) works even when pytest runs in the background,
                # which starts its children with SIGINT ignored.
                preexec_fn=default_signals,
                start_new_session=True,  # its code server is in its group; stopped with it
            )
        try:
            wait_until_loaded(self.url, self.proc, self.log_path)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.proc is not None:
            stop_process_group(self.proc, signal.SIGINT, grace_s=20)

    def __enter__(self) -> DagsterWebserver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
