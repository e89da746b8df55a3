"""The Kafka client's own settings: a librdkafka properties file (FRESHNESS_KAFKA_CONFIG).

A firm's brokers want SASL over TLS (`security.protocol=SASL_SSL`, `sasl.mechanisms=
SCRAM-SHA-512`, `sasl.username`, `ssl.ca.location`) or mutual TLS (`security.protocol=SSL`,
`ssl.certificate.location`, `ssl.key.location`). Those are librdkafka's own property names
(the client inside confluent-kafka), so a file the firm already has for another client
works as it is: one `key=value` a line, `#` or `!` comments, as Java's .properties.

What the file may not say: the properties this project sets itself (where the brokers
are, the consumer group and how offsets are kept: exactly once rests on them), and
`debug` (librdkafka's protocol traces can print a SASL exchange into a log). A secret
(`sasl.password`, `ssl.key.password`, ...) may be in the file when only its owner can read
it, or comes from FRESHNESS_KAFKA_SASL_PASSWORD; never from a command line. An error about
the file names its keys, never a value; `shown` hides every secret.
"""

from __future__ import annotations

import contextlib
import stat
from collections.abc import Mapping
from pathlib import Path

# Set by the project from its own settings; a file that sets them is refused, naming
# the setting to use instead.
OWNED = {
    "bootstrap.servers": "FRESHNESS_KAFKA_BOOTSTRAP",
    "metadata.broker.list": "FRESHNESS_KAFKA_BOOTSTRAP",
    "group.id": "FRESHNESS_KAFKA_GROUP",
    "enable.auto.commit": "nothing: offsets live in the Hudi commits only",
    "enable.auto.offset.store": "nothing: offsets live in the Hudi commits only",
    "auto.offset.reset": "nothing: every read seeks to the table's checkpoint",
    "isolation.level": "nothing: ingestion reads committed messages",
    "debug": "nothing: librdkafka's protocol traces can print credentials into a log",
}
SECRET_KEYS = frozenset(
    {
        "sasl.password",
        "ssl.key.password",
        "ssl.keystore.password",
        "ssl.key.pem",
        "sasl.oauthbearer.client.secret",
    }
)


class KafkaClientConfigError(ValueError):
    """The client properties cannot be used; names the file and the key, never a value."""


def parse_properties(text: str, source: str) -> dict[str, str]:
    """`key=value` (or `key: value`) lines; blank lines and `#` / `!` comments skipped."""
    found: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if cut < 0:
            raise KafkaClientConfigError(
                f"{source}, line {number}: expected key=value (a librdkafka property)"
            )
        key, value = line[:cut].strip(), line[cut + 1 :].strip()
        if key in OWNED:
            raise KafkaClientConfigError(
                f"{source}, line {number}: {key} is set by this project; use {OWNED[key]}"
            )
        if key in found:
            raise KafkaClientConfigError(f"{source}, line {number}: {key} is set twice")
        found[key] = value
    return found


def load_properties(path: Path) -> dict[str, str]:
    """The file's properties; refused when it holds a secret that others can read."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise KafkaClientConfigError(f"{path} does not exist") from None
    except OSError as exc:
        raise KafkaClientConfigError(f"{path} cannot be read: {exc.strerror}") from None
    found = parse_properties(text, str(path))
    secrets = sorted(SECRET_KEYS & found.keys())
    mode = path.stat().st_mode
    if secrets and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KafkaClientConfigError(
            f"{path} holds {', '.join(secrets)} and others can read it "
            f"(mode {stat.S_IMODE(mode):o}): `chmod 600` it, or keep the password in "
            "FRESHNESS_KAFKA_SASL_PASSWORD"
        )
    return found


def shown(properties: Mapping[str, str]) -> str:
    """The properties for a log line or a preflight: keys with values, secrets hidden."""
    pairs = sorted(properties.items())
    return ", ".join(f"{key}={'***' if key in SECRET_KEYS else value}" for key, value in pairs)


# librdkafka's codes (confluent_kafka.KafkaError) for why the brokers would not serve us.
AUTHENTICATION = -169  # SASL: wrong user or password, or a mechanism the broker refuses
SSL = -181  # TLS: the broker's certificate did not verify against ssl.ca.location
TRANSPORT = -195  # e.g. the broker refused our certificate (mutual TLS), or the connection
ALL_BROKERS_DOWN = -187


class ClientErrors:
    """librdkafka's error callback (`error_cb`). A call that cannot reach the brokers fails
    with "Broker transport failure"; why (SASL authentication failed, the certificate did
    not verify) only arrives here, once the client is polled. The reasons librdkafka gives
    name the broker and the failure, never a credential."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, str]] = []

    def __call__(self, error) -> None:
        if len(self.seen) < 50:
            self.seen.append((error.code(), error.str()))

    def reason(self, client=None) -> str | None:
        """The most telling reason seen (polling `client` first, which delivers them)."""
        if client is not None:
            # a closed client has nothing more to say
            with contextlib.suppress(Exception):
                client.poll(0.5)
        for code in (AUTHENTICATION, SSL, TRANSPORT, ALL_BROKERS_DOWN):
            found = [text for c, text in self.seen if c == code]
            if found:
                return found[0]
        return self.seen[0][1] if self.seen else None


def refused(bootstrap: str, reason: str | None, failure: object) -> str:
    """The error text of a client the brokers did not serve: where, and why."""
    why = reason or str(failure)
    hint = ""
    if reason and ("SASL" in reason or "certificate" in reason or "SSL" in reason):
        hint = (
            "; check FRESHNESS_KAFKA_CONFIG (security.protocol, sasl.*, ssl.*) and "
            "FRESHNESS_KAFKA_SASL_PASSWORD"
        )
    return f"Kafka at {bootstrap} did not serve us: {why}{hint}"
