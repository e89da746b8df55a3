"""Ingestion from a real Kafka broker (started here by the project's own code) into real
Hudi tables: Streamer checkpoints, rejects with their offsets, resume, lag, and exactly
once across an ingestion process killed with SIGKILL at random points."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from assets_tests.conftest import assert_listens_on_loopback_only, child_env
from assets_tests.ingestion.test_ingest import UNIVERSE, _inflight
from freshness_pipeline.catalog.tables import STREAM_TABLE
from freshness_pipeline.config.settings import Settings, load_settings
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.hudi.streamer_checkpoint import (
    STREAMER_CHECKPOINT_KEY,
    parse_checkpoint,
)
from freshness_pipeline.ingestion.ingest import IngestConfig
from freshness_pipeline.ingestion.kafka_ingest import KafkaIngestor, consumer_lag
from freshness_pipeline.ingestion.kafka_reader import consumer_config
from freshness_pipeline.ingestion.master import load_company_master
from freshness_pipeline.ingestion.validate import validate_record
from freshness_pipeline.runtime.kafka_broker import KafkaBroker, KafkaBrokerConfig, create_topics
from freshness_pipeline.runtime.ports import free_port, port_is_open
from freshness_pipeline.stream.generator import StreamConfig
from freshness_pipeline.stream.kafka_sink import KafkaSink
from freshness_pipeline.stream.replayer import VirtualClock, generated_batches, land_instantly
from freshness_pipeline.stream.universe import company_universe

pytestmark = pytest.mark.spark

PARTITIONS = 3
NOW_US = int(time.time() * 1_000_000)  # an accept time for re-validating messages here
KAFKA_JARS = load_settings({}).kafka.jars_dir


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    config = KafkaBrokerConfig(
        jars_dir=KAFKA_JARS, state_dir=tmp_path_factory.mktemp("kafka"), port=free_port()
    )
    with KafkaBroker(config) as running:
        yield running


@pytest.fixture
def kafka_lakehouse(
    broker: KafkaBroker, lakehouse: Settings, monkeypatch: pytest.MonkeyPatch
) -> Settings:
    """A fresh lakehouse fed by two fresh topics of the module's broker."""
    return fresh_topics(broker, monkeypatch)


