"""The local Kafka broker: one single-node KRaft server (broker and controller in one JVM)
from the Maven Central jars `make setup` puts in `.cache/kafka`.

Bound to 127.0.0.1 only. Its log dir is formatted once (`kafka.tools.StorageTool format`,
which writes `meta.properties`); later starts reuse it, so topics and offsets survive a
restart, as the Streamer checkpoints in the raw tables expect. Started in its own process
group and stopped by the pid it started (SIGTERM: Kafka's shutdown hook flushes the log),
like the Spark service.
"""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshness_pipeline.config.kafka_client import ClientErrors, refused
from freshness_pipeline.config.settings import KafkaSettings, Settings, child_environment
from freshness_pipeline.runtime.ports import free_port, port_is_open
from freshness_pipeline.runtime.processes import ServerProcess
from freshness_pipeline.runtime.tls import TlsFiles

SCRAM_MECHANISM = "SCRAM-SHA-512"
SCRAM_ITERATIONS = 8192
SERVER_CLASS = "kafka.Kafka"
STORAGE_TOOL_CLASS = "kafka.tools.StorageTool"
NODE_ID = 1


def broker_state_dir(settings: Settings) -> Path:
    """The local broker's data, beside the landing folder: both are the stream's way in,
    and the raw tables' checkpoints point into it (`make clean-data` removes both)."""
    return settings.landing_dir.parent / "kafka"


class KafkaBrokerError(RuntimeError):
    """The broker could not be installed, formatted or started."""


@dataclass(frozen=True)
class BrokerSecurity:
    """The client listener's protection: TLS with the CA's server certificate, and either
    SASL/SCRAM-SHA-512 users (SASL_SSL) or, with `client_auth`, client certificates the CA
    signed (mutual TLS, SSL). The broker talks to itself on a second listener that wants
    its own certificate; the controller's listener is loopback-only plaintext (KRaft's
    quorum, no client reaches data through it)."""

    tls: TlsFiles
    users: Mapping[str, str] = field(default_factory=dict, repr=False)  # name -> password
    client_auth: bool = False

    def __post_init__(self) -> None:
        if not self.users and not self.client_auth:
            raise ValueError("a secure broker needs SCRAM users or client certificates")

    @property
    def protocol(self) -> str:
        return "SASL_SSL" if self.users else "SSL"

    def client_properties(self, user: str | None = None) -> dict[str, str]:
        """What one of our clients sets to reach it (`user`'s password for SASL_SSL)."""
        found = {"security.protocol": self.protocol, "ssl.ca.location": str(self.tls.ca_cert)}
        if self.users:
            name = user or next(iter(self.users))
            found.update(
                {
                    "sasl.mechanisms": SCRAM_MECHANISM,
                    "sasl.username": name,
                    "sasl.password": self.users[name],
                }
            )
        if self.client_auth:
            found["ssl.certificate.location"] = str(self.tls.client_cert)
            found["ssl.key.location"] = str(self.tls.client_key)
        return found


def scram_argument(name: str, password: str, salt: bytes | None = None) -> str:
    """StorageTool's `--add-scram` value for a user, as salt and salted password (RFC 5802
    Hi(): PBKDF2-HMAC-SHA-512), so the password itself is on no command line."""
    salt = salt or os.urandom(24)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, SCRAM_ITERATIONS)
    return (
        f'{SCRAM_MECHANISM}=[name={name},salt="{base64.b64encode(salt).decode()}",'
        f'saltedpassword="{base64.b64encode(salted).decode()}",iterations={SCRAM_ITERATIONS}]'
    )


@dataclass(frozen=True)
class KafkaBrokerConfig:
    jars_dir: Path  # kafka_2.13 and its runtime dependencies
    state_dir: Path  # log dir, server.properties and the broker's own log
    port: int = 9092
    controller_port: int | None = None  # None: a free port at each start
    host: str = "127.0.0.1"
    heap: str = "512m"
    topics: Mapping[str, int] | None = None  # topic -> partitions, created at start
    security: BrokerSecurity | None = None  # None: plaintext (the demo's local broker)
    internal_port: int | None = None  # the broker's own TLS listener (secure only)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.state_dir / "data"

    @property
    def log_path(self) -> Path:
        return self.state_dir / "kafka-broker.log"

    @classmethod
    def from_settings(cls, kafka: KafkaSettings, state_dir: Path) -> KafkaBrokerConfig:
        return cls(
            jars_dir=kafka.jars_dir,
            state_dir=state_dir,
            port=kafka.broker_port,
            topics=dict.fromkeys(kafka.topics.values(), kafka.partitions),
        )


