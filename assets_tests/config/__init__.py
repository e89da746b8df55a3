"""Tests for freshness_pipeline.config."""
