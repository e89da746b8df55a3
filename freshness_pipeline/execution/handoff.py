"""Rows a step hands on to the steps after it in the same run (a chain, or a hand
materialize of a table and its descendants), so a child reads its parent's new rows from
the run's memory instead of the Hudi files its parent just wrote.

Exact only where the two reads are equal (METHOD 5.6). After a parent's run moved its
watermark from `t_done_before` to `cutoff`, the table's rows are the ones that run upserted
(its result, stored as written) and rows of earlier commits, whose arrivals are at or below
their own watermarks, so at or below `t_done_before`. A child whose window over the parent
is exactly (t_done_before, cutoff] therefore reads the same rows from the kept result,
filtered by that window, as from the table. Any other window, a table someone else writes,
and a parent that followed its input's deletions (its commit also deletes rows) read from
Hudi as before.

The kept rows are the result's rows themselves (collected, then a local relation in a
temp view of the run's Spark session), so a child's plans do not carry the parent's plan.
The run drops them when it ends (HudiSparkResource's teardown); a run that dies leaves
them to its session's end. Measured on local disk (`make bench-handoff`) this is slower
than reading the parent's new files, so it is off unless FRESHNESS_HANDOFF=true.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

HANDOFF_PREFIX = "handoff_"
# A bigger result (a backlog's run) goes through the client twice: read from Hudi instead.
MAX_KEPT_ROWS = 200_000


@dataclass(frozen=True)
class Handoff:
    table: str
    view: str
    t_done_before_us: int | None
    cutoff_us: int


class Handoffs:
    """The rows each step of one run committed, by table: at most one (the newest) each."""

    def __init__(self) -> None:
        self._held: dict[str, Handoff] = {}

    def __contains__(self, table: str) -> bool:
        return table in self._held

    def view_for(self, table: str, t_done_us: int | None, cutoff_us: int) -> str | None:
        """The view holding exactly the rows of `table` with t_done < arrival <= cutoff,
        or None when no kept result covers that window exactly."""
        held = self._held.get(table)
        if held is None or held.t_done_before_us != t_done_us or held.cutoff_us != cutoff_us:
            return None
        return held.view

    def keep(
        self,
        spark,
        table: str,
        result_view: str,
        t_done_before_us: int | None,
        cutoff_us: int,
        rows: int,
    ) -> bool:
        """Keeps the committed result `result_view` (`rows` rows) of a run of `table` for
        later steps. Called after the commit: a failure here costs the later steps a Hudi
        read, never the run, so it returns False instead of raising."""
        self._drop(spark, table)
        if rows > MAX_KEPT_ROWS:
            return False
        view = f"{HANDOFF_PREFIX}{table}"
        try:
            result = spark.table(result_view)
            # The rows themselves, not a view of the result: a view would carry the
            # parent's whole plan into every plan of the child (and its children), which
            # Spark analyses and matches against its cache at every query.
            kept = spark.createDataFrame(result.collect(), schema=result.schema)
            kept.createOrReplaceTempView(view)
        except Exception:
            with contextlib.suppress(Exception):
                spark.catalog.dropTempView(view)
            return False
        self._held[table] = Handoff(table, view, t_done_before_us, cutoff_us)
        return True

    def _drop(self, spark, table: str) -> None:
        held = self._held.pop(table, None)
        if held is not None:
            with contextlib.suppress(Exception):
                spark.catalog.dropTempView(held.view)

    def release(self, spark) -> None:
        """Drops every kept result (the run is over)."""
        for table in sorted(self._held):
            self._drop(spark, table)
