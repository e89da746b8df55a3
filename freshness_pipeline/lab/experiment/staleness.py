"""Staleness measured independently of the scheduler (METHOD 1).

Every second a sampler reads each table's watermark from its Hudi timeline (the same
commit metadata a reader of the table would trust) and records, for every non-raw table,
`S_i(now) = now - t_i_latest` and the floor `S0_i(now) = now - min(raw ancestors'
watermarks)`: the staleness a zero-cost refresh would leave (arrival lag and ingestion
only). P = the sum of S over tables and samples, exactly as published; P0 the same of S0.

A table that has no watermark yet counts as stale since the start of the measurement.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from freshness_pipeline.catalog.jobs import JOBS, JobSpec
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.scheduling.limits import input_cap
from freshness_pipeline.scheduling.staleness_target import staleness_s
from freshness_pipeline.scheduling.units import US_PER_S


def raw_ancestors(job: str, specs: Mapping[str, JobSpec] = JOBS) -> tuple[str, ...]:
    """The raw tables a job's output ultimately reflects (dimensions are not streams)."""
    found: set[str] = set()
    stack = list(specs[job].inputs)
    while stack:
        table = stack.pop()
        if table in RAW_TABLES:
            found.add(table)
        elif table in specs:
            stack.extend(specs[table].inputs)
    return tuple(sorted(found))


@dataclass(frozen=True)
class Sample:
    """One table at one sampling instant."""

    at_us: int
    table: str
    watermark_us: int | None
    staleness_s: float  # now - watermark (or now - start when there is none)
    floor_s: float  # now - min(raw ancestors' watermarks): the zero-cost refresh


def sample_tables(
    now_us: int,
    start_us: int,
    watermarks: Mapping[str, int | None],
    jobs: Iterable[str] = JOBS,
    specs: Mapping[str, JobSpec] = JOBS,
) -> list[Sample]:
    """Staleness of every job table at `now_us` from one read of all watermarks (`specs`:
    the jobs they are, for their raw ancestors)."""
    samples = []
    for job in jobs:
        mark = watermarks.get(job)
        raws = [watermarks.get(r) for r in raw_ancestors(job, specs)]
        floor_mark = input_cap(raws)
        reflected = mark if mark is not None else start_us
        floor_reflected = floor_mark if floor_mark is not None else start_us
        samples.append(
            Sample(
                at_us=now_us,
                table=job,
                watermark_us=mark,
                staleness_s=staleness_s(now_us, reflected),
                floor_s=staleness_s(now_us, floor_reflected),
            )
        )
    return samples


def total_staleness(samples: Iterable[Sample], interval_s: float = 1.0) -> tuple[float, float]:
    """(P, P0): sums over tables and samples of S and S0, times the sampling interval."""
    p = p0 = 0.0
    for sample in samples:
        p += sample.staleness_s * interval_s
        p0 += sample.floor_s * interval_s
    return p, p0


class StalenessSampler:
    """Samples every `interval_s` on a thread, aligned to the wall clock, until stopped."""

    def __init__(
        self,
        read_watermark: Callable[[str], int | None],
        start_us: int,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.time,
        specs: Mapping[str, JobSpec] = JOBS,
    ) -> None:
        self.read_watermark = read_watermark
        self.specs = specs  # the jobs whose tables are sampled (the six, or declared ones)
        self.start_us = start_us
        self.interval_s = interval_s
        self.clock = clock
        self.samples: list[Sample] = []
        self.read_seconds: list[float] = []  # how long each sampling pass took
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="staleness-sampler", daemon=True)

    def sample_once(self) -> list[Sample]:
        started = time.perf_counter()
        marks = {t: self.read_watermark(t) for t in (*RAW_TABLES, *self.specs)}
        now_us = int(self.clock() * US_PER_S)
        taken = sample_tables(now_us, self.start_us, marks, self.specs, self.specs)
        self.read_seconds.append(time.perf_counter() - started)
        self.samples.extend(taken)
        return taken

    def _loop(self) -> None:
        next_at = self.clock()
        while not self._stop.is_set():
            self.sample_once()
            next_at += self.interval_s
            self._stop.wait(max(0.0, next_at - self.clock()))

    def start(self) -> StalenessSampler:
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join(timeout=30)
        return self.samples
