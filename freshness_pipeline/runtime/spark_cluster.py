"""A local Spark standalone cluster: one master and one worker from pyspark's own launcher.

The cluster profile runs the shared Spark service (a Connect server) and ingestion's own
driver as applications of this master instead of `local[*]`, so the code runs exactly as it
would against a real cluster: tasks execute in executors the worker launches, jars travel
from the driver, and the driver and executors talk over the network (here 127.0.0.1).

Both daemons are started with `spark-class` (`org.apache.spark.deploy.master.Master`,
`org.apache.spark.deploy.worker.Worker`), bound to 127.0.0.1 (`--host` and
`SPARK_LOCAL_IP`) on free ports, each in its own process group, and stopped by the pids
started here. The worker is sized for this machine: `worker_cores` and `worker_memory`
are what it offers to applications, not what the hardware has.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from freshness_pipeline.config.parsing import SPARK_AUTH_SECRET_ENV
from freshness_pipeline.config.settings import child_environment
from freshness_pipeline.runtime.ports import free_port, port_is_open
from freshness_pipeline.runtime.processes import stop_process_group

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
HOST = "127.0.0.1"
# Spark's SecurityManager reads the shared secret from this variable when
# spark.authenticate is on (the worker hands it to its executors the same way).
AUTH_SECRET_ENV = SPARK_AUTH_SECRET_ENV


class SparkClusterError(RuntimeError):
    """The master or the worker could not be started or did not come up."""


def spark_class_path() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


@dataclass(frozen=True)
class SparkClusterConfig:
    state_dir: Path  # logs and the worker's work folder (executor jars and logs)
    worker_cores: int = 4
    worker_memory: str = "4g"
    daemon_memory: str = "512m"  # heap of the master and the worker themselves
    master_port: int = 0  # 0: a free port
    master_webui_port: int = 0
    # spark.authenticate: every daemon, driver and executor proves it holds this secret
    # (Spark's RPC); None: open, for anyone who reaches the ports. Never on a command line:
    # the daemons read it from their environment (_SPARK_AUTH_SECRET).
    auth_secret: str | None = field(default=None, repr=False)


class SparkCluster:
    """Starts a master and one worker, waits until the worker has registered, stops both."""

    def __init__(self, config: SparkClusterConfig) -> None:
        self.config = config
        self.master_port = config.master_port or free_port()
        self.master_webui_port = config.master_webui_port or free_port()
        self.master: subprocess.Popen | None = None
        self.worker: subprocess.Popen | None = None

    @property
    def master_url(self) -> str:
        return f"spark://{HOST}:{self.master_port}"

    @property
    def pids(self) -> dict[str, int]:
        return {
            name: proc.pid
            for name, proc in (("spark-master", self.master), ("spark-worker", self.worker))
            if proc is not None
        }

    def _env(self) -> dict[str, str]:
        env = child_environment(
            extra={
                "SPARK_LOCAL_IP": HOST,
                "SPARK_DAEMON_MEMORY": self.config.daemon_memory,
                "SPARK_HOME": None,  # the daemons come from the pinned pyspark wheel
                "SPARK_CONF_DIR": str(self.config.state_dir / "conf"),
                **({AUTH_SECRET_ENV: self.config.auth_secret} if self.config.auth_secret else {}),
            }
        )
        return env

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = (self.config.state_dir / f"{name}.log").open("ab")
        try:
            return subprocess.Popen(
                argv,
                env=self._env(),
                cwd=self.config.state_dir,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stopped by our pid
            )
        finally:
            log.close()

    def start(self, timeout_s: float = 120.0) -> SparkCluster:
        config = self.config
        for port in (self.master_port, self.master_webui_port):
            if port_is_open(HOST, port):
                raise SparkClusterError(f"port {port} on {HOST} is already in use")
        (config.state_dir / "conf").mkdir(parents=True, exist_ok=True)
        (config.state_dir / "work").mkdir(parents=True, exist_ok=True)
        defaults = "spark.authenticate true\n" if config.auth_secret else ""
        (config.state_dir / "conf" / "spark-defaults.conf").write_text(defaults)
        spark_class = str(spark_class_path())
        try:
            self.master = self._spawn(
                "spark-master",
                [
                    spark_class,
                    MASTER_CLASS,
                    "--host",
                    HOST,
                    "--port",
                    str(self.master_port),
                    "--webui-port",
                    str(self.master_webui_port),
                ],
            )
            deadline = time.monotonic() + timeout_s
            self._wait(lambda: port_is_open(HOST, self.master_port), "master", deadline)
            self.worker = self._spawn(
                "spark-worker",
                [
                    spark_class,
                    WORKER_CLASS,
                    "--host",
                    HOST,
                    "--port",
                    str(free_port()),
                    "--webui-port",
                    str(free_port()),
                    "--cores",
                    str(config.worker_cores),
                    "--memory",
                    config.worker_memory,
                    "--work-dir",
                    str(config.state_dir / "work"),
                    self.master_url,
                ],
            )
            self._wait(lambda: self.alive_workers() >= 1, "worker", deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, ready, what: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            for name, proc in (("master", self.master), ("worker", self.worker)):
                if proc is not None and proc.poll() is not None:
                    raise SparkClusterError(
                        f"the Spark {name} exited with code {proc.returncode} while starting; "
                        f"see {self.config.state_dir / f'spark-{name}.log'}"
                    )
            if ready():
                return
            time.sleep(0.5)
        raise SparkClusterError(
            f"the Spark {what} did not come up in time; see {self.config.state_dir}"
        )

    def master_state(self) -> dict:
        """The master's own status page as JSON (workers, cores, applications)."""
        url = f"http://{HOST}:{self.master_webui_port}/json/"
        with urllib.request.urlopen(url, timeout=2) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        try:
            return int(self.master_state().get("aliveworkers", 0))
        except OSError:
            return 0

    def stop(self, timeout_s: float = 20.0) -> None:
        """The worker first (it kills its executors), then the master; SIGTERM to each
        process group started here, SIGKILL if it hangs."""
        for proc in (self.worker, self.master):
            if proc is not None and proc.poll() is None:
                stop_process_group(proc, signal.SIGTERM, timeout_s)

    def __enter__(self) -> SparkCluster:
        return self.start() if self.master is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()
