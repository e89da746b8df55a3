"""Land and ingest stream seconds on a virtual clock, in-process: for job tests and the
benchmarks, where the wall-clock replayer would only add waiting."""

from __future__ import annotations

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.metadata import HudiTableMetadata
from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
from freshness_pipeline.ingestion.master import load_company_master
from freshness_pipeline.stream.generator import StreamConfig
from freshness_pipeline.stream.replayer import VirtualClock, generated_batches, land_instantly


class StreamFeeder:
    """Lands stream seconds on a virtual clock and ingests them (one commit per two files)."""

    def __init__(
        self, spark, settings: Settings, seed: int = 3, rate: float = 300, universe: int = 60
    ) -> None:
        self.settings = settings
        load_company_master(spark, settings, universe)
        self.batches = generated_batches(StreamConfig(seed=seed, rate=rate, universe_size=universe))
        self.clock = VirtualClock(1_700_000_000.0)
        self.ingestor = Ingestor(spark, settings, IngestConfig(max_files_per_commit=2))

    def land(self, seconds: int) -> None:
        land_instantly(self.batches, self.settings.landing_dir, seconds, self.clock)

    def ingest(self, streams=("price", "trade")) -> None:
        for stream in streams:
            while self.ingestor.ingest_stream(stream):
                pass

    def meta(self, table: str) -> HudiTableMetadata:
        return HudiTableMetadata(self.settings.lakehouse.table(table))
