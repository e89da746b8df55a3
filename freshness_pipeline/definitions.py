"""Wires the project together for Dagster; the logic lives in the modules it imports."""

from __future__ import annotations

from dagster import Definitions

from freshness_pipeline.assets import JOB_ASSETS
from freshness_pipeline.raw_sources import RAW_SOURCES
from freshness_pipeline.resources import HudiMetadataResource
from freshness_pipeline.sensor import build_sensor
from freshness_pipeline.spark import HudiSparkResource

defs = Definitions(
    assets=[*RAW_SOURCES, *JOB_ASSETS],
    sensors=[build_sensor()],
    resources={
        "hudi_meta": HudiMetadataResource(),
        "spark": HudiSparkResource(),
    },
)
