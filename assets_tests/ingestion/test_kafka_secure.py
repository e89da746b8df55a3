"""Ingestion from a Kafka broker that wants what a firm's brokers want: SASL/SCRAM-SHA-512
over TLS, or mutual TLS, with a CA made here at test time (runtime/tls.py). The client's
settings come from a librdkafka properties file (FRESHNESS_KAFKA_CONFIG) and the password
from FRESHNESS_KAFKA_SASL_PASSWORD. With the right ones ingestion commits every valid
message exactly once; a wrong password or a certificate from another CA fails before
anything is written, with an error naming the broker and the reason, never the password."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assets_tests.ingestion.test_ingest import UNIVERSE
from assets_tests.ingestion.test_kafka_ingest import (
    KAFKA_JARS,
    drain,
    fresh_topics,
    produce,
    raw_event_ids,
    topic_contents,
)
from freshness_pipeline.config.settings import Settings, load_settings
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.ingestion.kafka_ingest import KafkaIngestor
from freshness_pipeline.ingestion.kafka_reader import KafkaSourceError
from freshness_pipeline.ingestion.master import load_company_master
from freshness_pipeline.runtime.kafka_broker import (
    BrokerSecurity,
    KafkaBroker,
    KafkaBrokerConfig,
)
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.runtime.tls import TlsFiles, make_ca
from freshness_pipeline.stream.kafka_sink import KafkaDeliveryError, KafkaSink

pytestmark = pytest.mark.spark

USER = "ingest"
PASSWORD = secrets.token_urlsafe(18)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_ca(tmp_path_factory.mktemp("ca"))


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[KafkaBroker]:
    security = BrokerSecurity(tls, users={USER: PASSWORD})
    config = KafkaBrokerConfig(
        jars_dir=KAFKA_JARS,
        state_dir=tmp_path_factory.mktemp("kafka-sasl"),
        port=free_port(),
        security=security,
    )
    with KafkaBroker(config) as running:
        yield running


def client_file(folder: Path, **properties: str) -> Path:
    path = folder / f"client-{uuid.uuid4().hex[:6]}.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    path.chmod(0o600)
    return path


def secure_settings(
    broker: KafkaBroker, lakehouse: Settings, monkeypatch, properties: Path, password: str
) -> Settings:
    return fresh_topics(
        broker,
        monkeypatch,
        FRESHNESS_KAFKA_CONFIG=str(properties),
        FRESHNESS_KAFKA_SASL_PASSWORD=password,
    )


def sasl_properties(folder: Path, ca: Path) -> Path:
    return client_file(
        folder,
        **{
            "security.protocol": "SASL_SSL",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": USER,
            "ssl.ca.location": str(ca),
        },
    )


def assert_nothing_committed(settings: Settings) -> None:
    for table in ("price_raw", "trade_raw"):
        try:
            commits = HudiTableMetadata(settings.table_uri(table)).commits()
        except TableNotFound:
            continue
        assert commits == [], f"{table} has commits"


def test_sasl_ssl_ingestion_commits_every_message_exactly_once(
    spark, sasl_broker, tls, lakehouse, monkeypatch, tmp_path
):
    settings = secure_settings(
        sasl_broker, lakehouse, monkeypatch, sasl_properties(tmp_path, tls.ca_cert), PASSWORD
    )
    assert PASSWORD not in repr(settings)  # the secret never in a repr (nor a log line)
    load_company_master(spark, settings, UNIVERSE)
    assert produce(settings, seconds=3, rate=300, malformed=0.02, seed=11) > 0
    first = KafkaIngestor(spark, settings, max_messages=400)
    drain(first)
    first.close()
    again = KafkaIngestor(spark, settings)  # resumes from the checkpoint: nothing new
    assert again.ingest_once() == []
    again.close()
    for stream in ("price", "trade"):
        good, _, _ = topic_contents(settings, stream)
        ids = raw_event_ids(spark, settings, stream)
        assert good and len(ids) == len(set(ids)) and set(ids) == good, stream


@pytest.mark.parametrize("fault", ["wrong password", "another CA"])
def test_a_refused_client_fails_naming_the_broker_and_commits_nothing(
    spark, sasl_broker, tls, lakehouse, monkeypatch, tmp_path, fault
):
    ca, password = tls.ca_cert, PASSWORD
    if fault == "wrong password":
        password = "not-" + PASSWORD
    else:
        ca = make_ca(tmp_path / "other-ca", ca_name="someone else's CA").ca_cert
    properties = sasl_properties(tmp_path, ca)
    settings = secure_settings(sasl_broker, lakehouse, monkeypatch, properties, password)
    load_company_master(spark, settings, UNIVERSE)
    with pytest.raises(KafkaSourceError) as refused:
        KafkaIngestor(spark, settings)
    text = str(refused.value)
    assert sasl_broker.bootstrap_servers in text and "FRESHNESS_KAFKA_CONFIG" in text
    expected = "SASL authentication" if fault == "wrong password" else "certificate verify failed"
    assert expected in text, text
    assert PASSWORD not in text and password not in text
    with pytest.raises(KafkaDeliveryError, match=expected):  # the replayer's producer too
        KafkaSink(settings.kafka)
    assert_nothing_committed(settings)


def test_mutual_tls_admits_our_certificate_and_refuses_a_client_without_one(
    tmp_path, tls, monkeypatch
):
    config = KafkaBrokerConfig(
        jars_dir=KAFKA_JARS,
        state_dir=tmp_path / "kafka-mtls",
        port=free_port(),
        security=BrokerSecurity(tls, client_auth=True),
        topics={"prices": 2, "trades": 2},
    )
    with KafkaBroker(config) as broker:
        monkeypatch.setenv("FRESHNESS_KAFKA_BOOTSTRAP", broker.bootstrap_servers)
        base = {"security.protocol": "SSL", "ssl.ca.location": str(tls.ca_cert)}
        keyed = {
            **base,
            "ssl.certificate.location": str(tls.client_cert),
            "ssl.key.location": str(tls.client_key),
        }
        monkeypatch.setenv("FRESHNESS_KAFKA_CONFIG", str(client_file(tmp_path, **keyed)))
        sink = KafkaSink(load_settings().kafka)  # admitted: metadata served
        sink.producer.flush(5)
        monkeypatch.setenv("FRESHNESS_KAFKA_CONFIG", str(client_file(tmp_path, **base)))
        with pytest.raises(KafkaDeliveryError, match=broker.bootstrap_servers):
            KafkaSink(load_settings().kafka)
