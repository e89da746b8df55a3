"""The cluster profile end to end: Postgres, a Spark standalone master + worker, the
shared Spark service and ingestion as applications of that master, Dagster's storage in
Postgres, the lakehouse on the object store (the service's s3a settings on its command
line, the keys only in its environment). A short stream must drain through the sensor's
runs to the independent oracle's answer (`oracle.py`), through Kafka over SASL_SSL with
every server secured as a firm runs it. (The open servers are the same processes with the
protections off, `make demo-cluster`; a second end-to-end run of them took four minutes of
CI and reached no code this one does not: the landing folder's path to the tables is the
chaos test's and the experiment's.)"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import dagster as dg
import pytest

from assets_tests.conftest import short_stack_config, table_watermark
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.execution import oracle
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.hudi.streamer_checkpoint import STREAMER_CHECKPOINT_KEY
from freshness_pipeline.ingestion.kafka_ingest import consumer_lag
from freshness_pipeline.lab.experiment.staleness import raw_ancestors
from freshness_pipeline.runtime.cluster_profile import ClusterProfile
from freshness_pipeline.runtime.ports import free_port
from freshness_pipeline.runtime.stack import Stack
from freshness_pipeline.scheduling.run_plan import RunPlan

pytestmark = pytest.mark.spark
DRAIN_TIMEOUT_S = 480  # 6.4 min whole test at a load average of 11 (four agents)


def _settled(lakehouse: Lakehouse) -> bool:
    """Each of the six tables at its raw inputs' final watermark (through Kafka the two raw
    tables' last arrivals are ingestion's, seconds apart: METHOD 5.2)."""
    raw = {t: table_watermark(lakehouse, t) for t in RAW_TABLES}
    return None not in raw.values() and all(
        table_watermark(lakehouse, j) == min(raw[r] for r in raw_ancestors(j)) for j in JOBS
    )


def _drain(stack: Stack, lakehouse: Lakehouse, landing: Path) -> bool:
    """Supervising, until the stream has ended, every landed file is ingested, every table
    has settled and the raw watermarks held over three polls (two ingestion intervals:
    nothing left in the topics)."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    seen: list[tuple] = []
    while time.monotonic() < deadline:
        stack.supervise()
        ended = stack.process("replay").poll() is not None and not any(landing.rglob("*.jsonl"))
        if ended and _settled(lakehouse):
            seen.append(tuple(table_watermark(lakehouse, t) for t in RAW_TABLES))
            if len(seen) >= 3 and len(set(seen[-3:])) == 1:
                return True
        time.sleep(2)
    return False


def _assert_secured(settings, profile: ClusterProfile, tmp_path: Path) -> None:
    """Each server is under its protection, and refuses who lacks it."""
    import psycopg2

    from assets_tests.runtime.test_cluster_servers import stranger_refused
    from freshness_pipeline.runtime.preflight import protections

    lines = "\n".join(protections(settings))
    for expected in ("sslmode verify-full", "HTTPS, private CA", "spark.authenticate on"):
        assert expected in lines, lines
    with pytest.raises(psycopg2.OperationalError, match="no encryption"):
        psycopg2.connect(
            host="127.0.0.1",
            port=profile.postgres.port,
            user="dagster",
            password=profile.postgres.password,
            dbname="dagster",
            sslmode="disable",
            connect_timeout=3,
        )
    assert stranger_refused(profile.spark, tmp_path / "stranger")
    secret = settings.spark_auth_secret.encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):  # on no command line
        try:
            assert secret not in Path(f"/proc/{pid}/cmdline").read_bytes(), pid
        except OSError:
            continue


