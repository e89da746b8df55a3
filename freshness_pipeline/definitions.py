"""Wires the project together for Dagster; the logic lives in the modules it imports.

Dagster loads `defs` (pyproject.toml's `[tool.dagster]`, workspace.yaml): this module is
an entry point, the one place a code server or a run worker builds its Settings.
"""

from __future__ import annotations

from freshness_pipeline.runtime.collector import kept_for_life

# The imports and the definitions built below live as long as the process (a code server,
# a run worker, a hand `dagster asset materialize`): made without collector passes and kept
# out of its walks, down to the one at exit (collector.py).
with kept_for_life():
    from dagster import Definitions

    from freshness_pipeline.config.settings import Settings, load_settings
    from freshness_pipeline.orchestration.alembic_location import name_alembic_scripts_by_path
    from freshness_pipeline.orchestration.asset_checks import (
        exactness_checks,
        exactness_job_and_schedule,
        freshness_checks,
        freshness_checks_sensor,
    )
    from freshness_pipeline.orchestration.assets import build_job_assets, job_lineages
    from freshness_pipeline.orchestration.automation import get_automation
    from freshness_pipeline.orchestration.clustering_sensor import (
        build_clustering_sensor,
        clustering_jobs,
    )
    from freshness_pipeline.orchestration.raw_sources import build_raw_sources
    from freshness_pipeline.orchestration.resources import HudiMetadataResource, HudiSparkResource
    from freshness_pipeline.orchestration.run_start import use_fork_server
    from freshness_pipeline.orchestration.step_executor import steps_executor
    from freshness_pipeline.runtime.memory_probe import start_if_requested as start_memory_probe


def build_definitions(settings: Settings) -> Definitions:
    """The assets with a freshness check each (asset_checks.py), resources, whatever
    launches the six jobs (FRESHNESS_AUTOMATION: our
    freshness sensor, Dagster's eager automation or an interval; automation.py) and the
    raw tables' clustering, which is table maintenance whoever launches the jobs
    (FRESHNESS_CLUSTERING_TABLES=none: no clustering jobs and no clustering sensor), all
    from one Settings value."""
    name_alembic_scripts_by_path()  # a code server opens an instance every sensor tick
    start_memory_probe(  # a soak's diagnostic; off unless FRESHNESS_MEMORY_PROBE is set
        settings.memory_probe, settings.memory_probe_s, settings.memory_probe_frames
    )
    use_fork_server(settings.run_start)  # a code server starts runs as forks (run_start.py)
    automation = get_automation(settings.scheduler.automation).build(settings)
    cluster_jobs = clustering_jobs(settings.clustering)
    cluster_sensors = (
        [
            build_clustering_sensor(
                cluster_jobs, settings.clustering, settings.spark_remote, settings.jobs
            )
        ]
        if cluster_jobs
        else []
    )
    checks = freshness_checks(settings.jobs, settings.staleness_target)
    exactness = exactness_checks(settings.jobs, settings.exactness_sample)
    exactness_jobs, exactness_schedules = exactness_job_and_schedule(
        exactness, settings.exactness_schedule
    )
    return Definitions(
        asset_checks=[*checks, *exactness],
        assets=[
            *build_raw_sources(settings),
            *build_job_assets(
                settings.staleness_target,
                automation.asset_condition,
                settings.faults_dir,
                settings.jobs,
                job_lineages(settings.jobs, settings.lakehouse),
            ),
        ],
        sensors=[
            *automation.sensors,
            *cluster_sensors,
            freshness_checks_sensor(checks, settings.scheduler.tick_s),
        ],
        schedules=[*automation.schedules, *exactness_schedules],
        jobs=[*automation.jobs, *cluster_jobs, *exactness_jobs],
        # A run's steps one after another in its own process, unless its run config asks
        # for them side by side (a wide sensor chain): step_executor.py says why.
        executor=steps_executor,
        resources={
            "hudi_meta": HudiMetadataResource.for_settings(settings),
            "spark": HudiSparkResource.for_settings(settings),
        },
    )


with kept_for_life():
    defs = build_definitions(load_settings())
