"""The replayer's Kafka sink: each event to its stream's topic, keyed by symbol.

The key is the symbol, so all events of one symbol go to one partition, in order. The
value is the event's JSON (or its seeded corruption) without `arrival_ts`: ingestion
stamps that when it accepts the record; the replayer's enqueue stamp travels as the
message timestamp instead. The producer is idempotent (acks=all), so a retried send
never writes a message twice; `close` waits until every message is acknowledged and
raises if any was not.
"""

from __future__ import annotations

from typing import Any

from freshness_pipeline.config.kafka_client import ClientErrors, refused
from freshness_pipeline.config.settings import KafkaSettings
from freshness_pipeline.stream.replayer import Corruptor

METADATA_TIMEOUT_S = 10.0


class KafkaDeliveryError(RuntimeError):
    """The broker did not acknowledge some messages."""


def producer_config(kafka: KafkaSettings, **extra: object) -> dict[str, object]:
    """The producer's configuration: the brokers and the client's own security properties,
    then ours."""
    return kafka.client_config(
        **{
            "enable.idempotence": True,
            "acks": "all",
            # Batches of a flush go out together: throughput for a few ms of latency.
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "compression.type": "lz4",
            "queue.buffering.max.messages": 1_000_000,
            **extra,
        }
    )


class KafkaSink:
    def __init__(self, kafka: KafkaSettings) -> None:
        from confluent_kafka import KafkaException, Producer

        self.topics = dict(kafka.topics)
        errors = ClientErrors()
        self.producer = Producer(producer_config(kafka, error_cb=errors))
        # Reach the brokers before the first message: a refused login or certificate would
        # otherwise show only as every delivery timing out minutes later.
        try:
            self.producer.list_topics(timeout=METADATA_TIMEOUT_S)
        except KafkaException as exc:
            raise KafkaDeliveryError(
                refused(kafka.bootstrap_servers, errors.reason(self.producer), exc)
            ) from None
        self.failed: list[str] = []
        self.produced = 0

    def _delivered(self, error, message) -> None:
        if error is not None and len(self.failed) < 20:
            self.failed.append(f"{message.topic()}: {error}")

    def write(
        self, stream: str, arrival_us: int, events: list[dict[str, Any]], corruptor: Corruptor
    ) -> int:
        topic = self.topics[stream]
        timestamp_ms = arrival_us // 1000
        produce = self.producer.produce
        for event in events:
            value = corruptor.serialize(event)
            while True:
                try:
                    produce(
                        topic,
                        value=value,
                        key=event["symbol"],
                        timestamp=timestamp_ms,
                        on_delivery=self._delivered,
                    )
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    self.producer.poll(0.1)
        self.producer.poll(0)
        self.produced += len(events)
        self._raise_failed()
        return len(events)

    def close(self, timeout_s: float = 60.0) -> None:
        left = self.producer.flush(timeout_s)
        if left:
            raise KafkaDeliveryError(f"{left} message(s) not acknowledged within {timeout_s} s")
        self._raise_failed()

    def _raise_failed(self) -> None:
        if self.failed:
            raise KafkaDeliveryError(f"the broker refused messages: {self.failed[:5]}")