def test_a_short_stream_drains_through_the_secure_cluster_profile_to_the_oracles_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The servers as a firm runs them (a CA made for them; Postgres over TLS only, the
    # object store over HTTPS only, spark.authenticate), reached through settings alone.
    landing = tmp_path / "landing"
    monkeypatch.delenv("FRESHNESS_SPARK_REMOTE", raising=False)
    for name, value in {
        # The whole profile: the lakehouse on the object store (the profile starts s3proxy
        # and points the lakehouse at s3://<bucket>/tables), not this folder. (One test
        # for CI's time; the folder variant is FRESHNESS_CLUSTER_LAKEHOUSE=folder.)
        "FRESHNESS_LAKEHOUSE": str(tmp_path / "tables"),
        "FRESHNESS_CLUSTER_LAKEHOUSE": "object_store",
        "FRESHNESS_LANDING": str(landing),
        "FRESHNESS_TICK_S": "5",
        "FRESHNESS_SPARK_SERVICE_PORT": str(free_port()),
        "FRESHNESS_SPARK_SERVICE_MEMORY": "2g",
        # the stream through the profile's Kafka broker over SASL_SSL as well
        "FRESHNESS_CLUSTER_SECURE": "true",
        "FRESHNESS_SOURCE": "kafka",
    }.items():
        monkeypatch.setenv(name, value)
    # Postgres runs as the `postgres` user, which may not enter pytest's 0700 folders.
    with tempfile.TemporaryDirectory(prefix="freshness_cluster_") as root:
        os.chmod(root, 0o711)
        with ClusterProfile(load_settings(), Path(root)) as profile:
            for name, value in profile.settings_env.items():
                monkeypatch.setenv(name, value)  # the supervisor opens the same instance
            lakehouse = load_settings().lakehouse
            assert not lakehouse.root.is_local, lakehouse.uri  # on the object store
            _assert_secured(load_settings(), profile, tmp_path)
            stack = Stack(
                short_stack_config(tmp_path, profile.env, profile.dagster_home, seed=7),
                load_settings(),
            )
            stack.start()
            try:
                drained = _drain(stack, lakehouse, landing)
                apps = {app["name"] for app in profile.spark.master_state()["activeapps"]}
            finally:
                stack.stop()
            assert drained, (tmp_path / "logs" / "dagster.log").read_text()[-3000:]
            # The service got the store's keys in its environment only, never on its
            # command line or in its log.
            assert stack.service is not None
            secret = load_settings().s3.secret_access_key
            assert secret and secret not in stack.service.config.log_path.read_text()
            # Both Spark drivers ran as applications of the profile's master.
            assert {"freshness_spark_service", "ingestion"} <= apps
            with dg.DagsterInstance.from_config(str(profile.dagster_home)) as instance:
                assert type(instance.run_storage).__name__ == "PostgresRunStorage"
                runs = [r for r in instance.get_runs() if RunPlan.from_run(r) is not None]
                # every table by a successful sensor run (as its planned asset or a step of
                # its chain)
                succeeded = {
                    key.to_user_string()
                    for r in runs
                    if r.status == dg.DagsterRunStatus.SUCCESS
                    for key in r.asset_selection or ()
                }
                assert succeeded == set(JOBS)
            _assert_through_kafka(load_settings(), lakehouse, landing)
            # Through Kafka the joined tables stop at the earlier raw watermark, where a
            # recomputation cannot tell which partial rows they ever held: the oracle
            # judges the aggregates there (the joined tables' exactness does not depend on
            # the source: ops/test_chaos, jobs/test_oracle, hudi/test_s3_lakehouse).
            differences = oracle.check_lakehouse(lakehouse.table, only=("price_aggr", "trade_aggr"))
    assert len(differences) == 2
    assert all(d.equal for d in differences), [d for d in differences if not d.equal]


def _assert_through_kafka(settings, lakehouse: Lakehouse, landing: Path) -> None:
    """Every message of both topics is in the raw tables (offsets from the broker, read
    over SASL_SSL), and nothing entered through the landing folder."""
    assert settings.kafka.client.get("security.protocol") == "SASL_SSL", settings.kafka
    lag = {s: consumer_lag(settings, s) for s in ("price", "trade")}
    assert all(v["total"] == 0 for v in lag.values()), lag
    assert not list(landing.rglob("*.jsonl"))
    for table in RAW_TABLES:
        commits = HudiTableMetadata(lakehouse.table(table)).commits()
        assert commits and all(STREAMER_CHECKPOINT_KEY in c.extra for c in commits), table
