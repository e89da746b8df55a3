"""Kafka topic -> validated batches, read from an explicit checkpoint (never a group's).

Each read assigns the topic's partitions at the offsets of the raw table's last
checkpoint (`assign` + offsets, so the consumer group's committed offsets, if any, play no
part), takes what the partitions held when the read started (up to `max_messages`), and
returns the rows and rejects with the next offset of every partition: the Streamer
checkpoint of the commit that will hold them. `arrival_ts` of each record is the moment
ingestion accepted it (the poll that returned it), whatever the message says.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass

from freshness_pipeline.config.kafka_client import ClientErrors, refused
from freshness_pipeline.config.settings import KafkaSettings
from freshness_pipeline.hudi.streamer_checkpoint import TopicCheckpoint
from freshness_pipeline.ingestion.validate import (
    RAW_LINE_KEEP,
    SCHEMAS,
    Reject,
    ValidatedBatch,
    decode_line,
    refuse_repeated_trade,
    validate_record,
)
from freshness_pipeline.scheduling.units import US_PER_S

log = logging.getLogger(__name__)

POLL_BATCH = 50_000  # messages per consume() call
METADATA_TIMEOUT_S = 10.0


class KafkaSourceError(RuntimeError):
    """The topic or its offsets cannot be read as the checkpoint says."""


@dataclass(frozen=True)
class KafkaBatch:
    """The validated rows of offsets [start, end) of every partition of `topic`."""

    topic: str
    start: Mapping[int, int]
    end: Mapping[int, int]
    messages: int
    batch: ValidatedBatch

    @property
    def checkpoint(self) -> TopicCheckpoint:
        return TopicCheckpoint(self.topic, dict(self.end))


def consumer_config(kafka: KafkaSettings, **extra: object) -> dict[str, object]:
    """The consumer's configuration: the brokers and the client's own security properties
    (KafkaSettings.client_config), then ours."""
    return kafka.client_config(
        **{
            "group.id": kafka.group,
            # Offsets live in the Hudi commit only: never committed to the group, and every
            # read seeks to the checkpoint explicitly.
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "fetch.min.bytes": 1,
            # A backlog comes in large fetches (the default is 1 MB per partition).
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
            "queued.max.messages.kbytes": 262_144,
            **extra,
        }
    )


def new_consumer(kafka: KafkaSettings, **extra: object):
    """A consumer, and the errors librdkafka reports for it (why a broker refused us)."""
    from confluent_kafka import Consumer

    errors = ClientErrors()
    return Consumer(consumer_config(kafka, error_cb=errors, **extra)), errors


def partition_ids(
    consumer, topic: str, errors: ClientErrors | None = None, bootstrap: str = "the brokers"
) -> list[int]:
    """The topic's partitions; a broker that does not serve us (authentication, TLS, down)
    is a KafkaSourceError saying which and why."""
    from confluent_kafka import KafkaException

    try:
        metadata = consumer.list_topics(topic, timeout=METADATA_TIMEOUT_S)
    except KafkaException as exc:
        reason = errors.reason(consumer) if errors is not None else None
        raise KafkaSourceError(refused(bootstrap, reason, exc)) from None
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        error = found.error if found is not None else "not found"
        raise KafkaSourceError(
            f"Kafka topic {topic!r} cannot be read ({error}); create it or set "
            "FRESHNESS_KAFKA_PRICE_TOPIC / FRESHNESS_KAFKA_TRADE_TOPIC"
        )
    return sorted(found.partitions)


def high_watermarks(consumer, topic: str, partitions: Iterable[int]) -> dict[int, tuple[int, int]]:
    """(low, high) offsets of each partition, asked of the broker now."""
    from confluent_kafka import TopicPartition

    return {
        p: consumer.get_watermark_offsets(
            TopicPartition(topic, p), timeout=METADATA_TIMEOUT_S, cached=False
        )
        for p in partitions
    }


def validate_messages(
    stream: str, messages: Iterable, accept_us: int, symbols: Set[str]
) -> ValidatedBatch:
    """One poll's messages -> typed rows (event_id `topic:partition:offset`) and rejects
    (with topic, partition and offset)."""
    names = ["event_id"] + [name for name, _ in SCHEMAS[stream]] + ["symbol_prefix"]
    batch = ValidatedBatch(stream, {name: [] for name in names})
    rows = batch.rows
    fields = [name for name, _ in SCHEMAS[stream]]
    seen_trade_ids: set[tuple[str, int]] = set()
    for message in messages:
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        value = message.value()
        if value is None:
            raw_line, reason = "", "bad_json: empty message"
        else:
            raw_line, reason = decode_line(value)
        record = None
        if not reason:
            record, reason = validate_record(stream, raw_line, symbols, accept_us, accept_us)
        record, reason = refuse_repeated_trade(stream, record, reason, seen_trade_ids)
        if record is None:
            kind, _, detail = reason.partition(": ")
            batch.rejects.append(
                Reject(
                    stream,
                    "",
                    0,
                    kind,
                    detail[:500],
                    raw_line[:RAW_LINE_KEEP],
                    accept_us,
                    topic,
                    partition,
                    offset,
                )
            )
            continue
        rows["event_id"].append(f"{topic}:{partition}:{offset}")
        for name in fields:
            rows[name].append(float(record[name]) if name == "price" else record[name])
        rows["symbol_prefix"].append(record["symbol"][0])
    return batch


class KafkaTopicReader:
    """Reads one topic (one stream) from a checkpoint; one consumer, assigned explicitly."""

    def __init__(self, kafka: KafkaSettings, stream: str, symbols: Set[str]) -> None:
        self.stream = stream
        self.topic = kafka.topics[stream]
        self.symbols = symbols
        self.consumer, errors = new_consumer(kafka)
        try:
            self.partitions = partition_ids(
                self.consumer, self.topic, errors, kafka.bootstrap_servers
            )
        except BaseException:
            self.consumer.close()
            raise

    def close(self) -> None:
        self.consumer.close()

    def start_offsets(self, checkpoint: TopicCheckpoint | None) -> dict[int, int]:
        """Where each partition resumes: the checkpoint's offset, the earliest offset for
        a partition it does not name (a new one). A checkpoint of another topic or beyond a
        partition's end is refused: the table was fed by other data than this topic holds."""
        if checkpoint is not None and checkpoint.topic != self.topic:
            raise KafkaSourceError(
                f"the raw table's checkpoint is of topic {checkpoint.topic!r}, not "
                f"{self.topic!r}: ingesting would mix two topics in one table"
            )
        marks = high_watermarks(self.consumer, self.topic, self.partitions)
        start = {}
        for partition, (low, high) in marks.items():
            offset = checkpoint.offsets.get(partition, low) if checkpoint else low
            if offset > high:
                raise KafkaSourceError(
                    f"checkpoint offset {offset} of {self.topic}[{partition}] is beyond the "
                    f"partition's end {high}: was the topic recreated? The raw table "
                    "holds data this topic no longer has"
                )
            if offset < low:
                log.warning(
                    "%s[%d]: offsets %d-%d were deleted by retention before ingestion read "
                    "them; resuming at %d",
                    self.topic,
                    partition,
                    offset,
                    low - 1,
                    low,
                )
                offset = low
            start[partition] = offset
        self._ends = {p: high for p, (_, high) in marks.items()}
        return start

    def read(
        self, checkpoint: TopicCheckpoint | None, max_messages: int, idle_timeout_s: float = 5.0
    ) -> KafkaBatch:
        """What the partitions held when the read started, from `checkpoint`, at most
        `max_messages` in all."""
        from confluent_kafka import TopicPartition

        start = self.start_offsets(checkpoint)
        ends = self._ends
        end = dict(start)
        behind = {p for p in self.partitions if start[p] < ends[p]}
        parts: list[ValidatedBatch] = []
        taken = 0
        if behind:
            self.consumer.assign([TopicPartition(self.topic, p, start[p]) for p in behind])
            last_progress = time.monotonic()
            while behind and taken < max_messages:
                polled = self.consumer.consume(min(POLL_BATCH, max_messages - taken), 0.5)
                accept_us = int(time.time() * US_PER_S)
                good = self._take(polled, end, behind, max_messages - taken)
                taken += len(good)
                if good:
                    parts.append(validate_messages(self.stream, good, accept_us, self.symbols))
                    last_progress = time.monotonic()
                elif time.monotonic() - last_progress > idle_timeout_s:
                    if not self._skip_empty_offsets(behind, end):
                        log.warning(
                            "%s: no message for %.0f s below the end offsets %s; committing "
                            "what was read",
                            self.topic,
                            idle_timeout_s,
                            ends,
                        )
                        break
                    behind = {p for p in behind if end[p] < ends[p]}
                    last_progress = time.monotonic()
            self.consumer.unassign()
        return KafkaBatch(self.topic, start, end, taken, merge(self.stream, parts))

    def _take(self, polled: list, end: dict[int, int], behind: set[int], budget: int) -> list:
        """The polled messages this read keeps (at most `budget`), advancing `end` and
        dropping from `behind` the partitions that reached their end offset."""
        from confluent_kafka import KafkaError

        good: list = []
        for message in polled:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaSourceError(f"reading {self.topic}: {error}")
            partition = message.partition()
            if message.offset() < end[partition] or len(good) >= budget:
                continue  # before the seek landed, or past this read's share
            good.append(message)
            end[partition] = message.offset() + 1
            if end[partition] >= self._ends[partition]:
                behind.discard(partition)
        return good

    def _skip_empty_offsets(self, behind: set[int], end: dict[int, int]) -> bool:
        """Offsets that hold no message (transaction markers, compaction) are skipped by
        the fetcher: its position is the next offset. Whether any partition moved so."""
        from confluent_kafka import TopicPartition

        moved = False
        for tp in self.consumer.position([TopicPartition(self.topic, p) for p in behind]):
            if tp.offset >= 0 and tp.offset > end[tp.partition]:
                end[tp.partition] = tp.offset
                moved = True
        return moved


def merge(stream: str, parts: list[ValidatedBatch]) -> ValidatedBatch:
    from freshness_pipeline.ingestion.reader import merge_batches

    return merge_batches(stream, parts)
