"""The Kafka source's pure parts: settings, Streamer's checkpoint format, the commit
metadata key it needs, message validation with the accept time as arrival_ts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.streamer_checkpoint import (
    STREAMER_CHECKPOINT_KEY,
    CheckpointFormatError,
    TopicCheckpoint,
    format_checkpoint,
    parse_checkpoint,
)
from freshness_pipeline.hudi.write import RAW_LAYOUTS, write_options
from freshness_pipeline.ingestion.kafka_reader import validate_messages


def test_kafka_settings_defaults_and_overrides():
    settings = load_settings({})
    assert settings.source == "landing"
    assert settings.kafka.bootstrap is None
    assert settings.kafka.bootstrap_servers == "127.0.0.1:9092"
    assert dict(settings.kafka.topics) == {"price": "prices", "trade": "trades"}
    assert settings.kafka.partitions == 4
    own = load_settings(
        {
            "FRESHNESS_SOURCE": "kafka",
            "FRESHNESS_KAFKA_BOOTSTRAP": "kafka-1.example:9093, kafka-2.example:9093",
            "FRESHNESS_KAFKA_PRICE_TOPIC": "iex.deep.prices",
            "FRESHNESS_KAFKA_TRADE_TOPIC": "iex.deep.trades",
        }
    )
    assert own.kafka.bootstrap_servers == "kafka-1.example:9093,kafka-2.example:9093"
    assert own.kafka.stream_of("iex.deep.trades") == "trade"


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("FRESHNESS_SOURCE", "s3", "landing or kafka"),
        ("FRESHNESS_KAFKA_BOOTSTRAP", "localhost", "host:port"),
        ("FRESHNESS_KAFKA_BOOTSTRAP", "a:9092,b:70000", "host:port"),
        ("FRESHNESS_KAFKA_BROKER_PORT", "0", "a port number"),
        ("FRESHNESS_KAFKA_PRICE_TOPIC", "prices/raw", "a Kafka topic name"),
        ("FRESHNESS_KAFKA_TRADE_TOPIC", "x" * 250, "a Kafka topic name"),
        ("FRESHNESS_KAFKA_PARTITIONS", "0", "an integer of at least 1"),
    ],
)
def test_bad_kafka_settings_name_variable_value_and_what_is_accepted(name, value, accepted):
    with pytest.raises(SettingsError) as caught:
        load_settings({name: value})
    assert str(caught.value).startswith(f"{name}={value!r} is not accepted: expected ")
    assert accepted in str(caught.value)


def test_one_topic_for_both_streams_is_refused():
    with pytest.raises(SettingsError, match="FRESHNESS_KAFKA_PRICE_TOPIC and .*two different"):
        load_settings({"FRESHNESS_KAFKA_PRICE_TOPIC": "t", "FRESHNESS_KAFKA_TRADE_TOPIC": "t"})


def test_checkpoint_is_streamers_format_and_round_trips():
    text = format_checkpoint("prices", {2: 7, 0: 12, 1: 0})
    assert text == "prices,0:12,1:0,2:7"  # partitions ascending, next offset to read
    assert parse_checkpoint(text) == TopicCheckpoint("prices", {0: 12, 1: 0, 2: 7})
    assert str(parse_checkpoint("t,0:5")) == "t,0:5"


@pytest.mark.parametrize("text", ["prices", "prices,", "prices,0", "prices,a:1", ",0:1"])
def test_a_bad_checkpoint_is_refused_naming_it(text):
    with pytest.raises(CheckpointFormatError, match="checkpoint"):
        parse_checkpoint(text)


def test_write_options_take_streamers_key_and_no_other_foreign_key():
    options = write_options(
        RAW_LAYOUTS["price_raw"], "insert", {STREAMER_CHECKPOINT_KEY: "prices,0:1"}
    )
    assert options[STREAMER_CHECKPOINT_KEY] == "prices,0:1"
    # Hudi copies options by key prefix: the empty one lets Streamer's key through.
    assert options["hoodie.datasource.write.commitmeta.key.prefix"] == ""
    plain = write_options(RAW_LAYOUTS["price_raw"], "insert", {"freshness.watermark_us": 1})
    assert plain["hoodie.datasource.write.commitmeta.key.prefix"] == "freshness."
    with pytest.raises(ValueError, match="must start with"):
        write_options(RAW_LAYOUTS["price_raw"], "insert", {"streamer.checkpoint.key": "x"})


@dataclass
class FakeMessage:
    _topic: str
    _partition: int
    _offset: int
    _value: bytes | None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes | None:
        return self._value


def test_messages_get_the_accept_time_and_rejects_their_offsets():
    good = b'{"symbol":"AAPL","price":1.5,"size":100,"trade_id":7,"event_ts":1700000000000000}'
    stamped = good[:-1] + b',"arrival_ts":1}'  # a message's own arrival_ts is replaced
    messages = [
        FakeMessage("trades", 0, 10, good),
        FakeMessage("trades", 1, 4, b'{"symbol":"AAPL"'),
        FakeMessage("trades", 1, 5, stamped.replace(b'"trade_id":7', b'"trade_id":8')),
        FakeMessage("trades", 2, 0, None),
        FakeMessage("trades", 2, 1, good),  # same trade id again
    ]
    batch = validate_messages("trade", messages, 1_800_000_000_000_000, {"AAPL"})
    assert batch.rows["event_id"] == ["trades:0:10", "trades:1:5"]
    assert batch.rows["arrival_ts"] == [1_800_000_000_000_000] * 2
    assert [(r.topic, r.partition, r.offset, r.reason) for r in batch.rejects] == [
        ("trades", 1, 4, "bad_json"),
        ("trades", 2, 0, "bad_json"),
        ("trades", 2, 1, "duplicate_id"),
    ]
    assert batch.rejects[0].reject_id == "trade:kafka:trades:1:4"
