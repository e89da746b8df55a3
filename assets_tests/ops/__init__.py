"""Tests for freshness_pipeline.ops."""
