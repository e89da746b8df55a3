"""Observing the raw source assets over real Hudi tables written by ingestion."""

from __future__ import annotations

import dagster as dg
import pytest

from assets_tests.ingestion.test_ingest import UNIVERSE, land
from freshness_pipeline.config.settings import Settings, load_settings
from freshness_pipeline.ingestion.ingest import Ingestor
from freshness_pipeline.ingestion.master import load_company_master
from freshness_pipeline.orchestration.raw_sources import observe_table
from freshness_pipeline.orchestration.resources import HudiMetadataResource


def test_missing_table_is_reported_not_raised(lakehouse: Settings):
    result = observe_table(HudiMetadataResource.for_settings(load_settings()), "price_raw")
    assert result.data_version == dg.DataVersion("missing")
    assert "price_raw" in str(result.metadata["status"])


@pytest.mark.spark
def test_observation_reports_commit_rows_and_watermark(spark, lakehouse: Settings):
    assert load_company_master(spark, lakehouse, UNIVERSE) is True
    assert load_company_master(spark, lakehouse, UNIVERSE) is False  # same universe: skipped
    expected = land(lakehouse, seconds=2, rate=200, malformed=0.0)
    Ingestor(spark, lakehouse).ingest_once()
    hudi_meta = HudiMetadataResource.for_settings(load_settings())
    trade = observe_table(hudi_meta, "trade_raw")
    assert trade.metadata["dagster/row_count"] == expected["trade"][0]
    assert trade.metadata["latest_operation"] == "BULK_INSERT"  # FRESHNESS_INGEST_WRITE
    assert trade.data_version.value == trade.metadata["latest_commit"]
    assert trade.metadata["watermark_us"] > 0 and trade.metadata["watermark_lag_s"] > 0
    master = observe_table(hudi_meta, "company_master")
    assert master.metadata["dagster/row_count"] == UNIVERSE
    assert master.metadata["latest_operation"] == "INSERT_OVERWRITE_TABLE"

    # and through Dagster itself: observing the source asset records an observation
    from dagster._core.definitions.observe import observe  # not re-exported in 1.13

    from freshness_pipeline.definitions import defs

    instance = dg.DagsterInstance.ephemeral()
    result = observe(
        [a for a in defs.assets if a.key == dg.AssetKey("trade_raw")],
        resources={"hudi_meta": hudi_meta},
        instance=instance,
    )
    assert result.success
    event = instance.get_latest_data_version_record(dg.AssetKey("trade_raw"), is_source=True)
    assert event is not None
