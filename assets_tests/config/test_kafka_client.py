"""The Kafka client's own properties (FRESHNESS_KAFKA_CONFIG): parsed like a librdkafka or
Java properties file, refused with the file and key named (never a value) when they set
what the project owns or hold a secret others can read; merged under ours."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshness_pipeline.config.kafka_client import (
    AUTHENTICATION,
    SSL,
    ClientErrors,
    KafkaClientConfigError,
    load_properties,
    parse_properties,
    refused,
    shown,
)
from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings

SECRET = "hunter2-very-secret"


def _file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "client.properties"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_properties_parse_like_librdkafka_files():
    text = "# a comment\n! another\n\nsecurity.protocol=SASL_SSL\nsasl.mechanisms: SCRAM-SHA-512\n"
    text += "ssl.ca.location = /etc/ssl/firm-ca.pem\n"
    assert parse_properties(text, "f") == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "ssl.ca.location": "/etc/ssl/firm-ca.pem",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "bootstrap.servers=b:9092\n",
            "line 1: bootstrap.servers is set by this project; use FRESHNESS_KAFKA_BOOTSTRAP",
        ),
        ("a=1\nenable.auto.commit=true\n", "line 2: enable.auto.commit is set by this project"),
        ("debug=all\n", "debug is set by this project"),
        ("a=1\na=2\n", "line 2: a is set twice"),
        ("just-a-word\n", "line 1: expected key=value"),
    ],
)
def test_bad_properties_are_refused_naming_file_and_line(text, message):
    with pytest.raises(KafkaClientConfigError, match=message):
        parse_properties(text, "client.properties")


def test_a_secret_in_a_file_others_can_read_is_refused_without_quoting_it(tmp_path):
    path = _file(tmp_path, f"sasl.username=u\nsasl.password={SECRET}\n", mode=0o644)
    with pytest.raises(KafkaClientConfigError) as refused_:
        load_properties(path)
    assert "sasl.password" in str(refused_.value) and "chmod 600" in str(refused_.value)
    assert SECRET not in str(refused_.value)
    path.chmod(0o600)
    assert load_properties(path)["sasl.password"] == SECRET
    # a file without a secret may be readable by the group (a CA path, a user name)
    assert load_properties(_file(tmp_path, "sasl.username=u\n", mode=0o644))


def test_settings_merge_the_file_and_the_password_under_ours(tmp_path):
    path = _file(tmp_path, "security.protocol=SASL_SSL\nsasl.username=ingest\n", mode=0o644)
    env = {"FRESHNESS_KAFKA_CONFIG": str(path), "FRESHNESS_KAFKA_SASL_PASSWORD": SECRET}
    settings = load_settings(env)
    config = settings.kafka.client_config(**{"group.id": "g"})
    assert config["security.protocol"] == "SASL_SSL" and config["sasl.password"] == SECRET
    assert config["bootstrap.servers"] == settings.kafka.bootstrap_servers
    assert config["group.id"] == "g"
    assert SECRET not in repr(settings) and SECRET not in repr(settings.kafka)


def test_a_password_in_both_places_and_a_missing_file_are_refused(tmp_path):
    path = _file(tmp_path, f"sasl.password={SECRET}\n")
    env = {"FRESHNESS_KAFKA_CONFIG": str(path), "FRESHNESS_KAFKA_SASL_PASSWORD": "other"}
    with pytest.raises(SettingsError, match="keep one") as both:
        load_settings(env)
    assert SECRET not in str(both.value) and "other" not in str(both.value)
    with pytest.raises(SettingsError, match="FRESHNESS_KAFKA_CONFIG.*does not exist"):
        load_settings({"FRESHNESS_KAFKA_CONFIG": str(tmp_path / "none.properties")})


def test_shown_hides_every_secret():
    text = shown({"sasl.password": SECRET, "ssl.key.password": SECRET, "sasl.username": "u"})
    assert SECRET not in text and "sasl.username=u" in text and "sasl.password=***" in text


class _Error:
    def __init__(self, code: int, text: str) -> None:
        self._code, self._text = code, text

    def code(self) -> int:
        return self._code

    def str(self) -> str:
        return self._text


def test_the_reason_a_broker_refused_us_is_the_most_telling_one_seen():
    errors = ClientErrors()
    errors(_Error(-187, "1/1 brokers are down"))
    errors(_Error(AUTHENTICATION, "b:9093/bootstrap: SASL authentication error: invalid"))
    errors(_Error(SSL, "b:9093/bootstrap: SSL handshake failed"))
    assert errors.reason() == "b:9093/bootstrap: SASL authentication error: invalid"
    text = refused("b:9093", errors.reason(), "Broker transport failure")
    assert text.startswith("Kafka at b:9093 did not serve us: b:9093/bootstrap: SASL")
    assert "FRESHNESS_KAFKA_CONFIG" in text
    assert refused("b:9093", None, "timed out") == "Kafka at b:9093 did not serve us: timed out"