def fresh_topics(broker: KafkaBroker, monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    """Settings reading two new topics of `broker` (created with its own client's
    security), with `env`'s other variables set too."""
    suffix = uuid.uuid4().hex[:8]
    monkeypatch.setenv("FRESHNESS_SOURCE", "kafka")
    monkeypatch.setenv("FRESHNESS_KAFKA_BOOTSTRAP", broker.bootstrap_servers)
    monkeypatch.setenv("FRESHNESS_KAFKA_PRICE_TOPIC", f"prices_{suffix}")
    monkeypatch.setenv("FRESHNESS_KAFKA_TRADE_TOPIC", f"trades_{suffix}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings()
    topics = dict.fromkeys(settings.kafka.topics.values(), PARTITIONS)
    create_topics(broker.bootstrap_servers, topics, client=broker.client)
    return settings


def produce(settings: Settings, seconds: int, rate: float, malformed: float, seed: int) -> int:
    sink = KafkaSink(settings.kafka)
    clock = VirtualClock(time.time())
    stream = generated_batches(StreamConfig(seed=seed, rate=rate, universe_size=UNIVERSE))
    produced = land_instantly(stream, sink, seconds, clock, malformed_rate=malformed)
    return sum(produced.values())


def topic_contents(settings: Settings, stream: str) -> tuple[set[str], dict[str, str], dict]:
    """Every message of the stream's topic, read back independently: (event ids of the
    valid ones, reason of each rejected one by event id, partitions of each symbol)."""
    from confluent_kafka import Consumer, TopicPartition

    topic = settings.kafka.topics[stream]
    symbols = {c.symbol for c in company_universe(UNIVERSE)}
    consumer = Consumer(consumer_config(settings.kafka, **{"group.id": f"check-{uuid.uuid4()}"}))
    good: set[str] = set()
    bad: dict[str, str] = {}
    symbol_partitions: dict[str, set[int]] = {}
    for partition in range(PARTITIONS):
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
        if high == low:
            continue
        consumer.assign([TopicPartition(topic, partition, low)])
        seen = 0
        trade_ids: set[tuple[str, int]] = set()
        while seen < high - low:
            for message in consumer.consume(1000, 5):
                seen += 1
                key = f"{topic}:{partition}:{message.offset()}"
                symbol_partitions.setdefault(message.key().decode(), set()).add(partition)
                record, reason = validate_record(
                    stream, message.value().decode("utf-8", "replace"), symbols, None, NOW_US
                )
                if record is not None and stream == "trade":
                    trade = (record["symbol"], record["trade_id"])
                    if trade in trade_ids:
                        record, reason = None, "duplicate_id"
                    trade_ids.add(trade)
                if record is None:
                    bad[key] = reason.partition(":")[0]
                else:
                    good.add(key)
    consumer.close()
    return good, bad, symbol_partitions


def raw_event_ids(spark, settings: Settings, stream: str) -> list[str]:
    """The raw table's committed events. Not Hudi's plain snapshot: a kill in the table's
    first commit leaves an instant that Hudi's reader counts as committed until the lazy
    rollback of failed writes (execution/test_failed_first_write.py); the runs never read it."""
    from freshness_pipeline.execution.batch_oracle import read_table
    from freshness_pipeline.hudi.metadata import HudiTableMetadata

    uri = settings.table_uri(STREAM_TABLE[stream])
    df = read_table(spark, uri, HudiTableMetadata(uri).uncompleted_instants())
    return [row.event_id for row in df.select("event_id").collect()]


def drain(ingestor: KafkaIngestor) -> None:
    while ingestor.ingest_once():
        pass


def test_broker_starts_formats_once_and_stops_by_its_pid(tmp_path: Path):
    config = KafkaBrokerConfig(
        jars_dir=KAFKA_JARS, state_dir=tmp_path, port=free_port(), topics={"a": 2, "b": 3}
    )
    from confluent_kafka.admin import AdminClient

    for start in range(2):  # the second start reuses the formatted log dir and its topics
        broker = KafkaBroker(config).start()
        assert broker.config.host == "127.0.0.1" and port_is_open("127.0.0.1", config.port)
        assert_listens_on_loopback_only(broker.listening(), "the Kafka broker")
        topics = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(
            timeout=10
        )
        assert {name: len(topics.topics[name].partitions) for name in ("a", "b")} == {
            "a": 2,
            "b": 3,
        }, f"start {start}"
        pid = broker.pid
        broker.stop()
        assert broker.process.poll() is not None and not Path(f"/proc/{pid}").exists()
        assert not port_is_open("127.0.0.1", config.port)
    assert (tmp_path / "data" / "meta.properties").exists()


def test_missing_broker_jars_are_a_clear_error(tmp_path: Path):
    from freshness_pipeline.runtime.kafka_broker import KafkaBrokerError

    config = KafkaBrokerConfig(jars_dir=tmp_path / "none", state_dir=tmp_path, port=free_port())
    with pytest.raises(KafkaBrokerError, match="make setup"):
        KafkaBroker(config).start()


def test_ingests_topics_with_streamer_checkpoints_and_rejects(spark, kafka_lakehouse: Settings):
    settings = kafka_lakehouse
    load_company_master(spark, settings, UNIVERSE)
    produce(settings, seconds=3, rate=400, malformed=0.05, seed=3)
    before = time.time() * 1e6
    ingestor = KafkaIngestor(spark, settings)
    drain(ingestor)
    after = time.time() * 1e6
    rejects = spark.read.format("hudi").load(settings.table_uri("raw_rejects")).collect()
    for stream in ("price", "trade"):
        good, bad, symbol_partitions = topic_contents(settings, stream)
        assert bad and good
        ids = raw_event_ids(spark, settings, stream)
        assert len(ids) == len(set(ids)) and set(ids) == good
        # one symbol, one partition (the key is the symbol)
        assert all(len(parts) == 1 for parts in symbol_partitions.values())
        assert len({p for parts in symbol_partitions.values() for p in parts}) == PARTITIONS
        topic = settings.kafka.topics[stream]
        got = {
            f"{r.kafka_topic}:{r.kafka_partition}:{r.kafka_offset}": r.reason
            for r in rejects
            if r.kafka_topic == topic
        }
        assert got == bad
        # the Streamer checkpoint is every partition's next offset, in the last commit
        meta = HudiTableMetadata(settings.table_uri(STREAM_TABLE[stream]))
        text = meta.latest_commit().extra[STREAMER_CHECKPOINT_KEY]
        checkpoint = parse_checkpoint(text)
        assert checkpoint.topic == topic and sorted(checkpoint.offsets) == list(range(PARTITIONS))
        assert sum(checkpoint.offsets.values()) == len(good) + len(bad)
        assert text == f"{topic}," + ",".join(
            f"{p}:{checkpoint.offsets[p]}" for p in range(PARTITIONS)
        )
        assert consumer_lag(settings, stream)["total"] == 0
        # arrival_ts is when ingestion accepted the record
        assert before <= meta.watermark_us() <= after
    sample = next(r for r in rejects if r.kafka_topic)
    assert sample.raw_line is not None and sample.reason and sample.landing_file is None
    assert ingestor.ingest_once() == []  # nothing new: no empty commit
    ingestor.close()


def test_resumes_from_the_table_checkpoint_not_the_group_offsets(spark, kafka_lakehouse: Settings):
    from confluent_kafka import Consumer, TopicPartition

    settings = kafka_lakehouse
    load_company_master(spark, settings, UNIVERSE)
    produce(settings, seconds=2, rate=300, malformed=0.0, seed=5)
    first = KafkaIngestor(spark, settings, max_messages=150)
    assert first.ingest_stream("trade") is not None  # a part of the topic
    first.close()
    written = parse_checkpoint(
        HudiTableMetadata(settings.table_uri("trade_raw")).latest_extra(STREAMER_CHECKPOINT_KEY)
    )
    assert 0 < sum(written.offsets.values()) <= 150
    produce(settings, seconds=2, rate=300, malformed=0.0, seed=6)
    lag = consumer_lag(settings, "trade")
    good, _, _ = topic_contents(settings, "trade")
    assert lag["total"] == len(good) - sum(written.offsets.values())
    # The consumer group says "everything read": a resume from it would lose the rest.
    topic = settings.kafka.topics["trade"]
    group = Consumer(consumer_config(settings.kafka))
    ends = [
        TopicPartition(topic, p, group.get_watermark_offsets(TopicPartition(topic, p))[1])
        for p in range(PARTITIONS)
    ]
    group.commit(offsets=ends, asynchronous=False)
    group.close()
    second = KafkaIngestor(spark, settings, IngestConfig())
    drain(second)
    second.close()
    ids = raw_event_ids(spark, settings, "trade")
    assert len(ids) == len(set(ids)) and set(ids) == good
    assert consumer_lag(settings, "trade")["total"] == 0


def test_exactly_once_with_ingestion_killed_at_random_points(spark, kafka_lakehouse: Settings):
    settings = kafka_lakehouse
    load_company_master(spark, settings, UNIVERSE)
    produce(settings, seconds=12, rate=300, malformed=0.02, seed=7)
    env = child_env(settings)
    argv = [
        sys.executable,
        "-m",
        "freshness_pipeline.cli",
        "ingest",
        "--commit-interval",
        "0.1",
        "--max-messages",
        "250",
    ]
    rng = random.Random(16)
    tables = [settings.table_path(t) for t in ("price_raw", "trade_raw")]
    inflight_kills = 0
    for attempt in range(4):
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 150
        # Half the kills wait for a commit in flight (files written, not completed), the
        # others land at a random moment after the process started.
        random_at = None if attempt % 2 == 0 else time.monotonic() + rng.uniform(20, 45)
        while time.monotonic() < deadline and proc.poll() is None:
            if random_at is None and any(_inflight(t) for t in tables):
                proc.send_signal(signal.SIGKILL)
                inflight_kills += 1
                break
            if random_at is not None and time.monotonic() >= random_at:
                proc.send_signal(signal.SIGKILL)
                break
            time.sleep(0.02)
        proc.wait(timeout=30)
    assert inflight_kills == 2, "ingestion was never caught in the middle of a commit"
    # A new ingestor rolls the failed commits back and resumes from the last checkpoint.
    final = KafkaIngestor(spark, settings)
    drain(final)
    final.close()
    rejects = spark.read.format("hudi").load(settings.table_uri("raw_rejects"))
    reject_rows = rejects.collect()
    for stream in ("price", "trade"):
        good, bad, _ = topic_contents(settings, stream)
        ids = raw_event_ids(spark, settings, stream)
        assert len(ids) == len(set(ids)), f"{stream}: a record was doubled"
        assert set(ids) == good, f"{stream}: lost {len(good - set(ids))}"
        topic = settings.kafka.topics[stream]
        assert {
            f"{r.kafka_topic}:{r.kafka_partition}:{r.kafka_offset}"
            for r in reject_rows
            if r.kafka_topic == topic
        } == set(bad)
    assert len(reject_rows) == len({r.reject_id for r in reject_rows})


def test_the_stack_starts_the_broker_before_ingestion_and_stops_it(tmp_path: Path):
    """`freshness demo --source kafka`: the stack's broker step (no Spark, no Dagster)."""
    from confluent_kafka.admin import AdminClient

    from freshness_pipeline.runtime.stack import Stack, StackConfig

    port = free_port()
    env = {
        "FRESHNESS_SOURCE": "kafka",
        "FRESHNESS_KAFKA_BROKER_PORT": str(port),
        "FRESHNESS_LANDING": str(tmp_path / "landing"),
        "FRESHNESS_KAFKA_BOOTSTRAP": None,
    }
    stack = Stack(
        StackConfig(env=env, logs_dir=tmp_path / "logs", dagster_home=tmp_path / "dh"),
        load_settings(),
    )
    stack._start_kafka_broker()
    try:
        assert stack.env["FRESHNESS_KAFKA_BOOTSTRAP"] == f"127.0.0.1:{port}"
        assert stack.kafka_bootstrap == f"127.0.0.1:{port}"
        pid = stack.pids()["kafka-broker"]
        topics = AdminClient({"bootstrap.servers": stack.kafka_bootstrap}).list_topics(timeout=10)
        assert {n: len(topics.topics[n].partitions) for n in ("prices", "trades")} == {
            "prices": 4,
            "trades": 4,
        }
        assert (tmp_path / "kafka" / "data" / "meta.properties").exists()  # beside landing
    finally:
        stack.stop(drain_timeout_s=0)
    assert not Path(f"/proc/{pid}").exists() or stack.broker.process.poll() is not None
    assert not port_is_open("127.0.0.1", port)
