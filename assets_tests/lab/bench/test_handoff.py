"""The handoff benchmark's summary: per-job medians and the chain's paired ratio."""

from __future__ import annotations

from freshness_pipeline.lab.bench.handoff import summary


def _sample(seconds: float, read: float) -> dict[str, float]:
    return {"seconds": seconds, "read": read, "in_memory": 1}


def test_the_summary_pairs_rounds_and_takes_medians():
    samples = {
        "memory": {
            "a": [_sample(1.0, 0.1), _sample(2.0, 0.2), _sample(3.0, 0.3)],
            "b": [_sample(1.0, 0.1), _sample(1.0, 0.1), _sample(1.0, 0.1)],
        },
        "hudi": {
            "a": [_sample(2.0, 0.5), _sample(2.0, 0.6), _sample(6.0, 0.7)],
            "b": [_sample(2.0, 0.4), _sample(2.0, 0.4), _sample(2.0, 0.4)],
        },
    }
    lines = summary(samples, ["a", "b"])
    assert lines[2] == "| a | 0.20 | 0.60 | 2.00 | 2.00 | 1.00 |"
    assert lines[3] == "| b | 0.10 | 0.40 | 1.00 | 2.00 | 0.50 |"
    # chain per round: memory 2, 3, 4; Hudi 4, 4, 8; paired ratios 0.5, 0.75, 0.5
    assert lines[4].endswith("3.00 s from memory, 4.00 s from Hudi; paired ratio median 0.500")
