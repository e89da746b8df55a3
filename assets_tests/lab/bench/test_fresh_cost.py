"""A fresh service's cost arm by arm (bench/fresh_cost.py): the arms it reads, the order it
runs them in, and the table it reports."""

from __future__ import annotations

import pytest

from freshness_pipeline.lab.bench.fresh_cost import ArmRun, Round, order, parse_arms, summary


def test_arms_are_named_options_and_the_default_may_be_empty():
    arms = parse_arms("default=; c1 = -XX:TieredStopAtLevel=1 -Xss2m")
    assert arms == [("default", ""), ("c1", "-XX:TieredStopAtLevel=1 -Xss2m")]
    with pytest.raises(ValueError, match="NAME=JVM OPTIONS"):
        parse_arms("default=;-XX:+UseParallelGC")
    with pytest.raises(ValueError, match="at least two arms"):
        parse_arms("a=;a=-Xmx1g")
    with pytest.raises(ValueError, match="at least two arms"):
        parse_arms("a=")


def test_the_arms_alternate_abba():
    arms = [("a", ""), ("b", "-x")]
    assert [name for name, _ in order(arms, 3)] == ["a", "b", "b", "a", "a", "b"]


def _run(arm: str, service: float, driver: float, first: float = 100.0) -> ArmRun:
    cold = Round(first, first / 2, 9.0, 3.0, 4.0, 60.0)
    warm = Round(service, service / 4, driver, driver / 3, 2.0, 20.0)
    return ArmRun(arm, "", 12.0, (cold, warm, warm))


def test_the_summary_skips_the_first_round_and_pairs_each_repeat():
    runs = [_run("default", 40.0, 3.0), _run("c1", 30.0, 3.3), _run("c1", 20.0, 3.0)]
    runs.append(_run("default", 40.0, 2.0))
    lines = summary(runs)
    default, c1 = lines[2], lines[3]
    assert default.startswith("| default | 2 | 12.0 | 40.0 | 10.0 | 20.0 | 2.50 |")
    assert default.endswith("| - | - |")
    # repeat 1: 30 / 40 and 3.3 / 3.0; repeat 2: 20 / 40 and 3.0 / 2.0
    assert c1.startswith("| c1 | 2 | 12.0 | 25.0 |") and c1.endswith("| 0.75, 0.50 | 1.10, 1.50 |")
    # a single round is kept rather than skipped
    (alone,) = summary([ArmRun("x", "", 1.0, (Round(5, 1, 1, 0, 1, 1),))])[2:]
    assert alone.startswith("| x | 1 | 1.0 | 5.0 |")


def test_an_arms_settings_words_are_settings_and_the_rest_jvm_options():
    from freshness_pipeline.lab.bench.fresh_cost import arm_environment

    env = arm_environment("FRESHNESS_SPARK_GC=java -XX:+UseSerialGC -Xss2m")
    assert env == {
        "FRESHNESS_SPARK_GC": "java",
        "FRESHNESS_SPARK_JAVA_OPTIONS": "-XX:+UseSerialGC -Xss2m",
    }
    assert arm_environment("") == {"FRESHNESS_SPARK_JAVA_OPTIONS": ""}
