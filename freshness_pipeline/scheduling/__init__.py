"""The scheduling method, pure Python (no dagster, pyspark or hudi): frozen dataclasses in,
a plan out, the clock passed in."""
