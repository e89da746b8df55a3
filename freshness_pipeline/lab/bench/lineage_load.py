"""What column lineage adds to loading the Dagster definitions (target <= 100 ms).

Every run process and the code server import `freshness_pipeline.definitions` once, so the
cost is paid per run. Each sample is a fresh Python process timing that import, in one of
three variants, interleaved round by round so machine noise falls on all alike:
- `off`: the lineage module replaced by a stub (no schema, no lineage, no table);
- `snapshot`: as shipped, the lineage read from jobs_sql/lineage.json;
- `derived`: the snapshot ignored, so sqlglot is imported and the six files traced (what
  the first load after a SQL change costs until the snapshot is regenerated).
Beside them, the lineage work alone (`--direct`), timed inside a process that has already
imported Dagster and the job catalog: importing lineage.py, reading the snapshot (or
tracing the SQL) and building the six assets' metadata and Markdown tables. It is the same
quantity without the whole import's noise.

    freshness lab lineage-load --rounds 11
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

from freshness_pipeline.config.paths import PROJECT_ROOT

VARIANTS = ("off", "snapshot", "derived")

_CHILD = r"""
import sys, time, types
variant = sys.argv[1]
if variant == "off":
    # Everything assets.py and raw_sources.py take from lineage.py, doing nothing.
    stub = types.ModuleType("freshness_pipeline.execution.lineage")
    stub.asset_lineage = lambda name: None
    stub.to_markdown = lambda lineage, heading=True: ""
    stub.declared_lineage = lambda jobs, schemas: {}
    sys.modules["freshness_pipeline.execution.lineage"] = stub
    metadata = types.ModuleType("freshness_pipeline.orchestration.lineage_metadata")
    metadata.dagster_metadata = lambda name: {}
    metadata.lineage_metadata = lambda lineage: {}
    metadata.source_schema_metadata = lambda table: {}
    sys.modules["freshness_pipeline.orchestration.lineage_metadata"] = metadata
started = time.perf_counter()
if variant == "derived":
    import freshness_pipeline.execution.lineage as lineage
    lineage.load_snapshot = lambda key, path=None: None
import freshness_pipeline.definitions
elapsed = time.perf_counter() - started
assert ("sqlglot" in sys.modules) == (variant == "derived"), "unexpected sqlglot import"
print(f"{elapsed:.6f}")
"""


_DIRECT = r"""
import sys, time
import dagster
import freshness_pipeline.catalog.jobs, freshness_pipeline.execution.sql
variant = sys.argv[1]
started = time.perf_counter()
import freshness_pipeline.execution.lineage as lineage
import freshness_pipeline.orchestration.lineage_metadata as lineage_metadata
if variant == "derived":
    lineage.load_snapshot = lambda key, path=None: None
for name in lineage.pipeline_lineage():
    lineage_metadata.dagster_metadata(name)
    lineage.to_markdown(lineage.asset_lineage(name), heading=False)
print(f"{time.perf_counter() - started:.6f}")
"""


def sample(variant: str, child: str = _CHILD) -> float:
    done = subprocess.run(
        [sys.executable, "-c", child, variant], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {variant} sample failed:\n{done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab lineage-load", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(args.rounds):
        # Rotate the order each round, so no variant always runs right after another.
        for variant in VARIANTS[r % 3 :] + VARIANTS[: r % 3]:
            times[variant].append(sample(variant))
    off = statistics.median(times["off"])
    print(f"import freshness_pipeline.definitions, median of {args.rounds} fresh processes")
    print("| variant | median s | min s | max s | added to `off`, ms |")
    print("|---|---|---|---|---|")
    for variant in VARIANTS:
        median = statistics.median(times[variant])
        print(
            f"| {variant} | {median:.3f} | {min(times[variant]):.3f} | "
            f"{max(times[variant]):.3f} | {1000 * (median - off):+.0f} |"
        )
    direct = {v: [sample(v, _DIRECT) for _ in range(args.rounds)] for v in VARIANTS[1:]}
    print(f"\nthe lineage work alone (--direct), median of {args.rounds} fresh processes")
    print("| variant | median ms | min ms | max ms |")
    print("|---|---|---|---|")
    for variant, values in direct.items():
        print(
            f"| {variant} | {1000 * statistics.median(values):.1f} | "
            f"{1000 * min(values):.1f} | {1000 * max(values):.1f} |"
        )
    return 0
