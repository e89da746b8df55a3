"""Ingestion: landed stream files into the raw Hudi tables, exactly once."""
