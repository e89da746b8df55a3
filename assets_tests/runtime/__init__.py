"""Tests for freshness_pipeline.runtime."""
