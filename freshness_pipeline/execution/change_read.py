"""Reading the old versions of changed rows from a table's change data capture
(hudi/changes.py says which commits): the rows a deletion or an update took away from
their groups, with the table's own columns, for the run to recompute those groups.

Hudi's CDC query returns each change as `op` (i, u, d), `ts_ms` (the commit's time) and
the `before` and `after` images as JSON text whose values are Spark's internal ones (a
timestamp as microseconds since the epoch, a date as days) or, from a CDC log, Avro's. So
every value is read as text and cast by the column's type; a value that does not cast
(a decimal's bytes from a CDC log) reads as null, which no group key is."""

from __future__ import annotations

from collections.abc import Mapping

from freshness_pipeline.execution.external_read import sql_strings
from freshness_pipeline.hudi.changes import ChangeWindow

CDC_OPTIONS = {
    "hoodie.datasource.query.type": "incremental",
    "hoodie.datasource.query.incremental.format": "cdc",
}
_NUMBER = "'^-?[0-9]+$'"


def typed_value(text: str, spark_type: str) -> str:
    """SQL casting a before-image's text `text` to `spark_type`."""
    if spark_type == "timestamp":
        return (
            f"CASE WHEN {text} RLIKE {_NUMBER} THEN timestamp_micros(CAST({text} AS BIGINT)) "
            f"ELSE CAST({text} AS TIMESTAMP) END"
        )
    if spark_type == "date":
        return (
            f"CASE WHEN {text} RLIKE {_NUMBER} THEN date_add(DATE'1970-01-01', "
            f"CAST({text} AS INT)) ELSE CAST({text} AS DATE) END"
        )
    if spark_type == "string":
        return text
    return f"CAST({text} AS {spark_type})"


def before_images_sql(columns: Mapping[str, str], source: str = "cdc") -> str:
    """The old versions of updated and deleted rows in the view `source` (a CDC query,
    already kept to the window's commits), as rows of `columns` (name -> Spark type)."""
    values = ", ".join(
        f"{typed_value(f'image[{name!r}]', kind)} AS `{name}`" for name, kind in columns.items()
    )
    return (
        f"SELECT {values} FROM (\n"
        f"  SELECT from_json(before, 'map<string,string>') AS image FROM {source}\n"
        "  WHERE op IN ('u', 'd') AND before IS NOT NULL\n)"
    )


def read_changes(spark, table_uri: str, window: ChangeWindow, columns: Mapping[str, str]):
    """The before-images of the rows the window's commits updated or deleted."""
    cdc = (
        spark.read.format("hudi")
        .options(**CDC_OPTIONS)
        .option("hoodie.datasource.read.begin.instanttime", window.start)
        .option("hoodie.datasource.read.end.instanttime", window.end)
        .load(table_uri)
    )
    return cdc.where(f"ts_ms IN ({sql_strings(window.commit_times)})")
