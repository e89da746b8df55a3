"""The cluster profile's servers: a Spark standalone master + worker and Postgres, each
started on 127.0.0.1 and a free port, and stopped by the process ids started here; a
server the settings name but that does not answer is refused by the preflight, naming it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pytest

from assets_tests.conftest import assert_listens_on_loopback_only
from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.runtime.dagster_instance import open_instance, write_instance_yaml
from freshness_pipeline.runtime.ports import free_port, port_is_open
from freshness_pipeline.runtime.postgres_server import PostgresConfig, PostgresServer
from freshness_pipeline.runtime.preflight import PreflightError, preflight
from freshness_pipeline.runtime.processes import listening_addresses
from freshness_pipeline.runtime.spark_cluster import SparkCluster, SparkClusterConfig
from freshness_pipeline.runtime.stack import pid_alive
from freshness_pipeline.runtime.tls import make_ca


@pytest.fixture
def postgres_dir() -> Iterator[Path]:
    """A folder the `postgres` user can enter (pytest's own tmp folders are 0700 to root)."""
    with tempfile.TemporaryDirectory(prefix="freshness_pg_") as folder:
        os.chmod(folder, 0o711)
        yield Path(folder) / "postgres"


@pytest.mark.spark
def test_master_and_worker_start_on_loopback_and_stop_by_pid(tmp_path: Path):
    cluster = SparkCluster(SparkClusterConfig(tmp_path, worker_cores=2, worker_memory="1g"))
    with cluster:
        pids = cluster.pids
        assert set(pids) == {"spark-master", "spark-worker"}
        assert all(pid_alive(pid) for pid in pids.values())
        state = cluster.master_state()
        assert state["url"] == cluster.master_url == f"spark://127.0.0.1:{cluster.master_port}"
        assert state["aliveworkers"] == 1 and state["cores"] == 2 and state["memory"] == 1024
        assert state["workers"][0]["host"] == "127.0.0.1"
        for name, pid in pids.items():
            assert_listens_on_loopback_only(listening_addresses(pid), name)
        preflight(load_settings({"FRESHNESS_SPARK_MASTER": cluster.master_url}))
    assert not any(pid_alive(pid) for pid in pids.values())
    assert not port_is_open("127.0.0.1", cluster.master_port)


@pytest.mark.spark
def test_postgres_starts_creates_the_database_and_stops_by_pid(postgres_dir: Path, tmp_path):
    with PostgresServer(PostgresConfig(postgres_dir, database="freshness_test")) as server:
        pid = server.pid
        assert pid_alive(pid)
        assert_listens_on_loopback_only(server.listening(), "Postgres")
        conn = server._connect("freshness_test")
        with conn.cursor() as cursor:
            cursor.execute("SHOW listen_addresses")
            assert cursor.fetchone()[0] == "127.0.0.1"
        conn.close()
        env = {
            "FRESHNESS_POSTGRES_URL": server.url,
            "FRESHNESS_POSTGRES_PASSWORD": server.password,
        }
        preflight(load_settings(env))
        # Dagster's run, event-log and schedule storage on it, from the generated yaml.
        home = write_instance_yaml(tmp_path / "home", server.url).parent
        os.environ["FRESHNESS_POSTGRES_PASSWORD"] = server.password
        try:
            with dg.DagsterInstance.from_config(str(home)) as instance:
                assert type(instance.run_storage).__name__ == "PostgresRunStorage"
                assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
                assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
                assert instance.get_runs() == []
        finally:
            del os.environ["FRESHNESS_POSTGRES_PASSWORD"]
        with pytest.raises(PreflightError, match="Postgres .* refused us: .*password"):
            preflight(load_settings({**env, "FRESHNESS_POSTGRES_PASSWORD": "wrong"}))
        port = server.port
    assert not pid_alive(pid)
    assert not port_is_open("127.0.0.1", port)


def test_preflight_names_every_server_that_does_not_answer():
    dead = free_port()
    settings = load_settings(
        {
            "FRESHNESS_SPARK_MASTER": f"spark://127.0.0.1:{dead}",
            "FRESHNESS_POSTGRES_URL": f"postgresql+psycopg2://dagster@127.0.0.1:{dead}/dagster",
        }
    )
    with pytest.raises(PreflightError) as caught:
        preflight(settings)
    message = str(caught.value)
    assert message.startswith("cannot start: ")
    assert f"Spark master spark://127.0.0.1:{dead} (FRESHNESS_SPARK_MASTER) is unreachable" in (
        message
    )
    assert "(FRESHNESS_POSTGRES_URL) refused us" in message


@pytest.mark.spark
def test_postgres_over_tls_refuses_a_client_without_the_ca_and_serves_dagster(
    postgres_dir: Path, tmp_path
):
    import psycopg2

    ca_dir = postgres_dir.parent / "ca"
    tls = make_ca(ca_dir)
    other = make_ca(postgres_dir.parent / "other-ca", ca_name="someone else's CA")
    with PostgresServer(PostgresConfig(postgres_dir, tls=tls)) as server:
        assert server.params == {"sslmode": "verify-full", "sslrootcert": str(tls.ca_cert)}
        env = {
            "FRESHNESS_POSTGRES_URL": server.url,
            "FRESHNESS_POSTGRES_PASSWORD": server.password,
            "FRESHNESS_POSTGRES_SSLMODE": "verify-full",
            "FRESHNESS_POSTGRES_SSLROOTCERT": str(tls.ca_cert),
        }
        settings = load_settings(env)
        preflight(settings)  # the CA verifies the server's certificate and name
        # Without the CA: the server's certificate does not verify; without TLS: refused.
        with pytest.raises(PreflightError, match="refused us: .*certificate verify failed"):
            preflight(load_settings({**env, "FRESHNESS_POSTGRES_SSLROOTCERT": str(other.ca_cert)}))
        with pytest.raises(PreflightError, match="no encryption"):
            preflight(load_settings({**env, "FRESHNESS_POSTGRES_SSLMODE": "disable"}))
        with pytest.raises(psycopg2.OperationalError, match="no encryption"):
            psycopg2.connect(
                host="127.0.0.1",
                port=server.port,
                user="dagster",
                password=server.password,
                dbname="dagster",
                sslmode="disable",
                connect_timeout=3,
            )
        # Dagster's storage over TLS, from the generated yaml's params.
        home = write_instance_yaml(tmp_path / "home", server.url, 3, settings.postgres_params)
        assert "sslrootcert" in home.read_text() and server.password not in home.read_text()
        with open_instance(home.parent, settings) as instance:
            assert type(instance.run_storage).__name__ == "PostgresRunStorage"
            assert instance.get_runs() == []


def test_a_verifying_sslmode_without_a_ca_is_refused():
    with pytest.raises(SettingsError, match="needs FRESHNESS_POSTGRES_SSLROOTCERT"):
        load_settings({"FRESHNESS_POSTGRES_SSLMODE": "verify-full"})
    assert load_settings({"FRESHNESS_POSTGRES_SSLMODE": "require"}).postgres_params == {
        "sslmode": "require"
    }


def stranger_refused(cluster: SparkCluster, folder: Path, wait_s: float = 25.0) -> bool:
    """Whether a worker that does not hold the cluster's secret is turned away: it starts,
    keeps being refused for not speaking the authenticated protocol, never registers."""
    import subprocess
    import time

    from freshness_pipeline.config.settings import child_environment
    from freshness_pipeline.runtime.spark_cluster import (
        AUTH_SECRET_ENV,
        HOST,
        WORKER_CLASS,
        spark_class_path,
    )

    (folder / "conf").mkdir(parents=True)
    env = child_environment(
        extra={
            "SPARK_LOCAL_IP": HOST,
            "SPARK_HOME": None,
            AUTH_SECRET_ENV: None,
            "SPARK_CONF_DIR": str(folder / "conf"),
        }
    )
    workers = cluster.alive_workers()
    with (folder / "worker.log").open("wb") as log:
        stranger = subprocess.Popen(
            [
                str(spark_class_path()),
                WORKER_CLASS,
                "--host",
                HOST,
                "--port",
                str(free_port()),
                "--webui-port",
                str(free_port()),
                "--cores",
                "1",
                "--memory",
                "512m",
                "--work-dir",
                str(folder),
                cluster.master_url,
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            time.sleep(wait_s)
            running = stranger.poll() is None
            joined = cluster.alive_workers() > workers
        finally:
            stranger.kill()
            stranger.wait()
    turned_away = "Expected SaslMessage" in (folder / "worker.log").read_text()
    return running and not joined and turned_away
