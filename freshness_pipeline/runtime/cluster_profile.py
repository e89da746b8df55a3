"""The cluster profile: the servers a deployment would already have, started locally.

`freshness demo --profile cluster` starts, in this order, Postgres (Dagster's storage),
the S3 object store (s3proxy, object_store.py) when FRESHNESS_CLUSTER_LAKEHOUSE is
`object_store`, and a Spark standalone master + worker, then hands the usual stack
(stack.py) nothing but settings pointing at them: `FRESHNESS_POSTGRES_URL` /
`FRESHNESS_POSTGRES_PASSWORD`, `FRESHNESS_LAKEHOUSE=s3://lakehouse/tables` with the
store's endpoint and keys, `FRESHNESS_SPARK_MASTER=spark://127.0.0.1:<port>` and
`FRESHNESS_SPARK_DRIVER_HOST`. A server the settings already name (your own Postgres, an
`s3://` lakehouse, your own master) is used instead of starting one. `stop()` stops what
it started in reverse order, by the pids it started.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from freshness_pipeline.config.settings import PROJECT_ROOT, Settings
from freshness_pipeline.runtime.object_store import ObjectStoreConfig, ObjectStoreServer
from freshness_pipeline.runtime.postgres_server import PostgresConfig, PostgresServer
from freshness_pipeline.runtime.spark_cluster import HOST, SparkCluster, SparkClusterConfig

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
        self.use_object_store = settings.cluster_lakehouse == "object_store"
        self.postgres: PostgresServer | None = None
        self.object_store: ObjectStoreServer | None = None
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
            if self.use_object_store and settings.is_local:
                self.object_store = ObjectStoreServer(
                    ObjectStoreConfig(data_dir=self.root / "s3" / "data", log_dir=self.root / "s3")
                ).start()
                log.info(
                    "object store up at %s (pid %s)",
                    self.object_store.endpoint,
                    self.object_store.pid,
                )
                self.env.update(self.object_store.settings_env("tables"))
                # the writers' table locks: a folder every writer here sees (object_store.py)
                self.env["FRESHNESS_LOCK_DIR"] = str(self.root / "locks")
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
        supervisor opens the same Dagster instance (whose password comes from one) and
        reads the same lakehouse."""
        return {k: v for k, v in self.env.items() if k.startswith(("FRESHNESS_", "AWS_"))}

    @property
    def pids(self) -> dict[str, int]:
        pids = dict(self.spark.pids) if self.spark else {}
        if self.object_store and self.object_store.pid:
            pids["object-store"] = self.object_store.pid
        if self.postgres and self.postgres.pid:
            pids["postgres"] = self.postgres.pid
        return pids

    def stop(self) -> None:
        """Reverse order of start: the Spark cluster, the object store, then Postgres."""
        if self.spark is not None:
            log.info("stopping the Spark master and worker")
            self.spark.stop()
        if self.object_store is not None:
            log.info("stopping the object store")
            self.object_store.stop()
        if self.postgres is not None:
            log.info("stopping Postgres")
            self.postgres.stop()

    def __enter__(self) -> ClusterProfile:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_stack(stack, profile: ClusterProfile | None) -> None:
    """Starts `stack`; if that fails, the profile's servers (if any) stop too, so a failed
    start leaves nothing running."""
    try:
        stack.start()
    except BaseException:
        if profile:
            profile.stop()
        raise
