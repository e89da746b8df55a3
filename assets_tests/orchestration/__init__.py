"""Tests for freshness_pipeline.orchestration."""
