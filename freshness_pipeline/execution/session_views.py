"""The temporary views a run registers on its Spark session, dropped after it: at once, or
in the background once the run has committed. Anything else that registers views on the
same session (the next run, the batch oracle) waits for those drops first, since it may
use the same names (`partial`, `existing`, `delta_<table>`)."""

from __future__ import annotations

import contextlib
import threading


def drop_views(spark, names: list[str]) -> None:
    # A Spark Connect server keeps each run's session (up to 100, for an hour idle); the
    # views and cached frames hold plans naming every file the run read, so they go with
    # the run, whether it committed or failed. Dropping a view uncaches it.
    for name in names:
        with contextlib.suppress(Exception):
            # (not catalog.dropTempView: through Connect that is two round trips)
            spark.sql(f"DROP VIEW IF EXISTS {name}")


# Per session (by id; the session is held with it): the views a committed run left,
# being dropped. Not a daemon thread: the process waits for it before it exits.
_RELEASING: dict[int, tuple[object, threading.Thread]] = {}
_RELEASING_LOCK = threading.Lock()


def release_later(spark, names: list[str]) -> None:
    """Drops `names` on `spark` in a thread of their own."""
    if not names:
        return
    thread = threading.Thread(target=drop_views, args=(spark, names), name="release-views")
    with _RELEASING_LOCK:
        _RELEASING[id(spark)] = (spark, thread)
    thread.start()


def await_release(spark) -> None:
    """Waits for the views an earlier run on `spark` is dropping (whoever registers views
    next may use the same names)."""
    with _RELEASING_LOCK:
        pending = _RELEASING.pop(id(spark), None)
    if pending is not None:
        pending[1].join()
