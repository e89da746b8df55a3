"""Keeps a lakehouse of Apache Hudi tables fresh (see README.md and docs/ARCHITECTURE.md)."""
