"""Sensor tick time with 6 jobs and 5,000 pending files (planner + sensor adapter).

    python -m freshness_pipeline.bench.sensor_tick [--files 5000] [--repeats 20]

Builds in-memory metadata for the six jobs (pending files spread over the jobs, each with a
pending arrival range) and times `evaluate_tick` (cost-model fits from an empty history,
job states, PMB plan, RunRequests) against an ephemeral Dagster instance. The Hudi
metadata reads themselves (hudi-rs timeline, listing) are not in this figure; they are
measured per table on a real lakehouse by `--real PATH` (cold: first read; warm: again).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from freshness_pipeline.hudi_metadata import FileSlice, PendingFile

S = 1_000_000


class _Table:
    def __init__(self, name: str, watermark: int, files: list[PendingFile]) -> None:
        self.name, self.watermark, self.files = name, watermark, files

    def watermark_us(self) -> int:
        return self.watermark

    def pending_files(self, t_done, with_footer=False):
        floor = -1 if t_done is None else t_done
        return [f for f in self.files if f.pending_max_us > floor]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--real", help="also time metadata reads of a real lakehouse root")
    args = parser.parse_args()

    import dagster as dg

    from freshness_pipeline.jobs.catalog import JOBS
    from freshness_pipeline.resources import HudiMetadataResource
    from freshness_pipeline.scheduler_settings import SchedulerSettings
    from freshness_pipeline.sensor import evaluate_tick

    t0 = 1_700_000_000 * S
    input_tables = sorted({t for spec in JOBS.values() for t in spec.inputs})
    per_table = args.files // len(input_tables)
    tables = {}
    for n, name in enumerate(input_tables):
        files = []
        for i in range(per_table):
            lo = t0 + i * S // 4
            fs = FileSlice(chr(65 + i % 26), f"{name}-{i}", f"{name}/{i}.parquet", 4 << 20, "1")
            files.append(PendingFile(fs, f"/lake/{name}/{i}.parquet", lo, lo + 5 * S, ("1",)))
        tables[name] = _Table(name, t0 + per_table * S // 4 + 5 * S + n, files)
    tables["company_master"] = _Table("company_master", 0, [])

    from freshness_pipeline.hudi_metadata import TableNotFound

    class Lake(HudiMetadataResource):
        def table(self, table: str):
            if table not in tables:  # sector_vwap and industry_spike: not written yet
                raise TableNotFound(table)
            return tables[table]

    lake = Lake()
    settings = SchedulerSettings()
    timings = []
    with dg.instance_for_test() as instance:
        for _ in range(args.repeats):
            started = time.perf_counter()
            result, requests = evaluate_tick(lake, instance, settings, now_us=t0 + 10**9)
            timings.append(time.perf_counter() - started)
    pending = sum(len(t.files) for t in tables.values())
    print(
        f"tick (planner + adapter, in-memory metadata): {len(JOBS)} jobs, {pending} pending "
        f"files, {len(requests)} run requests: median {statistics.median(timings) * 1000:.1f} "
        f"ms, max {max(timings) * 1000:.1f} ms over {args.repeats} ticks"
    )
    if args.real:
        from freshness_pipeline.hudi_metadata import HudiTableMetadata

        for name in [*input_tables, *JOBS]:
            uri = f"{args.real.rstrip('/')}/{name}"
            times = []
            for _ in range(3):
                started = time.perf_counter()
                meta = HudiTableMetadata(uri)
                count = len(meta.pending_files(None, with_footer=True))
                meta.watermark_us()
                times.append(time.perf_counter() - started)
            print(f"  {name}: {count} pending files; read {times[0] * 1000:.0f} ms cold, "
                  f"{statistics.median(times[1:]) * 1000:.0f} ms warm (footer cache)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
