"""The live demo on Kafka, end to end: the stack starts a local KRaft broker, the replayer
produces to its topics, ingestion consumes them (Streamer checkpoints in the Hudi commits),
and the Dagster daemon's sensor keeps all six tables fresh until a short stream has
drained (`freshness demo --source kafka`, shortened)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from assets_tests.conftest import short_stack_config, table_watermark
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.hudi.streamer_checkpoint import STREAMER_CHECKPOINT_KEY
from freshness_pipeline.ingestion.kafka_ingest import consumer_lag
from freshness_pipeline.jobs import oracle
from freshness_pipeline.runtime.spark_service import free_port
from freshness_pipeline.runtime.stack import Stack

pytestmark = pytest.mark.spark
DRAIN_TIMEOUT_S = 480


def _settled(lakehouse: Lakehouse) -> bool:
    """Every job at the smallest final watermark of its inputs (METHOD 5.2). The two
    topics are consumed separately, so unlike the landing folder (one arrival stamp per
    landed second for both) the raw tables end at different watermarks."""
    marks = {t: table_watermark(lakehouse, t) for t in (*RAW_TABLES, *JOBS)}
    if None in marks.values():
        return False
    return all(marks[j] == min(marks[t] for t in spec.inputs) for j, spec in JOBS.items())


def _drained(stack: Stack, lakehouse: Lakehouse) -> bool:
    """Supervising until the stream has ended and every job has settled, with the raw
    watermarks unchanged over three polls (two ingestion intervals: nothing left to read)."""
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    seen: list[tuple] = []
    while time.monotonic() < deadline:
        stack.supervise()
        if stack.process("replay").poll() is not None and _settled(lakehouse):
            seen.append(tuple(table_watermark(lakehouse, t) for t in RAW_TABLES))
            if len(seen) >= 3 and len(set(seen[-3:])) == 1:
                return True
        time.sleep(5)
    return False


def test_the_demo_on_kafka_keeps_all_six_tables_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("FRESHNESS_SPARK_REMOTE", raising=False)
    monkeypatch.delenv("FRESHNESS_KAFKA_BOOTSTRAP", raising=False)
    env = {
        "FRESHNESS_LAKEHOUSE": str(tmp_path / "tables"),
        "FRESHNESS_LANDING": str(tmp_path / "landing"),
        "FRESHNESS_SOURCE": "kafka",
        "FRESHNESS_KAFKA_BROKER_PORT": str(free_port()),
        "FRESHNESS_TICK_S": "5",
        "FRESHNESS_SPARK_SERVICE_PORT": str(free_port()),
        "FRESHNESS_SPARK_SERVICE_MEMORY": "2g",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    home = tmp_path / "dagster_home"
    home.mkdir()
    stack = Stack(short_stack_config(tmp_path, env, home, seed=9), load_settings())
    stack.start()
    try:
        drained = _drained(stack, settings.lakehouse)
        # Every message in the topics is in the raw tables (offsets from the broker).
        lag = {s: consumer_lag(settings, s) for s in ("price", "trade")} if drained else {}
    finally:
        stack.stop()
    assert drained, (tmp_path / "logs" / "dagster.log").read_text()[-3000:]
    assert all(v["total"] == 0 for v in lag.values()), lag
    # Nothing entered through the landing folder: every raw commit holds Kafka offsets.
    assert not list((tmp_path / "landing").rglob("*.jsonl"))
    for table in RAW_TABLES:
        commits = HudiTableMetadata(settings.lakehouse.table(table)).commits()
        assert commits and all(STREAMER_CHECKPOINT_KEY in c.extra for c in commits), table
    # The aggregates equal the independent oracle over everything that went through Kafka:
    # nothing lost or doubled from topic to derived table. (The joined tables stop at the
    # earlier raw watermark, where a recomputation cannot tell which partial rows the
    # aggregates ever held; their exactness is source-independent and is tested on the
    # landing path: test_end_to_end, jobs/test_oracle.)
    lake = settings.lakehouse
    differences = oracle.check_lakehouse(lake.table, only=("price_aggr", "trade_aggr"))
    assert len(differences) == 2
    assert all(d.equal for d in differences), [d for d in differences if not d.equal]
