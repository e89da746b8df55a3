"""The Spark Connect calls a run makes, counted and timed.

Through the shared Spark service every `count`, `first`, `collect`, view, cache and write
is one gRPC round trip, and every `.schema` or `.columns` of a frame is an analyse call:
each pays the service's planning and the network, so a run's cost outside Spark's own
work is mostly their number. This wraps the session's client for the length of a run
(the instance's methods, not the class: other sessions of the process are untouched);
on a local session there is no client and nothing is counted.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

_WRAPPED = ("_analyze", "_execute_and_fetch_as_iterator", "config")


@dataclass
class ConnectCalls:
    """Calls by kind (`query`, `command:<type>`, `analyze:<method>`, `config`) and the
    seconds spent waiting for them."""

    count: Counter[str] = field(default_factory=Counter)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    @property
    def total(self) -> int:
        return sum(self.count.values())

    @property
    def total_s(self) -> float:
        return float(sum(self.seconds.values()))

    def add(self, kind: str, started: float) -> None:
        self.count[kind] += 1
        self.seconds[kind] += time.perf_counter() - started

    def by_kind(self) -> str:
        """`query 7 (1.20 s), command:write_operation 1 (3.10 s), ...`, most calls first."""
        return ", ".join(
            f"{kind} {n} ({self.seconds[kind]:.2f} s)" for kind, n in self.count.most_common()
        )


def _execute_kind(request: Any) -> str:
    plan = getattr(request, "plan", None)
    if plan is not None and plan.HasField("command"):
        return f"command:{plan.command.WhichOneof('command_type')}"
    return "query"


@contextmanager
def watching(spark) -> Iterator[ConnectCalls]:
    """Counts the Connect calls `spark` makes inside the block (none on a local session)."""
    calls = ConnectCalls()
    try:
        client = spark.client
    except (AttributeError, RuntimeError):  # a classic session raises RuntimeError
        client = None
    if client is None or not all(hasattr(client, name) for name in _WRAPPED):
        yield calls
        return
    analyze, fetch, config = (getattr(client, name) for name in _WRAPPED)

    def counted_analyze(method: str, **kwargs: Any):
        started = time.perf_counter()
        try:
            return analyze(method, **kwargs)
        finally:
            calls.add(f"analyze:{method}", started)

    def counted_fetch(request: Any):
        started = time.perf_counter()
        try:
            yield from fetch(request)
        finally:
            calls.add(_execute_kind(request), started)

    def counted_config(operation: Any):
        started = time.perf_counter()
        try:
            return config(operation)
        finally:
            calls.add("config", started)

    client._analyze = counted_analyze
    client._execute_and_fetch_as_iterator = counted_fetch
    client.config = counted_config
    try:
        yield calls
    finally:
        for name in _WRAPPED:
            client.__dict__.pop(name, None)  # the class's own method again
