"""A committed run's views are dropped in the background; the next run waits for them."""

from __future__ import annotations

import threading

from freshness_pipeline.execution import runner


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
    runner._release_later(spark, ["delta_trade_raw", "existing"])
    assert spark.statements == []  # the run returned before its views were dropped
    next_run = threading.Thread(target=runner._await_release, args=(spark,))
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
    runner._release_later(spark, [])
    runner._await_release(spark)  # returns at once: the gate is never opened
    assert spark.statements == []
