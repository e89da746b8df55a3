"""Wires the project together for Dagster; the logic lives in the modules it imports."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from freshness_pipeline.assets import JOB_ASSETS
from freshness_pipeline.clustering_sensor import build_clustering_sensor, clustering_jobs
from freshness_pipeline.raw_sources import RAW_SOURCES
from freshness_pipeline.resources import HudiMetadataResource
from freshness_pipeline.sensor import build_sensor
from freshness_pipeline.settings import load_settings
from freshness_pipeline.spark import HudiSparkResource

# FRESHNESS_CLUSTERING_TABLES=none: no clustering jobs and no clustering sensor.
CLUSTERING_JOBS = clustering_jobs(load_settings().clustering)
CLUSTERING_SENSORS = [build_clustering_sensor(CLUSTERING_JOBS)] if CLUSTERING_JOBS else []

defs = Definitions(
    assets=[*RAW_SOURCES, *JOB_ASSETS],
    jobs=CLUSTERING_JOBS,
    sensors=[build_sensor(), *CLUSTERING_SENSORS],
    # Every run materializes one asset, so the default multiprocess executor would only
    # add a second Python process per run (start-up and code load again, seconds on 2
    # cores) around a single step.
    executor=in_process_executor,
    resources={
        "hudi_meta": HudiMetadataResource(),
        "spark": HudiSparkResource(),
    },
)
