"""Python's garbage collector around the objects a process keeps for its whole life.

Loading the definitions makes some hundreds of thousands of objects (Dagster's, Spark's,
ours) that live until the process exits. Collector passes while they are made only walk
them again and again, and the collection at interpreter exit walks them once more: about
0.6 s of a hand `dagster asset materialize` (docs/BENCHMARKS.md, "The hand path"). Kept
out of the collector's walks (`gc.freeze`), they are not collected, which is what they
never are anyway; a fork server's children then share their pages too.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def kept_for_life() -> Iterator[None]:
    """No collection while the block runs; afterwards, every object alive then (the
    block's and the ones before it) stays out of the collector's later walks."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
