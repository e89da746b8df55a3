"""The tables the bundled pipeline knows by name: the raw tables ingestion writes, the
company master, the rejects, and which landing stream feeds which raw table."""

from __future__ import annotations

RAW_TABLES = ("price_raw", "trade_raw")
MASTER_TABLE = "company_master"
REJECTS_TABLE = "raw_rejects"
STREAMS = ("price", "trade")  # landing sub-folder per stream
STREAM_TABLE = {"price": "price_raw", "trade": "trade_raw"}
