from __future__ import annotations

from freshness_pipeline.stream.feeder import StreamFeeder

UNIVERSE = 60  # StreamFeeder's default universe

__all__ = ["UNIVERSE", "StreamFeeder"]
