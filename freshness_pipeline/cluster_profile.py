"""The cluster profile: the servers a deployment would already have, started locally.

`freshness demo --profile cluster` starts, in this order, Postgres (Dagster's storage),
and a Spark standalone master + worker, then hands the usual stack (stack.py) nothing but
settings pointing at them: `FRESHNESS_POSTGRES_URL` / `FRESHNESS_POSTGRES_PASSWORD`,
`FRESHNESS_SPARK_MASTER=spark://127.0.0.1:<port>` and `FRESHNESS_SPARK_DRIVER_HOST`. A
server the settings already name (your own Postgres or master) is used instead of
starting one. `stop()` stops what it started in reverse order, by the pids it started.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from freshness_pipeline.postgres_server import PostgresConfig, PostgresServer
from freshness_pipeline.settings import PROJECT_ROOT, Settings
from freshness_pipeline.spark_cluster import HOST, SparkCluster, SparkClusterConfig

log = logging.getLogger("freshness")
DEFAULT_ROOT = PROJECT_ROOT / ".lakehouse" / "cluster"
# Applications on the master at once: the shared Spark service and ingestion's driver.
APPLICATIONS = 2


def _megabytes(size: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmgt]?)", size.lower()).groups()
    return int(int(number) * {"k": 1 / 1024, "": 1 / 2**20, "m": 1, "g": 1024, "t": 2**20}[unit])


class ClusterProfile:
    """Starts the profile's servers; `env` is what the stack's processes must see."""

    def __init__(self, settings: Settings, root: Path = DEFAULT_ROOT) -> None:
        self.settings = settings
        self.root = root.resolve()
        self.postgres: PostgresServer | None = None
        self.spark: SparkCluster | None = None
        self.env: dict[str, str] = {}

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    def start(self) -> ClusterProfile:
        settings = self.settings
        try:
            if settings.postgres_url is None:
                self.postgres = PostgresServer(PostgresConfig(self.root / "postgres")).start()
                log.info("Postgres up at %s (pid %s)", self.postgres.url, self.postgres.pid)
                self.env["FRESHNESS_POSTGRES_URL"] = self.postgres.url
                self.env["FRESHNESS_POSTGRES_PASSWORD"] = self.postgres.password
            if not settings.spark_master.startswith("spark://"):
                # Each application gets its share (FRESHNESS_SPARK_CORES_MAX cores,
                # FRESHNESS_SPARK_EXECUTOR_MEMORY); the worker offers room for both.
                executor_mb = _megabytes(settings.spark_executor_memory)
                self.spark = SparkCluster(
                    SparkClusterConfig(
                        state_dir=self.root / "spark",
                        worker_cores=APPLICATIONS * settings.spark_cores_max,
                        worker_memory=f"{APPLICATIONS * executor_mb}m",
                    )
                ).start()
                log.info("Spark master up at %s (pids %s)", self.spark.master_url, self.spark.pids)
                self.env["FRESHNESS_SPARK_MASTER"] = self.spark.master_url
                if settings.spark_driver_host is None:
                    self.env["FRESHNESS_SPARK_DRIVER_HOST"] = HOST
                    # Spark's own variable, read by each JVM before any setting: without
                    # it a driver resolves the machine's public address first.
                    self.env["SPARK_LOCAL_IP"] = HOST
        except BaseException:
            self.stop()
            raise
        self.env["DAGSTER_HOME"] = str(self.dagster_home)
        return self

    @property
    def settings_env(self) -> dict[str, str]:
        """The settings part of `env`: what this process needs too, since the stack's
        supervisor opens the same Dagster instance (whose password comes from one)."""
        return {k: v for k, v in self.env.items() if k.startswith("FRESHNESS_")}

    @property
    def pids(self) -> dict[str, int]:
        pids = dict(self.spark.pids) if self.spark else {}
        if self.postgres and self.postgres.pid:
            pids["postgres"] = self.postgres.pid
        return pids

    def stop(self) -> None:
        """Reverse order of start: the Spark cluster, then Postgres."""
        if self.spark is not None:
            log.info("stopping the Spark master and worker")
            self.spark.stop()
        if self.postgres is not None:
            log.info("stopping Postgres")
            self.postgres.stop()

    def __enter__(self) -> ClusterProfile:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
