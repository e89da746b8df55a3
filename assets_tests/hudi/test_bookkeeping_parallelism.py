"""A commit's bookkeeping in two Spark tasks, not one per partition: on a real Hudi table of
26 partitions, the stages that list and delete the markers, finalize the write and read
the index's keys run in at most two tasks with SHARED_OPTIONS, and in one task per
partition (or file) with Hudi's own defaults (so the options, not the data, make the
difference)."""

from __future__ import annotations

import string

import pytest

from freshness_pipeline.hudi.write import (
    BOOKKEEPING_PARALLELISM,
    HUDI_BOOKKEEPING_DEFAULTS,
    SHARED_OPTIONS,
)

pytestmark = pytest.mark.spark

SIMPLE_KEYS = "org.apache.hudi.keygen.SimpleKeyGenerator"
# the Hudi method each bookkeeping stage runs (in the stage's call site; the index's other
# stage, one task per partition, lists the latest files and stays as Hudi has it)
BOOKKEEPING = (
    "DirectWriteMarkers.createdAndMergedDataPaths(",
    "FSUtils.deleteDir(",
    "HoodieSimpleIndex.fetchRecordLocations(",
)


def _upsert(spark, path: str, options: dict[str, str], value: int) -> None:
    rows = [(f"{letter}{i}", letter, value) for letter in string.ascii_uppercase for i in (1, 2)]
    spark.createDataFrame(rows, "id string, part string, value int").write.format("hudi").options(
        **{
            "hoodie.table.name": "bookkeeping",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part",
            "hoodie.datasource.write.keygenerator.class": SIMPLE_KEYS,
            "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.write.hive_style_partitioning": "false",
            "hoodie.parquet.small.file.limit": "0",
            **options,
        }
    ).mode("append").save(path)


def _bookkeeping_tasks(spark, group: str) -> dict[str, int]:
    """Per bookkeeping kind, the most tasks one of its stages ran in the job group."""
    sc = spark.sparkContext
    tracker, store = sc.statusTracker(), sc._jsc.sc().statusStore()
    found: dict[str, int] = {}
    for job_id in tracker.getJobIdsForGroup(group):
        for stage_id in tracker.getJobInfo(job_id).stageIds:
            info = tracker.getStageInfo(stage_id)
            if info is None:
                continue
            details = store.lastStageAttempt(stage_id).details()
            for kind in BOOKKEEPING:
                if kind in details:
                    found[kind] = max(found.get(kind, 0), info.numTasks)
    return found


@pytest.mark.parametrize("narrowed", [True, False], ids=["shared-options", "hudi-defaults"])
def test_a_commit_over_26_partitions_keeps_its_bookkeeping_to_two_tasks(spark, tmp_path, narrowed):
    options = dict(SHARED_OPTIONS) if narrowed else {**SHARED_OPTIONS, **HUDI_BOOKKEEPING_DEFAULTS}
    path = str(tmp_path / "bookkeeping")
    _upsert(spark, path, options, 1)
    group = f"bookkeeping-{narrowed}"
    spark.sparkContext.setJobGroup(group, "an upsert into every partition")
    try:
        _upsert(spark, path, options, 2)  # looks every key up, rewrites all 26 files
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    tasks = _bookkeeping_tasks(spark, group)
    assert set(tasks) == set(BOOKKEEPING), tasks
    if narrowed:
        assert max(tasks.values()) <= BOOKKEEPING_PARALLELISM, tasks
    else:
        assert min(tasks.values()) >= 26, tasks  # one per partition or file
    assert spark.read.format("hudi").load(path).where("value = 2").count() == 52
