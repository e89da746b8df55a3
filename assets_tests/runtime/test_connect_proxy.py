"""The way into the Spark service from other hosts: Spark Connect has no authentication,
so the service refuses a non-loopback bind unless declared open, and runs elsewhere come in
through the TLS proxy, which admits a client certificate the CA signed and nothing else."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.runtime.connect_proxy import ConnectProxy, ProxyConfig
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.runtime.spark_service import (
    SparkService,
    SparkServiceError,
    is_loopback,
    refuse_open_bind,
    service_config,
)
from freshness_pipeline.runtime.tls import make_ca


def test_a_service_bound_beyond_loopback_is_refused_before_it_starts(tmp_path: Path):
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    settings = load_settings({"FRESHNESS_SPARK_SERVICE_BIND": "0.0.0.0"})
    with pytest.raises(SparkServiceError, match="connect-proxy") as refused:
        SparkService(service_config(settings, tmp_path)).start()
    assert "FRESHNESS_SPARK_SERVICE_OPEN" in str(refused.value)
    assert not (tmp_path / "spark-service.log").exists()  # nothing was started
    refuse_open_bind("0.0.0.0", declared_open=True)  # a network control, declared


def test_a_tls_client_of_the_proxy_names_all_three_files(tmp_path: Path):
    tls = make_ca(tmp_path / "ca")
    with pytest.raises(SettingsError, match="FRESHNESS_SPARK_REMOTE_KEY"):
        load_settings(
            {
                "FRESHNESS_SPARK_REMOTE_CA": str(tls.ca_cert),
                "FRESHNESS_SPARK_REMOTE_CERT": str(tls.client_cert),
            }
        )


def _handshake(port: int, ca: Path, client) -> None:
    """A TLS client of the proxy: its certificate (a TlsFiles' client pair, or None)."""
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(["h2"])
    if client is not None:
        context.load_cert_chain(client.client_cert, client.client_key)
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    with raw, context.wrap_socket(raw, server_hostname="localhost") as conn:
        conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        if not conn.recv(1):  # TLS 1.3 reports a refused certificate on the first read
            raise ConnectionError("closed by the proxy")


@pytest.mark.spark
def test_the_proxy_lets_a_certified_run_in_and_turns_others_away(spark_service, tmp_path):
    from freshness_pipeline.runtime.spark import build_spark_session

    tls = make_ca(tmp_path / "ca")
    other = make_ca(tmp_path / "other", client_name="stranger", ca_name="someone else's CA")
    target = int(spark_service.url.rsplit(":", 1)[1])
    config = ProxyConfig(
        "127.0.0.1", free_port(), target, tls.server_cert, tls.server_key, tls.ca_cert
    )
    url = f"sc://127.0.0.1:{config.listen_port}/;use_ssl=true"
    with ConnectProxy(config) as proxy:
        own = {
            "FRESHNESS_SPARK_REMOTE_CA": str(tls.ca_cert),
            "FRESHNESS_SPARK_REMOTE_CERT": str(tls.client_cert),
            "FRESHNESS_SPARK_REMOTE_KEY": str(tls.client_key),
        }
        session = build_spark_session(load_settings(own), remote=url, app_name="proxied")
        try:
            assert session.range(10).count() == 10
        finally:
            session.stop()
        assert proxy.served >= 1
        # A certificate from another CA, or none: the handshake fails, nothing reaches the
        # service (a raw TLS client: pyspark's would retry an unavailable channel for
        # minutes).
        _handshake(config.listen_port, tls.ca_cert, tls)  # ours: through, answered
        served = proxy.served
        for cert in (other, None):
            with pytest.raises((ssl.SSLError, ConnectionError)):
                _handshake(config.listen_port, tls.ca_cert, cert)
        assert proxy.served == served


def test_protections_say_what_each_service_is_under_and_when_nothing(tmp_path: Path):
    from freshness_pipeline.runtime.preflight import protections

    tls = make_ca(tmp_path / "ca")
    client = tmp_path / "kafka.properties"
    client.write_text(
        f"security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nssl.ca.location={tls.ca_cert}\n"
    )
    base = {
        "FRESHNESS_SOURCE": "kafka",
        "FRESHNESS_SPARK_MASTER": "spark://127.0.0.1:7077",
        "FRESHNESS_POSTGRES_URL": "postgresql+psycopg2://dagster@db:5432/dagster",
    }
    open_lines = "\n".join(protections(load_settings(base)))
    assert "PLAINTEXT: no TLS, no authentication" in open_lines
    assert "spark.authenticate OFF" in open_lines and "unverified" in open_lines
    secure = {
        **base,
        "FRESHNESS_KAFKA_CONFIG": str(client),
        "FRESHNESS_KAFKA_SASL_PASSWORD": "kafka-pw-123",
        "FRESHNESS_SPARK_AUTH_SECRET": "spark-secret-456",
        "FRESHNESS_POSTGRES_SSLMODE": "verify-full",
        "FRESHNESS_POSTGRES_SSLROOTCERT": str(tls.ca_cert),
    }
    lines = "\n".join(protections(load_settings(secure)))
    assert "SASL_SSL (SCRAM-SHA-512 over TLS" in lines and "spark.authenticate on" in lines
    assert "sslmode verify-full" in lines and "loopback only" in lines
    assert "kafka-pw-123" not in lines and "spark-secret-456" not in lines
