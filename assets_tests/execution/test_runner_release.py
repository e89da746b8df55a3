"""A committed run's views are dropped in the background; the next run waits for them."""

from __future__ import annotations

import threading

from freshness_pipeline.execution import batch_oracle, session_views


class SlowSession:
    """Each statement waits for the gate, as a round trip to a busy service would."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.statements: list[str] = []

    def sql(self, text: str) -> None:
        assert self.gate.wait(10)
        self.statements.append(text)


def test_the_views_go_after_the_run_and_the_next_run_waits_for_them():
    spark = SlowSession()
    session_views.release_later(spark, ["delta_trade_raw", "existing"])
    assert spark.statements == []  # the run returned before its views were dropped
    next_run = threading.Thread(target=session_views.await_release, args=(spark,))
    next_run.start()
    next_run.join(0.3)
    assert next_run.is_alive(), "the next run did not wait for the views"
    spark.gate.set()
    next_run.join(10)
    assert not next_run.is_alive()
    assert spark.statements == [
        "DROP VIEW IF EXISTS delta_trade_raw",
        "DROP VIEW IF EXISTS existing",
    ]


def test_a_session_with_nothing_to_drop_does_not_wait():
    spark = SlowSession()
    session_views.release_later(spark, [])
    session_views.await_release(spark)  # returns at once: the gate is never opened
    assert spark.statements == []


def test_the_batch_oracle_waits_for_a_runs_views_before_it_registers_its_own(tmp_path):
    """It uses the runs' view names (`partial`, `existing`, `delta_<table>`) on the same
    session: a drop still under way would take its `partial` away mid-recompute."""
    spark = SlowSession()
    session_views.release_later(spark, ["partial"])
    started = threading.Event()

    def recompute() -> None:
        started.set()
        # No jobs: nothing is read, so a session that only takes statements will do.
        assert batch_oracle.batch_recompute(spark, lambda t: t, tmp_path, jobs={}) == {}

    oracle = threading.Thread(target=recompute)
    oracle.start()
    assert started.wait(5)
    oracle.join(0.3)
    assert oracle.is_alive(), "the oracle did not wait for the run's views"
    spark.gate.set()
    oracle.join(10)
    assert not oracle.is_alive()
    assert spark.statements == ["DROP VIEW IF EXISTS partial"]
