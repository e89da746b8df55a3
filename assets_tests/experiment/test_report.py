"""The report's comparisons pair runs of the same recorded stream (same seed)."""

import json
import math
from pathlib import Path

from freshness_pipeline.experiment.report import comparison_rows, paired_ratio, run_cost_rows


def _stats(per_variant: dict[str, dict[int, float]]) -> dict[str, dict]:
    return {
        variant: {"per_seed": per_seed, "P_mean": sum(per_seed.values()) / len(per_seed)}
        for variant, per_seed in per_variant.items()
    }


def test_paired_ratio_pairs_seeds_and_ignores_unpaired_ones():
    stats = _stats({"a": {1: 90.0, 2: 60.0, 3: 10.0}, "b": {1: 100.0, 2: 50.0}})
    mean, sd, seeds = paired_ratio(stats, "a", "b")
    assert seeds == 2
    assert math.isclose(mean, (0.9 + 1.2) / 2)
    assert math.isclose(sd, math.sqrt(((0.9 - 1.05) ** 2 + (1.2 - 1.05) ** 2) / 1))


def test_share_of_gain_due_to_subsets():
    stats = _stats(
        {
            "pmb": {1: 800.0},
            "random": {1: 1000.0},
            "fixed_order_full": {1: 950.0},
            "fixed_order_subsets": {1: 900.0},
        }
    )
    text = "\n".join(comparison_rows(stats))
    assert "| fixed_order_subsets | fixed_order_full | 0.947 |" in text
    assert "against Random: 200 s; subset selection alone" in text
    assert "with order and concurrency fixed, removes 50 s" in text
    assert "(25% of PMB's gain)" in text
    assert "Not run in this experiment: `pmb_footer_tmin` against `pmb`" in text


def test_no_share_when_pmb_does_not_beat_random():
    stats = _stats(
        {
            "pmb": {1: 1000.0},
            "random": {1: 990.0},
            "fixed_order_full": {1: 950.0},
            "fixed_order_subsets": {1: 900.0},
        }
    )
    assert "no share is computed" in "\n".join(comparison_rows(stats))


def test_run_cost_counts_failures_and_runs_finished_after_the_window(tmp_path: Path):
    run_dir = tmp_path / "seed1" / "pmb"
    run_dir.mkdir(parents=True)
    t0 = 1_000.0  # window: 1,000 s to 1,060 s
    runs = [
        {"status": "SUCCESS", "created": t0, "start": t0 + 2, "end": t0 + 12},
        {"status": "SUCCESS", "created": t0 + 20, "start": t0 + 24, "end": t0 + 44},
        {"status": "FAILURE", "created": t0 + 30, "start": t0 + 31, "end": t0 + 33},
        {"status": "SUCCESS", "created": t0 + 50, "start": t0 + 56, "end": t0 + 86},
    ]
    (run_dir / "runs.json").write_text(json.dumps(runs))
    summary = {"variant": "pmb", "dir": run_dir, "start_us": int(t0 * 1e6), "window_s": 60}
    rows = run_cost_rows([summary], ["pmb"])
    # 4 launched, 3 succeeded, 1 failed, 1 finished after the window; median wait 3.0 s,
    # median run 20.0 s; 2 successes in the window / 6 jobs / 1 minute
    assert rows[-1] == "| pmb | 4 | 3 | 1 | 1 | 3.0 | 20.0 | 0.33 |"


def test_a_controlled_pair_without_subsets_is_called_timing():
    stats = _stats(
        {
            "pmb": {1: 800.0, 2: 820.0},
            "random": {1: 1000.0, 2: 990.0},
            "fixed_order_full": {1: 950.0, 2: 960.0},
            "fixed_order_subsets": {1: 900.0, 2: 930.0},
        }
    )
    without = "\n".join(comparison_rows(stats, {"fixed_order_subsets": (0, 40)}))
    assert "took no subset in any of its 40 runs" in without
    assert "run timing, not subset selection" in without
    assert "spread of the paired ratio over seeds" in without  # two seeds: an sd exists
    with_some = "\n".join(comparison_rows(stats, {"fixed_order_subsets": (3, 40)}))
    assert "took no subset" not in with_some


def test_missed_targets_come_with_the_model_sweep_from_the_experiments_settings():
    from freshness_pipeline.experiment.report import condition_sweep_rows

    config = {"duration_s": 60, "rate": 300.0, "commit_interval_s": 10.0, "k": 1, "tick_s": 5}
    table = condition_sweep_rows(config)[-1].splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in table[2:]}
    assert "this experiment's conditions, in the model" in rows
    # the base already has K = 1, so the "K = 1" row is the base row, figure for figure
    assert rows["K = 1"] == rows["this experiment's conditions, in the model"]
    assert rows["K = 6"] != rows["K = 1"]
