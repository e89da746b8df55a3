"""A new process's Spark session, as a run starts one: build it from the settings and run
`SELECT 1`. bench/run_overhead.py times this process as a whole; it prints its own seconds
from `main` on, so the caller knows it ran to its end."""

from __future__ import annotations

import time

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.runtime.spark import build_spark_session


def main(argv: list[str], settings: Settings) -> int:
    started = time.monotonic()
    spark = build_spark_session(settings, app_name="overhead_probe")
    spark.sql("SELECT 1").collect()
    print(time.monotonic() - started)
    return 0
