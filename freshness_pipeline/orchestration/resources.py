"""Dagster resource over the Hudi metadata module (the sensor and observations use it)."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.metadata import HudiTableMetadata


class HudiMetadataResource(ConfigurableResource):
    """Reads timelines, commit metadata and file slices of the lakehouse's Hudi tables."""

    lakehouse_root: str | None = Field(
        default=None, description="Root URI of the Hudi tables (default FRESHNESS_LAKEHOUSE)."
    )

    def lakehouse(self) -> Lakehouse:
        settings = load_settings()
        if self.lakehouse_root:
            return settings.lakehouse_at(self.lakehouse_root).with_inputs(settings.lakehouse.inputs)
        return settings.lakehouse

    def table_uri(self, table: str) -> str:
        return self.lakehouse().table_uri(table)

    def table(self, table: str) -> HudiTableMetadata:
        """Raises TableNotFound (naming the path) when the table does not exist yet."""
        return self.lakehouse().metadata(table)
