"""The resources are bound to the one Settings value the definitions were built from, and
keep it when Dagster re-creates them from their config in a run."""

from __future__ import annotations

import dagster as dg
import pytest

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.orchestration.resources import (
    HudiMetadataResource,
    HudiSparkResource,
    UnboundResource,
)


def test_a_resource_reads_the_lakehouse_of_the_settings_it_was_given(tmp_path):
    settings = load_settings({"FRESHNESS_LAKEHOUSE": str(tmp_path / "tables")})
    hudi_meta = HudiMetadataResource.for_settings(settings)
    assert hudi_meta.table_uri("trade_raw") == str(tmp_path / "tables" / "trade_raw")
    other = HudiMetadataResource.for_settings(settings, lakehouse_root=str(tmp_path / "b"))
    assert other.table_uri("trade_aggr") == str(tmp_path / "b" / "trade_aggr")
    spark = HudiSparkResource.for_settings(settings, remote="sc://127.0.0.1:1")
    assert spark.table_uri("trade_raw") == str(tmp_path / "tables" / "trade_raw")
    assert spark.description.startswith("shared Spark service sc://127.0.0.1:1")


def test_an_unbound_resource_says_how_to_bind_it():
    with pytest.raises(UnboundResource, match=r"HudiMetadataResource\.for_settings\(settings\)"):
        HudiMetadataResource().table_uri("trade_raw")


def test_the_binding_survives_dagsters_re_creation_in_a_run(tmp_path):
    settings = load_settings({"FRESHNESS_LAKEHOUSE": str(tmp_path / "tables")})

    @dg.asset
    def where(hudi_meta: HudiMetadataResource) -> str:
        return hudi_meta.table_uri("price_raw")

    result = dg.materialize(
        [where],
        resources={"hudi_meta": HudiMetadataResource.for_settings(settings)},
    )
    assert result.output_for_node("where") == str(tmp_path / "tables" / "price_raw")


def test_a_run_counts_its_steps_so_only_its_first_records_a_launch():
    """The steps after a run's first did not wait for a launch of their own: the asset
    leaves queue_wait and launch out of their phases (a chain, a peer's or a hand run of
    several assets); each copy of the resource (one per run) counts from 0."""
    spark = HudiSparkResource.for_settings(load_settings({}))
    assert spark.steps_before == 0
    spark.step_started()
    spark.step_started()
    assert spark.steps_before == 2
    another_run = HudiSparkResource.for_settings(load_settings({}))
    assert another_run.steps_before == 0
    assert spark.handoffs is spark.handoffs and spark.handoffs is not another_run.handoffs
