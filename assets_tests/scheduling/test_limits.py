"""The input cap and the launch limit, each written once."""

from __future__ import annotations

from freshness_pipeline.scheduling.limits import input_cap, launch_limit


def test_a_jobs_cap_is_its_lowest_input_watermark_once_every_input_has_one():
    assert input_cap([30, 10, 20]) == 10
    assert input_cap(iter([5])) == 5
    assert input_cap([30, None]) is None  # an input with no commit yet holds the job back
    assert input_cap([]) is None


def test_the_launch_limit_is_k_or_fewer():
    assert launch_limit(3, None) == 3
    assert launch_limit(3, 1) == 1
    assert launch_limit(2, 5) == 2
