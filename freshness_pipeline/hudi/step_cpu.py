"""What a step costs in the JVM that runs it, as the JVM counts it (jvm/StepCpu.java).

The runner tags the step's Spark jobs (`tagged`): a tag on a Spark Connect session rides
along with each request (no round trip); on a local session it is a job tag of the
SparkContext. After the commit one query (`take`) reads what the tag's tasks cost
(executor CPU, run and GC time, deserialization) and what the whole JVM spent while the
step ran (process CPU, JIT compilation, GC, the classes Spark generated and compiled),
and forgets the tag (on a local session, a
call into its JVM). Measuring never fails a
run: a JVM without the listener, or an executor in another JVM (a Spark cluster), gives
nothing, and the run says so.
"""

from __future__ import annotations

import contextlib
import json
import logging
import uuid
from collections.abc import Iterator, Mapping

log = logging.getLogger(__name__)

STEP_TAG_PREFIX = "freshness-step-"
LISTENER_CLASS = "io.freshness.hudi.StepCpu"
# What `take` returns, in seconds (tasks: a count), in the order the metadata shows them.
FIELDS = (
    "tasks",
    "task_cpu_s",
    "task_deserialize_cpu_s",
    "task_run_s",
    "task_gc_s",
    "jvm_cpu_s",
    "jvm_jit_s",
    "jvm_gc_s",
    "jvm_codegen_classes",  # classes Spark's code generation compiled (a count)
)


def _is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


@contextlib.contextmanager
def tagged(spark) -> Iterator[str]:
    """Every Spark job this thread starts on `spark` inside the block carries a new step
    tag, which is yielded."""
    tag = f"{STEP_TAG_PREFIX}{uuid.uuid4().hex[:20]}"
    if _is_connect(spark):
        spark.addTag(tag)
        remove = spark.removeTag
    else:
        spark.sparkContext.addJobTag(tag)
        remove = spark.sparkContext.removeJobTag
    try:
        yield tag
    finally:
        with contextlib.suppress(Exception):
            remove(tag)


def take(spark, tag: str) -> dict[str, float]:
    """The tag's costs (FIELDS), read once: empty when they cannot be read here."""
    try:
        if _is_connect(spark):
            query = f"SELECT reflect('{LISTENER_CLASS}', 'take', '{tag}') AS cpu"
            text = spark.sql(query).collect()[0]["cpu"]
        else:
            # In this process's own JVM: a call through the gateway, not a Spark job
            # (a query plan and a task per commit, in what it measures).
            text = spark.sparkContext._jvm.io.freshness.hudi.StepCpu.take(tag)
        found = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - a measurement never fails a committed run
        log.warning("the step's CPU could not be read (%s)", " ".join(str(exc).split())[:200])
        return {}
    return {k: float(found[k]) for k in FIELDS if k in found and float(found[k]) >= 0}


def jobs_by_pool(spark) -> dict[str, int]:
    """Spark jobs the session's JVM has started so far, by FAIR scheduler pool (a Spark
    Connect session: the service's JVM); empty when the listener is not there."""
    try:
        if _is_connect(spark):
            query = f"SELECT reflect('{LISTENER_CLASS}', 'pools') AS pools"
            text = spark.sql(query).collect()[0]["pools"]
        else:
            text = spark.sparkContext._jvm.io.freshness.hudi.StepCpu.pools()
        return {str(k): int(v) for k, v in json.loads(text).items()}
    except Exception as exc:  # noqa: BLE001 - a measurement, never a failure
        log.warning("jobs by pool could not be read (%s)", " ".join(str(exc).split())[:200])
        return {}


def cpu_metadata(cpu: Mapping[str, float]) -> dict[str, object]:
    """A step's CPU as materialization metadata: `cpu_<field>` numbers, and one line."""
    if not cpu.get("tasks"):
        return {"cpu": "not measured (no Spark task under the step's tag in this JVM)"}
    metadata: dict[str, object] = {f"cpu_{k}": round(cpu[k], 3) for k in FIELDS if k in cpu}
    metadata["cpu_tasks"] = int(cpu["tasks"])
    if "jvm_codegen_classes" in cpu:
        metadata["cpu_jvm_codegen_classes"] = int(cpu["jvm_codegen_classes"])
    return metadata


def cpu_text(cpu: Mapping[str, float]) -> str:
    """A commit's or step's CPU in one line, for a log."""
    if not cpu.get("tasks"):
        return "CPU not measured"
    return (
        f"CPU {cpu.get('task_cpu_s', 0):.2f} s in {int(cpu['tasks'])} tasks, "
        f"{cpu.get('jvm_cpu_s', 0):.2f} s in the JVM (JIT {cpu.get('jvm_jit_s', 0):.2f} s, "
        f"GC {cpu.get('jvm_gc_s', 0):.2f} s, {int(cpu.get('jvm_codegen_classes', 0))} "
        "classes generated)"
    )
