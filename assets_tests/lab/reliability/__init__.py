"""Tests for freshness_pipeline.lab.reliability."""
