"""Long-running ingestion from Kafka: topics -> Hudi raw tables, exactly once.

The same commit cycle as the landing path (ingest.py), with another source: each cycle,
per stream, read the table's last Streamer checkpoint (`streamer.checkpoint.key.v2`,
`topic,partition:offset,...`) from its newest completed commit, read the topic from
there (partitions assigned explicitly; consumer-group offsets are never used nor
committed), upsert the rejects (keyed by topic, partition and offset), then insert the
rows in one Hudi commit whose extra metadata holds the new checkpoint. A crash before
the commit leaves the old checkpoint, so the same offsets are read again; a crash after
it leaves nothing to redo: no message is lost or doubled.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from freshness_pipeline.catalog.tables import STREAM_TABLE, STREAMS
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi import step_cpu
from freshness_pipeline.hudi.commit_keys import CHECKPOINT_BEFORE_KEY
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.hudi.streamer_checkpoint import (
    STREAMER_CHECKPOINT_KEY,
    TopicCheckpoint,
    parse_checkpoint,
)
from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor, load_symbols
from freshness_pipeline.ingestion.kafka_reader import KafkaBatch, KafkaTopicReader, high_watermarks
from freshness_pipeline.ingestion.reader import merge_batches

log = logging.getLogger(__name__)

# Messages per commit and stream: about 10 s of the 15,000 events/s target, like the
# landing path's default of 120 one-second files at the demo's rate.
DEFAULT_MAX_MESSAGES = 200_000


@dataclass(frozen=True)
class KafkaCommitResult:
    stream: str
    messages: int
    rows: int
    rejects: int
    checkpoint: str
    seconds: float
    # what the commit's Spark work cost in ingestion's JVM (hudi/step_cpu.py); {}: unknown
    cpu: Mapping[str, float] = field(default_factory=dict)


def table_checkpoint(settings: Settings, stream: str) -> tuple[TopicCheckpoint | None, int | None]:
    """(the Streamer checkpoint of the stream's raw table's newest completed commit that
    has one, the table's watermark); (None, None) for a table not written yet."""
    try:
        # The table's location with its storage options: a bare URI would reach an S3
        # lakehouse without its endpoint, fail, look unwritten, and every batch would read
        # the topic again from its first offset.
        meta = HudiTableMetadata(settings.lakehouse.table(STREAM_TABLE[stream]))
    except TableNotFound:
        return None, None
    text = meta.latest_extra(STREAMER_CHECKPOINT_KEY)
    return (parse_checkpoint(text) if text else None), meta.watermark_us()


def consumer_lag(settings: Settings, stream: str, consumer=None) -> dict[str, int]:
    """Per partition and in total, messages in the stream's topic after the raw table's
    checkpoint (high watermark minus checkpoint offset): no Spark, one metadata request."""
    from freshness_pipeline.ingestion.kafka_reader import new_consumer, partition_ids

    topic = settings.kafka.topics[stream]
    checkpoint, _ = table_checkpoint(settings, stream)
    own = consumer is None
    errors = None
    if consumer is None:
        consumer, errors = new_consumer(settings.kafka)
    try:
        bootstrap = settings.kafka.bootstrap_servers
        marks = high_watermarks(consumer, topic, partition_ids(consumer, topic, errors, bootstrap))
    finally:
        if own:
            consumer.close()
    lag = {}
    for partition, (low, high) in marks.items():
        start = checkpoint.offsets.get(partition, low) if checkpoint else low
        lag[str(partition)] = max(0, high - max(start, low))
    lag["total"] = sum(lag.values())
    return lag


class KafkaIngestor(Ingestor):
    """Ingestor whose source is the settings' Kafka topics instead of the landing folder."""

    def __init__(
        self,
        spark,
        settings: Settings,
        config: IngestConfig | None = None,
        max_messages: int | Mapping[str, int] = DEFAULT_MAX_MESSAGES,
    ) -> None:
        self.spark = spark
        self.settings = settings
        self.config = config or IngestConfig()
        # per commit and stream (a mapping: per stream, e.g. the same event-time window
        # as a landing commit holds, for the benchmark)
        self.max_messages = max_messages
        self.symbols = load_symbols(spark, settings)
        self.readers = {s: KafkaTopicReader(settings.kafka, s, self.symbols) for s in STREAMS}
        # As on the landing path (reader.py): the next stream's topic is read and validated
        # while this one commits, overlapping Python's work with the JVM's. A batch read
        # ahead is used only if its stream's checkpoint has not moved since it started.
        self._pool = ThreadPoolExecutor(1, "kafka-read-ahead") if self.config.read_ahead else None
        self._ahead: dict[str, Future[tuple[str | None, KafkaBatch]]] = {}
        self._commits: dict[str, int] = {}  # as Ingestor's: which commits clean

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._ahead.clear()
        for reader in self.readers.values():
            reader.close()
        self.readers = {}

    def _limit(self, stream: str) -> int:
        if isinstance(self.max_messages, Mapping):
            return self.max_messages[stream]
        return self.max_messages

    def _read(self, stream: str, checkpoint: TopicCheckpoint | None) -> KafkaBatch:
        return self.readers[stream].read(checkpoint, self._limit(stream))

    def _top_up(self, stream: str, ahead: KafkaBatch) -> KafkaBatch:
        """A batch read ahead, plus what arrived since (up to the limit): a head start
        never holds data back for a cycle."""
        room = self._limit(stream) - ahead.messages
        if room <= 0:
            return ahead
        rest = self.readers[stream].read(ahead.checkpoint, room)
        if rest.messages == 0:
            return ahead
        merged = merge_batches(stream, [ahead.batch, rest.batch])
        return KafkaBatch(
            ahead.topic, ahead.start, rest.end, ahead.messages + rest.messages, merged
        )

    def _read_ahead(self, stream: str) -> tuple[str | None, KafkaBatch]:
        checkpoint, _ = table_checkpoint(self.settings, stream)
        return (str(checkpoint) if checkpoint else None), self._read(stream, checkpoint)

    def _take_ahead(self, stream: str, checkpoint: TopicCheckpoint | None) -> KafkaBatch | None:
        future = self._ahead.pop(stream, None)
        if future is None:
            return None
        try:
            started_from, read = future.result()
        except Exception:
            log.warning("read-ahead of %s failed; reading again", stream, exc_info=True)
            return None
        return read if started_from == (str(checkpoint) if checkpoint else None) else None

    # A narrower result than the landing ingestor's (its commit also names the offsets).
    def _ingest_stream(self, stream: str) -> KafkaCommitResult | None:  # type: ignore[override]
        if self.settings.is_external(STREAM_TABLE[stream]):
            return None  # a declared input someone else writes (inputs.py)
        started = time.monotonic()
        checkpoint, watermark = table_checkpoint(self.settings, stream)
        ahead = self._take_ahead(stream, checkpoint)
        read = self._top_up(stream, ahead) if ahead else self._read(stream, checkpoint)
        if self._pool is not None:
            # The other stream's checkpoint cannot move during this commit: only this
            # thread commits, one stream at a time.
            following = STREAMS[(STREAMS.index(stream) + 1) % len(STREAMS)]
            self._ahead[following] = self._pool.submit(self._read_ahead, following)
        if read.messages == 0 and checkpoint is not None:
            return None
        if read.messages == 0 and not any(read.end.values()):
            return None  # an empty topic and no table yet: nothing to commit
        batch = read.batch
        if batch.rejects:
            self._write_rejects(batch.rejects)
        with step_cpu.tagged(self.spark) as tag:
            positions = {
                STREAMER_CHECKPOINT_KEY: str(read.checkpoint),
                CHECKPOINT_BEFORE_KEY: str(checkpoint) if checkpoint else "",
            }
            self._write_raw(stream, batch, positions, watermark)
        cpu = step_cpu.take(self.spark, tag)
        result = KafkaCommitResult(
            stream,
            read.messages,
            batch.row_count,
            len(batch.rejects),
            str(read.checkpoint),
            time.monotonic() - started,
            cpu,
        )
        log.info("ingested %s: %s", result, step_cpu.cpu_text(cpu))
        return result

    def landed_files(self) -> int:
        """Messages not yet committed, over both topics (the drain at stop waits for 0)."""
        wait(list(self._ahead.values()))  # the consumers are not shared between threads
        return sum(
            consumer_lag(self.settings, s, self.readers[s].consumer)["total"] for s in STREAMS
        )
