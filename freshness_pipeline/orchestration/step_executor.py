"""The runs' executor: a run's steps one after another in its own process, unless its run
config asks for them side by side.

Dagster's default executor (`multi_or_in_process_executor`) starts a process per step
unless a run says otherwise; most of our runs have one step or a short chain, where that
process (its start, the definitions and a Spark session again, seconds on 2 cores) costs
more than it saves. So this one is the same choice with the other default: in process,
as every peer's run, a hand materialization and the sensor's narrow chains execute, and
Dagster's multiprocess executor for a sensor run whose run config says
`execution: {config: {multiprocess: {...}}}` (`run_plan.execution_config`: a chain of many
views below one table, with FRESHNESS_STEPS_AT_ONCE above 1). Its step processes fork from
a server that has imported what a run's own fork server does (run_start.PRELOAD: the
definitions, Dagster, PySpark's Connect client) once per run, not once per step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from dagster import (
    Field,
    InitExecutorContext,
    Selector,
    executor,
    in_process_executor,
    multiprocess_executor,
)
from dagster._core.definitions.executor_definition import IN_PROC_CONFIG, MULTI_PROC_CONFIG

from freshness_pipeline.orchestration.run_start import PRELOAD

MODES = {"in_process": in_process_executor, "multiprocess": multiprocess_executor}


def _requirements(config):
    ((mode, sub),) = (config or {"in_process": {}}).items()
    return MODES[mode].get_requirements(sub or {})


@executor(
    name="in_process_or_steps_at_once",
    config_schema=Field(
        Selector({"in_process": IN_PROC_CONFIG, "multiprocess": MULTI_PROC_CONFIG}),
        default_value={"in_process": {}},
    ),
    requirements=_requirements,
)
def steps_executor(init_context: InitExecutorContext):
    """In process unless the run config selects `multiprocess` (with its own settings)."""
    ((mode, chosen_config),) = init_context.executor_config.items()
    config = cast(Mapping[str, Any], chosen_config)  # the selector's schema: a dict
    chosen = MODES[mode]
    server = (config or {}).get("start_method", {}).get("forkserver")
    if server is not None and not server.get("preload_modules"):
        start = {"forkserver": {**server, "preload_modules": list(PRELOAD)}}
        config = {**config, "start_method": start}
    # Dagster types executor_creation_fn as Optional; both executors chosen from have one.
    return chosen.executor_creation_fn(  # type: ignore[misc]
        InitExecutorContext(
            job=init_context.job,
            executor_def=chosen,
            executor_config=config,
            instance=init_context.instance,
        )
    )
