"""Shared set-up of the benchmarks: a throwaway lakehouse and a Hudi-ready Spark session."""

from __future__ import annotations

import tempfile
from pathlib import Path

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.stream.universe import DEFAULT_UNIVERSE_SIZE


def scratch(prefix: str) -> tuple[Path, dict[str, str]]:
    """A new temporary folder for one benchmark run (the project's own data is untouched),
    and the settings that put a lakehouse and a landing area in it."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    return root, {
        "FRESHNESS_LAKEHOUSE": str(root / "tables"),
        "FRESHNESS_LANDING": str(root / "landing"),
    }


def temp_lakehouse(prefix: str, settings: Settings, java_options: str = ""):
    """`settings` pointed at a new scratch lakehouse, and a Spark session on it with the
    company master loaded: (settings, spark). `java_options`: its driver's own (e.g.
    ingestion's)."""
    _, where = scratch(prefix)
    settings = settings.changed(where)
    from freshness_pipeline.ingestion.master import load_company_master
    from freshness_pipeline.runtime.spark import build_spark_session

    spark = build_spark_session(
        settings, app_name=prefix.strip("_"), remote="", java_options=java_options
    )  # own driver
    load_company_master(spark, settings, DEFAULT_UNIVERSE_SIZE)
    return settings, spark


def warmed_feeder(spark, settings: Settings, seed: int, rate: float, warmup_s: int):
    """A stream feeder on the lakehouse with `warmup_s` seconds of stream landed and
    ingested: the tables a side-by-side benchmark starts from."""
    from freshness_pipeline.ingestion.feeder import StreamFeeder

    feeder = StreamFeeder(spark, settings, seed=seed, rate=rate)
    feeder.land(warmup_s)
    feeder.ingest()
    return feeder
