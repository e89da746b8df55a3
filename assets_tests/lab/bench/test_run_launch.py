"""The launch bench's report: both sides, their ratio, and how the runs really started."""

from freshness_pipeline.lab.bench.run_launch import Side, report

SIX = ("trade_aggr", "price_aggr", "market_features", "enriched_features")


def test_the_report_compares_the_two_starts_by_their_medians():
    spawn = Side("spawn", [4.0, 5.0, 6.0], [20.0, 22.0], {"spawn"}, dict.fromkeys(SIX, 100.0))
    forked = Side("forkserver", [1.0, 2.0, 3.0], [18.0], {"forkserver"}, dict.fromkeys(SIX, 90.0))
    text = report([spawn, forked])
    assert "| spawn | 3 | 5.00 | 21.00 | spawn | 100 s |" in text
    assert "| forkserver | 3 | 2.00 | 18.00 | forkserver | 90 s |" in text
    assert "forkserver / spawn (medians): 0.40" in text


def test_a_table_never_materialized_and_a_run_started_otherwise_are_shown():
    side = Side("forkserver", [1.0], [], {"forkserver", "spawn"}, {"trade_aggr": None})
    text = report([side])
    assert "| forkserver | 1 | 1.00 | - | forkserver, spawn | never (some) |" in text
    assert "forkserver / spawn" not in text  # one side only: no ratio
