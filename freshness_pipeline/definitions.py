"""Wires the project together for Dagster; the logic lives in the modules it imports."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from freshness_pipeline.assets import JOB_ASSETS
from freshness_pipeline.raw_sources import RAW_SOURCES
from freshness_pipeline.resources import HudiMetadataResource
from freshness_pipeline.sensor import build_sensor
from freshness_pipeline.spark import HudiSparkResource

defs = Definitions(
    assets=[*RAW_SOURCES, *JOB_ASSETS],
    sensors=[build_sensor()],
    # Every run materializes one asset, so the default multiprocess executor would only
    # add a second Python process per run (start-up and code load again, seconds on 2
    # cores) around a single step.
    executor=in_process_executor,
    resources={
        "hudi_meta": HudiMetadataResource(),
        "spark": HudiSparkResource(),
    },
)
