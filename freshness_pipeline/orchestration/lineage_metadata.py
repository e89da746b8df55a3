"""A job asset's column schema and column lineage as Dagster metadata
(`dagster/column_schema`, `dagster/column_lineage`), from execution/lineage.py's model."""

from __future__ import annotations

from typing import Any

from dagster import AssetKey, TableColumn, TableColumnDep, TableColumnLineage, TableSchema

from freshness_pipeline.execution.lineage import SOURCE_SCHEMAS, asset_lineage
from freshness_pipeline.execution.lineage_model import AssetLineage


def dagster_metadata(asset: str) -> dict[str, Any]:
    """`dagster/column_schema` and `dagster/column_lineage` of one bundled job asset."""
    return lineage_metadata(asset_lineage(asset))


def lineage_metadata(lineage: AssetLineage) -> dict[str, Any]:
    """`dagster/column_schema` and `dagster/column_lineage` of a job asset's lineage."""
    deps = lineage.deps_by_column()
    schema = TableSchema(
        columns=[
            TableColumn(
                name=c.name,
                type=c.type,
                description="from " + ", ".join(str(e.source) for e in deps[c.name])
                if deps[c.name]
                else "from no input column",
            )
            for c in lineage.columns
        ]
    )
    column_lineage = TableColumnLineage(
        deps_by_column={
            column: [TableColumnDep(AssetKey(e.source.table), e.source.column) for e in edges]
            for column, edges in deps.items()
        }
    )
    return {"dagster/column_schema": schema, "dagster/column_lineage": column_lineage}


def source_schema_metadata(table: str) -> dict[str, Any]:
    """`dagster/column_schema` of a raw table the jobs read, so the columns the lineage
    names are listed on its upstream asset too ({} for a table we do not know)."""
    if table not in SOURCE_SCHEMAS:
        return {}
    return {"dagster/column_schema": TableSchema.from_name_type_dict(SOURCE_SCHEMAS[table])}
