"""The sampled exactness check against real Hudi tables written by the pipeline's runs,
through the shared Spark service: every table passes mid-stream (raw rows ahead of the
tables, a run on a subset below its input's watermark), and a row broken on purpose fails
with its table, key and column named."""

from __future__ import annotations

import random

import dagster as dg
import pytest

from assets_tests.execution.conftest import StreamFeeder
from assets_tests.execution.test_oracle import random_config
from freshness_pipeline.catalog.jobs import JOBS, PIPELINE_ORDER
from freshness_pipeline.execution.run_config import resolve_run
from freshness_pipeline.execution.runner import JobRunner, _job_write_options
from freshness_pipeline.execution.sampled_check import VIEW_PREFIX, check_table
from freshness_pipeline.hudi.write import write_options
from freshness_pipeline.orchestration.asset_checks import EXACTNESS_CHECK, exactness_checks
from freshness_pipeline.orchestration.resources import HudiMetadataResource, HudiSparkResource

pytestmark = pytest.mark.spark


def test_every_table_passes_mid_stream_and_a_broken_row_fails(request, lakehouse, spark_service):
    spark = request.getfixturevalue("connect_spark")
    feeder = StreamFeeder(spark, lakehouse, seed=5)
    runner = JobRunner(spark, lakehouse.table_uri)
    feeder.land(3)
    feeder.ingest()
    for job in PIPELINE_ORDER:
        runner.run(JOBS[job], resolve_run(JOBS[job], [], None, feeder.meta))
    feeder.land(2)
    feeder.ingest()
    # trade_aggr on a subset, its cutoff below its input's watermark where there is one
    picked = random_config(random.Random(4), feeder, "trade_aggr")
    assert picked is not None
    runner.run(JOBS["trade_aggr"], resolve_run(JOBS["trade_aggr"], *picked, feeder.meta))
    feeder.land(1)
    feeder.ingest()  # the raw tables ahead of every job's table
    runner.wait_for_release()

    below = {}
    for job in PIPELINE_ORDER:
        result = check_table(spark, job, JOBS, lakehouse.table_uri, feeder.meta, 6, seed=3)
        assert result.passed, result.describe()
        assert result.judged >= 1, result.describe()
        assert result.watermark_us == feeder.meta(job).watermark_us()
        below[job] = result.filtered_below
    # The sampled keys reach below the full outer join and the master's join (their kinds
    # keep a key to itself; enriched_features' key columns traced as market_features' own)
    assert below["market_features"] == ("price_aggr", "trade_aggr"), below
    assert below["enriched_features"] == ("market_features", "price_aggr", "trade_aggr"), below
    assert below["sector_vwap"] == below["trade_aggr"] == (), below
    assert not [t for t in spark.catalog.listTables() if t.name.startswith(VIEW_PREFIX)]

    # One stored row of trade_aggr changed by hand, as a bug or a stray writer would.
    result = check_table(spark, "trade_aggr", JOBS, lakehouse.table_uri, feeder.meta, 6, seed=3)
    key = next(v.key for v in result.verdicts if v.state == "equal")
    uri = lakehouse.table_uri("trade_aggr")
    row = (
        spark.read.format("hudi")
        .load(uri)
        .where(f"second = timestamp_micros({key[0]}) AND symbol = '{key[1]}'")
    )
    broken = row.selectExpr(
        *[
            "volume + 1 AS volume" if c == "volume" else f"`{c}`"
            for c in row.columns
            if not c.startswith("_hoodie_")
        ]
    )
    spec = JOBS["trade_aggr"]
    options = {**write_options(spec.layout, "upsert"), **_job_write_options(spec)}
    broken.write.format("hudi").options(**options).mode("append").save(uri)

    failed = check_table(
        spark, "trade_aggr", JOBS, lakehouse.table_uri, feeder.meta, 2, seed=3, keys=[key]
    )
    assert not failed.passed
    assert [(v.key, v.columns) for v in failed.failed] == [(key, ("volume",))]
    text = failed.describe()
    assert "trade_aggr" in text and f"symbol={key[1]}" in text and "volume" in text, text

    # The same through Dagster: the asset check of trade_aggr, run alone, fails and says so.
    checks = exactness_checks(JOBS, 1000)  # every key of this small table: the broken one too
    trade_check = next(
        c for c in checks if {k.asset_key for k in c.check_keys} == {dg.AssetKey("trade_aggr")}
    )
    with dg.instance_for_test() as instance:
        outcome = dg.materialize(
            [dg.AssetSpec("trade_aggr"), trade_check],
            instance=instance,
            selection=dg.AssetSelection.checks(trade_check),
            resources={
                "spark": HudiSparkResource.for_settings(lakehouse, remote=spark_service.url),
                "hudi_meta": HudiMetadataResource.for_settings(lakehouse),
            },
        )
    [evaluation] = outcome.get_asset_check_evaluations()
    assert evaluation.check_name == EXACTNESS_CHECK and not evaluation.passed
    assert f"symbol={key[1]}" in (evaluation.description or ""), evaluation.description
    assert evaluation.metadata["keys_judged"].value >= 1
