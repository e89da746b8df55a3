"""A step's CPU as its JVM counts it: the tag, the one read after the commit (a query
through Spark Connect, a call into a local session's JVM), the metadata (fakes); and one
real step through Spark with its tasks' CPU recorded."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from assets_tests.execution.conftest import StreamFeeder
from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.execution.run_config import resolve_run
from freshness_pipeline.execution.runner import JobRunner
from freshness_pipeline.hudi import step_cpu
from freshness_pipeline.hudi.lakehouse import Lakehouse


class FakeListener:
    """The listener class as the gateway shows it: `take` answers or raises."""

    def __init__(self, answer: str | Exception) -> None:
        self.answer = answer
        self.taken: list[str] = []

    def take(self, tag: str) -> str:
        self.taken.append(tag)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class FakeContext:
    def __init__(self, listener: FakeListener) -> None:
        self.tags: list[str] = []
        # spark.sparkContext._jvm.io.freshness.hudi.StepCpu
        hudi = SimpleNamespace(StepCpu=listener)
        self._jvm = SimpleNamespace(io=SimpleNamespace(freshness=SimpleNamespace(hudi=hudi)))

    def addJobTag(self, tag: str) -> None:  # noqa: N802 - pyspark's name
        self.tags.append(tag)

    def removeJobTag(self, tag: str) -> None:  # noqa: N802 - pyspark's name
        self.tags.remove(tag)


class FakeSession:
    """A local session: job tags on its SparkContext, the listener reached through the
    gateway to its JVM (no query)."""

    def __init__(self, answer: str | Exception) -> None:
        self.listener = FakeListener(answer)
        self.sparkContext = FakeContext(self.listener)

    def sql(self, text: str):
        raise AssertionError(f"a local session's costs are read without a query: {text}")


def test_a_step_is_tagged_while_it_runs_and_its_costs_read_once():
    spark = FakeSession('{"tasks": 4, "task_cpu_s": 0.5, "task_run_s": 0.8, "jvm_cpu_s": 1.25}')
    with step_cpu.tagged(spark) as tag:
        assert spark.sparkContext.tags == [tag] and tag.startswith("freshness-step-")
    assert spark.sparkContext.tags == []
    cpu = step_cpu.take(spark, tag)
    assert spark.listener.taken == [tag]
    assert cpu == {"tasks": 4.0, "task_cpu_s": 0.5, "task_run_s": 0.8, "jvm_cpu_s": 1.25}
    assert step_cpu.cpu_metadata(cpu) == {
        "cpu_tasks": 4,
        "cpu_task_cpu_s": 0.5,
        "cpu_task_run_s": 0.8,
        "cpu_jvm_cpu_s": 1.25,
    }


def test_the_classes_spark_generated_are_a_whole_count_in_the_metadata():
    cpu = step_cpu.take(FakeSession('{"tasks": 2, "jvm_codegen_classes": 29}'), "t")
    assert cpu == {"tasks": 2.0, "jvm_codegen_classes": 29.0}
    assert step_cpu.cpu_metadata(cpu) == {"cpu_tasks": 2, "cpu_jvm_codegen_classes": 29}
    assert "29 classes generated" in step_cpu.cpu_text(cpu)


def test_a_jvm_that_cannot_say_gives_nothing_and_the_run_says_so():
    assert step_cpu.take(FakeSession(RuntimeError("ClassNotFoundException StepCpu")), "t") == {}
    # a counter the JVM does not keep comes back negative: left out
    assert step_cpu.take(FakeSession('{"tasks": 1, "jvm_jit_s": -1.0}'), "t") == {"tasks": 1.0}
    assert step_cpu.cpu_metadata({}) == {
        "cpu": "not measured (no Spark task under the step's tag in this JVM)"
    }


@pytest.mark.spark
def test_a_real_step_records_its_tasks_cpu_and_the_jvms(spark, connect_spark, tmp_path: Path):
    """Through the shared Spark service, as runs go (a Connect session's tag becomes part
    of its jobs' tags there); a local session's job tags: ingestion/test_ingest.py."""
    settings = Settings(
        Lakehouse.parse(str(tmp_path / "tables")),
        tmp_path / "landing",
        Path(".cache/jars"),
        "local[2]",
    )
    feeder = StreamFeeder(spark, settings, seed=6)
    feeder.land(2)
    feeder.ingest()
    spec = JOBS["trade_aggr"]
    files = [p.uri for p in feeder.meta("trade_raw").pending_files(None)]
    session = connect_spark
    resolved = resolve_run(spec, files, None, feeder.meta)
    report = JobRunner(session, settings.table_uri).run(spec, resolved)
    cpu = report.cpu
    assert cpu["tasks"] >= 1, cpu
    assert cpu["task_cpu_s"] > 0 and cpu["task_run_s"] > 0, cpu
    # the JVM's own CPU over the step covers its tasks' (they ran in it) and the driver's
    assert cpu["jvm_cpu_s"] >= cpu["task_cpu_s"], cpu
    # Spark's code generation compiled what the step's queries needed (the service runs
    # with FRESHNESS_SPARK_CODEGEN's default): a count, never negative
    assert cpu["jvm_codegen_classes"] >= 0, cpu
    assert step_cpu.take(session, "freshness-step-unknown") == {"tasks": 0.0}