def _secure_lines(config: KafkaBrokerConfig, controller_port: int) -> dict[str, str]:
    security = config.security
    assert security is not None
    host = config.host
    internal = config.internal_port or free_port(avoid={config.port, controller_port})
    tls = security.tls
    lines = {
        "listeners": f"CLIENTS://{host}:{config.port},INTERNAL://{host}:{internal},"
        f"CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"CLIENTS://{host}:{config.port},INTERNAL://{host}:{internal}",
        "inter.broker.listener.name": "INTERNAL",
        "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,INTERNAL:SSL,"
        f"CLIENTS:{security.protocol}",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server_bundle),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca_cert),
        "listener.name.internal.ssl.client.auth": "required",
        "listener.name.clients.ssl.client.auth": "required" if security.client_auth else "none",
    }
    if security.users:
        lines["listener.name.clients.sasl.enabled.mechanisms"] = SCRAM_MECHANISM
        lines[f"listener.name.clients.{SCRAM_MECHANISM.lower()}.sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        )
    return lines


def server_properties(config: KafkaBrokerConfig, controller_port: int) -> str:
    """A single node that is its own controller quorum (static voter), on 127.0.0.1."""
    host = config.host
    lines = {
        "process.roles": "broker,controller",
        "node.id": str(NODE_ID),
        "controller.quorum.voters": f"{NODE_ID}@{host}:{controller_port}",
        "listeners": f"PLAINTEXT://{host}:{config.port},CONTROLLER://{host}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{config.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(config.log_dir),
        # One node: every internal topic has one replica.
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Topics are created by us with their partition count, never by a typo.
        "auto.create.topics.enable": "false",
    }
    if config.security is not None:
        lines.update(_secure_lines(config, controller_port))
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding.

    One id in 64 would start with '-', which kafka-storage's argument parser reads as an
    option ("argument --cluster-id/-t: expected one argument"); Kafka's own
    Uuid.randomUuid draws again in that case, and so do we."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def java_command(config: KafkaBrokerConfig, main_class: str, *args: str) -> list[str]:
    jars = sorted(config.jars_dir.glob("kafka_2.13-*.jar"))
    if not jars:
        raise KafkaBrokerError(
            f"no kafka_2.13 jar in {config.jars_dir}: run `make setup` (or `make kafka`), "
            "or set FRESHNESS_KAFKA_JARS_DIR to the folder holding the Kafka broker jars"
        )
    return [
        "java",
        f"-Xmx{config.heap}",
        f"-Xms{config.heap}",
        "-cp",
        f"{config.jars_dir}/*",
        main_class,
        *args,
    ]


class KafkaBroker(ServerProcess):
    """Starts, waits for and stops one local Kafka broker (a child process)."""

    def __init__(self, config: KafkaBrokerConfig, client: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.process: subprocess.Popen | None = None
        # What our own admin client sets to reach it (its security properties).
        self.client = dict(
            client
            if client is not None
            else (config.security.client_properties() if config.security else {})
        )

    @property
    def bootstrap_servers(self) -> str:
        return self.config.bootstrap_servers

    def start(self, timeout_s: float = 90.0) -> KafkaBroker:
        config = self.config
        if port_is_open(config.host, config.port):
            raise KafkaBrokerError(
                f"port {config.port} is already in use; stop what listens there or set "
                "FRESHNESS_KAFKA_BROKER_PORT to a free port"
            )
        # The client port may come from another process: never the same for both listeners.
        controller_port = config.controller_port or free_port(avoid={config.port})
        config.state_dir.mkdir(parents=True, exist_ok=True)
        properties = config.state_dir / "server.properties"
        properties.write_text(server_properties(config, controller_port))
        properties.chmod(0o600)
        self._format_once(properties)
        log = config.log_path.open("ab")
        self.process = subprocess.Popen(
            java_command(config, SERVER_CLASS, str(properties)),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=child_environment(),
            start_new_session=True,  # its own process group, stopped by our pid
        )
        log.close()
        try:
            self._wait_ready(timeout_s)
            self.create_topics(dict(config.topics or {}))
        except BaseException:
            self.stop()
            raise
        return self

    def _format_once(self, properties: Path) -> None:
        """Formats the log dir on the first start only: reformatting would drop the
        topics whose offsets the raw tables' checkpoints point into."""
        if (self.config.log_dir / "meta.properties").exists():
            return
        argv = java_command(
            self.config,
            STORAGE_TOOL_CLASS,
            "format",
            "-t",
            new_cluster_id(),
            "-c",
            str(properties),
            *(
                arg
                for name, password in (
                    self.config.security.users if self.config.security else {}
                ).items()
                for arg in ("--add-scram", scram_argument(name, password))
            ),
        )
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise KafkaBrokerError(
                f"formatting the Kafka log dir {self.config.log_dir} failed "
                f"(exit {done.returncode}): {(done.stderr or done.stdout)[-2000:]}"
            )

    def _wait_ready(self, timeout_s: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout_s
        admin = None
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise KafkaBrokerError(
                    f"the Kafka broker exited with code {self.process.returncode} while "
                    f"starting; see {self.config.log_path}"
                )
            if port_is_open(self.config.host, self.config.port):
                admin = admin or AdminClient(
                    {"bootstrap.servers": self.bootstrap_servers, **self.client}
                )
                try:
                    metadata = admin.list_topics(timeout=2)
                    if metadata.brokers:
                        return
                except Exception:  # not serving metadata yet (KRaft still electing)
                    pass
            time.sleep(0.25)
        raise KafkaBrokerError(
            f"the Kafka broker did not serve {self.bootstrap_servers} within "
            f"{timeout_s:.0f} s; see {self.config.log_path}"
        )

    def create_topics(self, topics: Mapping[str, int]) -> None:
        """Creates each missing topic with its partition count (an existing one is kept)."""
        create_topics(self.bootstrap_servers, topics, client=self.client)


def create_topics(
    bootstrap_servers: str,
    topics: Mapping[str, int],
    timeout_s: float = 30,
    client: Mapping[str, str] | None = None,
) -> None:
    """Creates each topic that does not exist yet, with one replica (a single node);
    `client`: the admin client's own properties (security)."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient, NewTopic

    if not topics:
        return
    errors = ClientErrors()
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap_servers,
        **(client or {}),
        "error_cb": errors,
    }
    admin = AdminClient(config)
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=n, replication_factor=1) for name, n in topics.items()],
        operation_timeout=timeout_s,
        request_timeout=timeout_s,
    )
    for name, future in futures.items():
        try:
            future.result(timeout=timeout_s)
        except Exception as exc:
            error = exc.args[0] if exc.args else None
            if getattr(error, "code", lambda: None)() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            reason = errors.reason(admin) or str(exc) or type(exc).__name__
            raise KafkaBrokerError(
                f"creating topic {name!r} failed: {refused(bootstrap_servers, reason, exc)}"
            ) from exc
