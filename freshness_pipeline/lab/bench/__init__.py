"""Benchmarks that print figures for docs/BENCHMARKS.md."""
