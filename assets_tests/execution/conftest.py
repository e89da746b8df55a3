from __future__ import annotations

from freshness_pipeline.ingestion.feeder import StreamFeeder

UNIVERSE = 60  # StreamFeeder's default universe

__all__ = ["UNIVERSE", "StreamFeeder"]
