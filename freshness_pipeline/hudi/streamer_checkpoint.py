"""Kafka offsets in Hudi Streamer's checkpoint format (pure, no Kafka, no Spark).

Hudi Streamer keeps the position of a Kafka source in each commit's extra metadata under
`streamer.checkpoint.key.v2` as `topic,partition:offset,partition:offset,...` (partitions
in ascending order; each offset is the next one to read, the exclusive end of what the
commit holds: `KafkaOffsetGen.CheckpointUtils.offsetsToStr` writes `untilOffset`). Our
ingestion writes the same key and format, so a raw table it wrote can be resumed by
Streamer and read by Hudi's checkpoint tools, and a table Streamer wrote resumes here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

STREAMER_CHECKPOINT_KEY = "streamer.checkpoint.key.v2"


class CheckpointFormatError(ValueError):
    """A checkpoint string that is not `topic,partition:offset,...`."""


@dataclass(frozen=True)
class TopicCheckpoint:
    """The next offset to read of every partition of one topic."""

    topic: str
    offsets: Mapping[int, int]

    def __str__(self) -> str:
        return format_checkpoint(self.topic, self.offsets)


def format_checkpoint(topic: str, offsets: Mapping[int, int]) -> str:
    """`topic,0:12,1:40` with partitions ascending, as Streamer writes it."""
    if not offsets:
        raise CheckpointFormatError(f"a checkpoint of topic {topic!r} needs a partition")
    if "," in topic or ":" in topic:
        raise CheckpointFormatError(f"topic {topic!r} cannot be written in a checkpoint")
    parts = [f"{partition}:{offsets[partition]}" for partition in sorted(offsets)]
    for partition, offset in offsets.items():
        if partition < 0 or offset < 0:
            raise CheckpointFormatError(f"negative partition or offset {partition}:{offset}")
    return ",".join([topic, *parts])


def parse_checkpoint(text: str) -> TopicCheckpoint:
    """The inverse of `format_checkpoint`; raises CheckpointFormatError naming the text."""
    topic, *parts = text.strip().split(",")
    if not topic or not parts:
        raise CheckpointFormatError(
            f"checkpoint {text!r} is not 'topic,partition:offset,...' (Hudi Streamer's format)"
        )
    offsets: dict[int, int] = {}
    for part in parts:
        partition, sep, offset = part.partition(":")
        try:
            if not sep:
                raise ValueError(part)
            offsets[int(partition)] = int(offset)
        except ValueError as exc:
            raise CheckpointFormatError(
                f"checkpoint {text!r}: {part!r} is not 'partition:offset'"
            ) from exc
    return TopicCheckpoint(topic, offsets)
