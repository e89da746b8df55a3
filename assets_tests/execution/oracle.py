"""The batch oracle, for the tests (it lives in the package: `make chaos` uses it too)."""

from freshness_pipeline.execution.batch_oracle import (
    ORDER,
    batch_recompute,
    differences,
    read_table,
)

__all__ = ["ORDER", "batch_recompute", "differences", "read_table"]
