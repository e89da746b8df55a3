"""Tests for freshness_pipeline.scheduling."""
