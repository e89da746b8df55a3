"""The chain planner's bench runs on a small wide pipeline and prints both planners."""

from __future__ import annotations

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.lab.bench.chain_plan import main, wide_states
from freshness_pipeline.scheduling.chains import Graph


def test_the_wide_pipeline_is_a_dag_over_the_raw_tables():
    states = wide_states(12, 20)
    graph = Graph.of(states)  # raises on a cycle
    assert len(graph.order) == 12
    assert all(t in ("r1", "r2") for s in states[:4] for t, _ in s.inputs)
    assert any(s.pending for s in states)


def test_the_bench_prints_both_planners(capsys):
    assert main(["--jobs", "8", "--files", "10", "--repeats", "1"], load_settings({})) == 0
    out = capsys.readouterr().out
    assert "8 jobs" in out and "pmb: chains" in out and "one table per run" in out
