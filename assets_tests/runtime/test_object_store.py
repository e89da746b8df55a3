"""The local object store (s3proxy) and the S3 preflight: a real S3 API server on
127.0.0.1, started and stopped by the pid it started; each bad setting gives one clear
error before anything is written."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from assets_tests.conftest import assert_listens_on_loopback_only
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.runtime.object_store import (
    ObjectStoreConfig,
    ObjectStoreError,
    ObjectStoreServer,
    check_object_store,
)

pytestmark = pytest.mark.spark  # starts a JVM server


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ObjectStoreServer]:
    root = tmp_path_factory.mktemp("object_store")
    with ObjectStoreServer(ObjectStoreConfig(root / "data", root / "logs")) as server:
        yield server


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(") ", 1)[1][0] != "Z"


def test_start_creates_bucket_and_stop_ends_the_pid(tmp_path: Path) -> None:
    server = ObjectStoreServer(
        ObjectStoreConfig(tmp_path / "data", tmp_path / "logs", bucket="fresh-bucket")
    )
    with server:
        pid = server.pid
        assert pid is not None and _alive(pid)
        assert server.endpoint.startswith("http://127.0.0.1:")
        assert_listens_on_loopback_only(server.listening(), "the object store")
        fs = server.filesystem()
        assert fs.get_file_info("fresh-bucket").type == pafs.FileType.Directory
        with fs.open_output_stream("fresh-bucket/tables/probe.txt") as out:
            out.write(b"written through the S3 API")
        with fs.open_input_stream("fresh-bucket/tables/probe.txt") as handle:
            assert handle.read() == b"written through the S3 API"
        # the filesystem backend keeps objects as files under data_dir
        assert (tmp_path / "data" / "fresh-bucket" / "tables" / "probe.txt").exists()
    assert not _alive(pid)
    assert server.process is not None and server.process.poll() is not None


def test_settings_env_points_settings_at_the_store(store: ObjectStoreServer) -> None:
    settings = load_settings(store.settings_env("tables"))
    assert settings.lakehouse.root.hudi_rs == "s3://lakehouse/tables"
    assert settings.table_uri("trade_raw") == "s3a://lakehouse/tables/trade_raw"
    assert settings.s3.endpoint == store.endpoint and settings.s3.path_style
    check_object_store(settings)  # passes: reachable, bucket there, keys accepted
    secret = store.config.secret_key
    assert secret not in repr(settings) and secret not in repr(settings.lakehouse)


@pytest.mark.parametrize(
    ("change", "names"),
    [
        ({"FRESHNESS_S3_ENDPOINT": "http://127.0.0.1:1"}, "endpoint unreachable"),
        ({"FRESHNESS_LAKEHOUSE": "s3://no-such-bucket/tables"}, "bucket missing"),
        ({"AWS_SECRET_ACCESS_KEY": "not-the-secret"}, "credentials refused"),
        ({"AWS_ACCESS_KEY_ID": "nobody", "AWS_SECRET_ACCESS_KEY": "x"}, "credentials refused"),
    ],
)
def test_bad_object_store_settings_fail_the_preflight(
    store: ObjectStoreServer, change: dict[str, str], names: str
) -> None:
    before = sorted(p.relative_to(store.config.data_dir) for p in store.config.data_dir.rglob("*"))
    settings = load_settings({**store.settings_env(), **change})
    with pytest.raises(ObjectStoreError, match=names) as error:
        check_object_store(settings)
    assert store.config.secret_key not in str(error.value)
    after = sorted(p.relative_to(store.config.data_dir) for p in store.config.data_dir.rglob("*"))
    assert after == before  # nothing written


def test_local_lakehouse_needs_no_store(tmp_path: Path) -> None:
    check_object_store(load_settings({"FRESHNESS_LAKEHOUSE": str(tmp_path / "tables")}))


def test_an_https_store_with_a_private_ca_is_trusted_only_with_that_ca(tmp_path: Path) -> None:
    # HTTPS only (no plain listener), the server certificate from a CA made here: with
    # FRESHNESS_S3_CA_BUNDLE every client reaches it (pyarrow, hudi-rs, the JVMs through
    # a truststore), without it the preflight refuses and names the certificate.
    from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
    from freshness_pipeline.runtime.spark import truststore_options
    from freshness_pipeline.runtime.tls import make_ca

    tls = make_ca(tmp_path / "ca")
    config = ObjectStoreConfig(tmp_path / "data", tmp_path / "logs", bucket="tls-bucket", tls=tls)
    with ObjectStoreServer(config) as server:
        assert server.endpoint.startswith("https://127.0.0.1:")
        assert_listens_on_loopback_only(server.listening(), "the object store")
        assert "secure-endpoint" in (tmp_path / "logs" / "s3proxy.conf").read_text()
        env = server.settings_env()
        assert env["FRESHNESS_S3_CA_BUNDLE"] == str(tls.ca_cert)
        settings = load_settings(env)
        check_object_store(settings)  # pyarrow, trusting the bundle
        with pytest.raises(TableNotFound):  # pyarrow through the metadata reader
            HudiTableMetadata(settings.lakehouse.table("trade_raw"))
        from hudi import HudiTableBuilder

        location = settings.lakehouse.table("trade_raw")
        builder = HudiTableBuilder.from_base_uri(location.hudi_rs)
        with pytest.raises(Exception, match="not found") as missing:  # reached, over TLS
            builder.with_storage_options(location.object_store_options).build()
        assert "error sending request" not in str(missing.value)
        options = truststore_options(tls.ca_cert)
        assert any(o.startswith("-Djavax.net.ssl.trustStore=") for o in options)
        without = {k: v for k, v in env.items() if k != "FRESHNESS_S3_CA_BUNDLE"}
        with pytest.raises(ObjectStoreError, match="certificate"):
            check_object_store(load_settings(without))
