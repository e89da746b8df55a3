"""Tests for freshness_pipeline.hudi."""
