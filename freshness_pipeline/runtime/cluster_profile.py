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

Secure (FRESHNESS_CLUSTER_SECURE, `freshness demo --profile cluster --secure`): the servers
as a firm runs them, each with what a client must show: a CA made for them (runtime/tls.py)
signs Postgres's certificate (TLS only, verified by its name), the object store's (HTTPS
only), and the Kafka broker's (SASL_SSL with a SCRAM user, when the source is Kafka); the
Spark cluster runs with spark.authenticate. Its passwords and secret are generated once,
kept in 0600 files under the profile's folder, and reach the stack as settings.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from dataclasses import replace
from pathlib import Path

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.runtime.kafka_broker import BrokerSecurity, KafkaBroker, KafkaBrokerConfig
from freshness_pipeline.runtime.object_store import ObjectStoreConfig, ObjectStoreServer
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.runtime.postgres_server import PostgresConfig, PostgresServer
from freshness_pipeline.runtime.spark_cluster import HOST, SparkCluster, SparkClusterConfig
from freshness_pipeline.runtime.tls import TlsFiles, make_ca

log = logging.getLogger("freshness")
DEFAULT_ROOT = PROJECT_ROOT / ".lakehouse" / "cluster"
# Applications on the master at once: the shared Spark service and ingestion's driver.
APPLICATIONS = 2


KAFKA_USER = "freshness"
# libpq's parameter -> the setting that carries it
POSTGRES_TLS_SETTINGS = {
    "sslmode": "FRESHNESS_POSTGRES_SSLMODE",
    "sslrootcert": "FRESHNESS_POSTGRES_SSLROOTCERT",
}


def _kept_secret(path: Path) -> str:
    """A random secret kept in a 0600 file (made on first use, read afterwards)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(24))
    return path.read_text().strip()


def _megabytes(size: str) -> int:
    found = re.fullmatch(r"(\d+)([kmgt]?)", size.lower())
    if found is None:
        raise ValueError(f"{size!r} is not a size such as 512m or 2g")
    number, unit = found.groups()
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
        self.kafka: KafkaBroker | None = None
        self.env: dict[str, str] = {}
        self.tls: TlsFiles | None = None

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster_home"

    def start(self) -> ClusterProfile:
        settings = self.settings
        if settings.cluster_secure:
            self.tls = make_ca(self.root / "tls")
        tls = self.tls
        try:
            if settings.postgres_url is None:
                config = PostgresConfig(self.root / "postgres", tls=tls)
                self.postgres = PostgresServer(config).start()
                log.info("Postgres up at %s (pid %s)", self.postgres.url, self.postgres.pid)
                self.env["FRESHNESS_POSTGRES_URL"] = self.postgres.url
                self.env["FRESHNESS_POSTGRES_PASSWORD"] = self.postgres.password
                for key, value in self.postgres.params.items():
                    self.env[POSTGRES_TLS_SETTINGS[key]] = value
            if self.use_object_store and settings.is_local:
                self.object_store = ObjectStoreServer(
                    ObjectStoreConfig(
                        data_dir=self.root / "s3" / "data", log_dir=self.root / "s3", tls=tls
                    )
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
                secret = _kept_secret(self.root / "spark-secret") if tls else None
                self.spark = SparkCluster(
                    SparkClusterConfig(
                        state_dir=self.root / "spark",
                        worker_cores=APPLICATIONS * settings.spark_cores_max,
                        worker_memory=f"{APPLICATIONS * executor_mb}m",
                        auth_secret=secret,
                    )
                ).start()
                if secret:
                    self.env["FRESHNESS_SPARK_AUTH_SECRET"] = secret
                log.info("Spark master up at %s (pids %s)", self.spark.master_url, self.spark.pids)
                self.env["FRESHNESS_SPARK_MASTER"] = self.spark.master_url
                if settings.spark_driver_host is None:
                    self.env["FRESHNESS_SPARK_DRIVER_HOST"] = HOST
                    # Spark's own variable, read by each JVM before any setting: without
                    # it a driver resolves the machine's public address first.
                    self.env["SPARK_LOCAL_IP"] = HOST
            if tls and settings.source == "kafka" and settings.kafka.bootstrap is None:
                self._start_kafka(tls)
        except BaseException:
            self.stop()
            raise
        self.env["DAGSTER_HOME"] = str(self.dagster_home)
        return self

    def _start_kafka(self, tls: TlsFiles) -> None:
        """The local broker over SASL_SSL with one SCRAM user, and the client properties
        every process of the stack uses to reach it (the password as its own setting)."""
        password = _kept_secret(self.root / "kafka-password")
        security = BrokerSecurity(tls, users={KAFKA_USER: password})
        state = self.root / "kafka"
        config = replace(
            KafkaBrokerConfig.from_settings(self.settings.kafka, state),
            port=free_port(),
            security=security,
        )
        self.kafka = KafkaBroker(config).start()
        log.info("Kafka (SASL_SSL) up at %s (pid %s)", self.kafka.bootstrap_servers, self.kafka.pid)
        client = {k: v for k, v in security.client_properties().items() if k != "sasl.password"}
        properties = self.root / "tls" / "kafka-client.properties"
        properties.write_text("".join(f"{k}={v}\n" for k, v in client.items()))
        self.env["FRESHNESS_KAFKA_BOOTSTRAP"] = self.kafka.bootstrap_servers
        self.env["FRESHNESS_KAFKA_CONFIG"] = str(properties)
        self.env["FRESHNESS_KAFKA_SASL_PASSWORD"] = password

    @property
    def settings_env(self) -> dict[str, str]:
        """The settings part of `env`: what this process needs too, since the stack's
        supervisor opens the same Dagster instance (whose password comes from one) and
        reads the same lakehouse."""
        return {k: v for k, v in self.env.items() if k.startswith(("FRESHNESS_", "AWS_"))}

    @property
    def pids(self) -> dict[str, int]:
        pids = dict(self.spark.pids) if self.spark else {}
        if self.kafka and self.kafka.pid:
            pids["kafka-broker"] = self.kafka.pid
        if self.object_store and self.object_store.pid:
            pids["object-store"] = self.object_store.pid
        if self.postgres and self.postgres.pid:
            pids["postgres"] = self.postgres.pid
        return pids

    def stop(self) -> None:
        """Reverse order of start: Kafka, the Spark cluster, the object store, Postgres."""
        if self.kafka is not None:
            log.info("stopping the Kafka broker")
            self.kafka.stop()
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
