"""Loads the company master (symbol, name, sector, industry) into the `company_master` table."""

from __future__ import annotations

from freshness_pipeline.catalog.tables import MASTER_TABLE
from freshness_pipeline.config.settings import Settings
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound
from freshness_pipeline.hudi.write import RAW_LAYOUTS, write_options
from freshness_pipeline.stream.universe import company_universe, universe_fingerprint

FINGERPRINT_KEY = "freshness.master_fingerprint"


def load_company_master(spark, settings: Settings, universe_size: int) -> bool:
    """Writes the universe once; returns False when the table already holds this universe."""
    companies = company_universe(universe_size)
    fingerprint = universe_fingerprint(companies)
    uri = settings.table_uri(MASTER_TABLE)
    try:
        meta = HudiTableMetadata(settings.lakehouse.table(MASTER_TABLE))
        if meta.latest_extra(FINGERPRINT_KEY) == fingerprint:
            return False
    except TableNotFound:
        pass
    rows = [(c.symbol, c.name, c.sector, c.industry) for c in companies]
    df = spark.createDataFrame(rows, "symbol string, name string, sector string, industry string")
    # insert_overwrite_table replaces the whole master in one replacecommit.
    options = write_options(
        RAW_LAYOUTS[MASTER_TABLE], "insert_overwrite_table", {FINGERPRINT_KEY: fingerprint}
    )
    df.write.format("hudi").options(**options).mode("append").save(uri)
    return True
