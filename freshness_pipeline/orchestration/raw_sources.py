"""The raw Hudi tables as observable source assets: fed by ingestion, never scheduled.

Observing one reports its newest commit, row count and watermark (t_latest), so the asset
graph shows how fresh the inputs of the six jobs are.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

from dagster import (
    AssetsDefinition,
    DataVersion,
    MetadataValue,
    ObserveResult,
    SourceAsset,
    observable_source_asset,
)

from freshness_pipeline.catalog.tables import MASTER_TABLE, RAW_TABLES, REJECTS_TABLE, STREAM_TABLE
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.metadata import TableNotFound
from freshness_pipeline.orchestration.lineage_metadata import source_schema_metadata
from freshness_pipeline.orchestration.resources import HudiMetadataResource
from freshness_pipeline.scheduling.timefmt import iso
from freshness_pipeline.scheduling.units import US_PER_S

# Every asset, raw and derived, is in this one group: Dagster's asset graph opens a
# graph of several groups as one collapsed box each, a single group as the whole graph.
ASSET_GROUP = "market_data"
# Where an asset sits in the pipeline (raw, aggregates, features, views), as an asset tag.
LAYER_TAG = "freshness/layer"
RAW_LAYER = "raw"
DESCRIPTIONS = {
    "price_raw": "IEX-DEEP-like price-level updates (symbol, side, price, size, event_ts, "
    "arrival_ts), Hudi copy-on-write, partitioned by the symbol's first letter.",
    "trade_raw": "Trade reports (symbol, price, size, trade_id, event_ts, arrival_ts), Hudi "
    "copy-on-write, partitioned by the symbol's first letter.",
    "company_master": "Company master data (symbol, name, sector, industry), loaded once.",
    "raw_rejects": "Quarantined stream records: landing position, reason, detail, raw text.",
}


def observe_table(hudi_meta: HudiMetadataResource, table: str) -> ObserveResult:
    try:
        meta = hudi_meta.table(table)
    except TableNotFound as exc:
        return ObserveResult(
            data_version=DataVersion("missing"),
            metadata={"status": f"missing: {exc}", "path": hudi_meta.table_uri(table)},
        )
    try:
        return _observe_readable(meta, table, hudi_meta)
    except Exception as exc:  # noqa: BLE001 - say why on the asset; its readers wait (sensor)
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:500]
        return ObserveResult(
            data_version=DataVersion("unreadable"),
            metadata={"status": f"unreadable: {reason}", "path": hudi_meta.table_uri(table)},
        )


def _observe_readable(meta, table: str, hudi_meta: HudiMetadataResource) -> ObserveResult:
    commits = meta.commits()
    latest = commits[-1] if commits else None
    metadata: dict[str, Any] = {
        "path": MetadataValue.path(meta.table_uri),
        "commits_on_timeline": len(commits),
        "file_slices": len(meta.latest_file_slices()),
        "dagster/row_count": meta.row_count(),
    }
    if latest is not None:
        metadata["latest_commit"] = latest.instant
        metadata["latest_commit_completed"] = latest.completion
        metadata["latest_operation"] = latest.operation
        metadata["latest_files_written"] = len(latest.written)
    if meta.external:
        metadata["written_by"] = "external (FRESHNESS_INPUTS)"
        metadata["arrival_column"] = meta.arrival_column or "none: commit completion time"
    watermark = meta.watermark_us()
    if watermark is not None:
        metadata["watermark"] = iso(watermark, "milliseconds")
        metadata["watermark_us"] = watermark
        metadata["watermark_lag_s"] = round(time.time() - watermark / US_PER_S, 3)
    metadata.update(kafka_lag_metadata(table, hudi_meta.bound_settings()))
    return ObserveResult(
        data_version=DataVersion(latest.instant if latest else "empty"), metadata=metadata
    )


def describe(table: str, settings: Settings) -> str:
    """The table's description; a declared external input (inputs.py) says where it is,
    that someone else writes it and where its arrival times come from."""
    declared = settings.lakehouse.inputs.get(table)
    if declared is None or not declared.external:
        if table in DESCRIPTIONS:
            return DESCRIPTIONS[table]
        readers = [n for n, s in settings.jobs.items() if table in (*s.inputs, *s.dimensions)]
        return (
            f"A Hudi table under the lakehouse root, read by {', '.join(readers)} (a declared "
            "job's input or dimension); no job here writes it."
        )
    return (
        f"External Hudi table at {declared.location.spark}, declared in FRESHNESS_INPUTS as "
        f"the jobs' {table} (read by {', '.join(declared.read_by)}); written by someone "
        f"else. Arrival times: {declared.arrival_source}."
    )


def kafka_lag_metadata(table: str, settings: Settings) -> dict[str, Any]:
    """With the Kafka source, a raw table's consumer lag: messages in its topic after the
    table's Streamer checkpoint (high watermark minus checkpoint, per partition and in
    all), asked of the broker without Spark. An unreachable broker is reported, not raised."""
    streams = [s for s, t in STREAM_TABLE.items() if t == table]
    if settings.source != "kafka" or not streams:
        return {}
    from freshness_pipeline.ingestion.kafka_ingest import consumer_lag

    topic = settings.kafka.topics[streams[0]]
    try:
        lag = consumer_lag(settings, streams[0])
    except Exception as exc:
        return {"kafka_topic": topic, "kafka_lag_status": f"unavailable: {exc}"[:300]}
    total = lag.pop("total")
    return {
        "kafka_topic": topic,
        "kafka_consumer_lag": total,
        "kafka_lag_by_partition": MetadataValue.json(lag),
    }


def raw_source(table: str, settings: Settings) -> SourceAsset | AssetsDefinition:
    with warnings.catch_warnings():
        # observable_source_asset is marked beta; it is the documented way to observe
        # tables that Dagster does not materialize.
        warnings.simplefilter("ignore")
        return _raw_source(table, settings)


def _column_schema(table: str, settings: Settings) -> dict[str, Any]:
    """Our raw tables' columns (lineage.py); a declared external table's are its owner's."""
    declared = settings.lakehouse.inputs.get(table)
    if declared is not None and declared.external:
        return {}
    return source_schema_metadata(table)


def _raw_source(table: str, settings: Settings) -> SourceAsset | AssetsDefinition:
    @observable_source_asset(
        name=table,
        group_name=ASSET_GROUP,
        description=describe(table, settings),
        tags={"dagster/kind/hudi": "", "dagster/kind/spark": "", LAYER_TAG: RAW_LAYER},
        metadata=_column_schema(table, settings),
    )
    def _observe(hudi_meta: HudiMetadataResource) -> ObserveResult:
        return observe_table(hudi_meta, table)

    return _observe


def source_tables(settings: Settings) -> tuple[str, ...]:
    """The tables the jobs read and no job writes (inputs and dimensions); with the bundled
    jobs also the rejects our ingestion writes beside the raw tables."""
    jobs = settings.jobs
    read = {t for spec in jobs.values() for t in (*spec.inputs, *spec.dimensions)} - set(jobs)
    market = (*RAW_TABLES, MASTER_TABLE, REJECTS_TABLE)
    if read <= set(market):
        return tuple(t for t in market if t in read or t == REJECTS_TABLE)
    return tuple(sorted(read))


def build_raw_sources(settings: Settings) -> list[SourceAsset | AssetsDefinition]:
    """The tables the jobs read and nobody here schedules, as observable sources."""
    return [raw_source(t, settings) for t in source_tables(settings)]
