"""The report's comparisons pair runs of the same recorded stream (same seed)."""

import math
from pathlib import Path

from freshness_pipeline.lab.experiment.report import comparison_rows, paired_ratio
from freshness_pipeline.lab.experiment.report_cost import run_cost_rows
from freshness_pipeline.lab.experiment.run_files import DagsterRunRecord, RunSummary, write_runs


def _record(fields: dict) -> DagsterRunRecord:
    """A runs.json entry as the harness writes it, from the fields a test sets."""
    return DagsterRunRecord.from_json({"run_id": f"run-{id(fields)}", **fields})


def _write(run_dir: Path, runs: list[dict]) -> None:
    write_runs(run_dir, [_record(r) for r in runs])


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
    _write(run_dir, runs)
    summary = RunSummary("pmb", dir=run_dir, start_us=int(t0 * 1e6), window_s=60)
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
    from freshness_pipeline.lab.experiment.report import condition_sweep_rows

    config = {"duration_s": 60, "rate": 300.0, "commit_interval_s": 10.0, "k": 1, "tick_s": 5}
    table = condition_sweep_rows(config)[-1].splitlines()
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ")[1:] for line in table[2:]}
    assert "this experiment's conditions, in the model" in rows
    # the base already has K = 1, so the "K = 1" row is the base row, figure for figure
    assert rows["K = 1"] == rows["this experiment's conditions, in the model"]
    assert rows["fixed cost per run 1 s, launch 1 s"] != rows["K = 1"]


def _run_dir(tmp_path: Path, variant: str, seed: int, runs: list[dict]) -> Path:
    run_dir = tmp_path / f"seed{seed}" / variant
    run_dir.mkdir(parents=True)
    _write(run_dir, runs)
    return run_dir


def test_peers_are_reported_beside_pmb_with_runs_and_refreshes_apart(tmp_path: Path):
    from freshness_pipeline.lab.experiment.report import p_table, peer_rows
    from freshness_pipeline.lab.experiment.run_files import refreshes_of

    t0 = 1_000.0  # window: 1,000 s to 1,060 s
    work, idle = {"duration_s": 4.0}, {"nothing_to_do": "t_done already at the cap"}
    eager_runs = [
        # one Dagster run refreshing three tables (one found nothing to do)
        {
            "status": "SUCCESS",
            "created": t0,
            "start": t0 + 5,
            "end": t0 + 25,
            "assets": ["trade_aggr", "price_aggr", "market_features"],
            "metadata_by_asset": {"trade_aggr": work, "price_aggr": work, "market_features": idle},
        },
        # finished after the window: counted in run time, not per window
        {
            "status": "SUCCESS",
            "created": t0 + 40,
            "start": t0 + 41,
            "end": t0 + 71,
            "assets": ["trade_aggr"],
            "metadata_by_asset": {"trade_aggr": {"duration_s": 6.0}},
        },
    ]
    pmb_runs = [{"status": "SUCCESS", "created": t0, "start": t0 + 1, "end": t0 + 11}]
    runs = []
    for variant, p, seed_runs in (("pmb", 800.0, pmb_runs), ("dagster_eager", 1000.0, eager_runs)):
        runs.append(
            RunSummary(
                variant,
                seed=1,
                P=p,
                P0=100.0,
                runs_succeeded=len(seed_runs),
                dir=_run_dir(tmp_path, variant, 1, seed_runs),
                start_us=int(t0 * 1e6),
                window_s=60,
                note=f"{variant} note",
                automation="dagster_eager" if variant == "dagster_eager" else "freshness_sensor",
            )
        )
    assert refreshes_of(_record(eager_runs[0])) == 2
    assert refreshes_of(_record(pmb_runs[0])) == 1  # a sensor run: one job
    order, stats = p_table(runs)
    assert order == ["pmb", "dagster_eager"]
    assert stats["dagster_eager"]["ratio_pmb"] == 1.25
    text = "\n".join(peer_rows(runs, stats))
    assert "## Beside what a Dagster user would pick" in text
    # P, sd, seeds, P/P(pmb) and its sd (none: one seed), no Max-Benefit or Random run,
    # P/P0 = 10, one run and two refreshes in the window, median run time of 20 and 30 s,
    # steps 4, 4, 6 s
    assert (
        "| dagster_eager | 1,000 | 0 | 1 | 1.250 | - | - | - | 10.00 | 1.0 | 2.0 | 25.0 | 4.0 |"
        in text
    )
    assert "| pmb | 800 | 0 | 1 | 1.000 |" in text
    assert "P(pmb) / P(dagster_eager) = 0.800: PMB left 20.0% below" in text
    assert "- `dagster_eager`: dagster_eager note." in text
    # without a peer in the experiment the section is left out
    assert peer_rows(runs[:1], {"pmb": stats["pmb"]}) == []


def test_a_peer_run_is_credited_per_table_when_each_refresh_lands(tmp_path: Path):
    # The interval tuning's six-step runs ended after the window while P fell: the tables
    # they committed inside it count, those after it do not, whatever the run's end.
    from freshness_pipeline.lab.experiment.report import run_figures
    from freshness_pipeline.lab.experiment.run_files import MATERIALIZED_AT, refreshes_by

    t0 = 1_000.0
    window_end = t0 + 90
    six_steps = {
        "status": "SUCCESS",
        "start": t0 + 5,
        "end": t0 + 130,  # after the window
        "assets": ["trade_aggr", "price_aggr", "market_features", "a", "b", "c"],
        "metadata_by_asset": {
            "trade_aggr": {"duration_s": 9.0, MATERIALIZED_AT: t0 + 30},
            "price_aggr": {"duration_s": 9.0, MATERIALIZED_AT: t0 + 60},
            "market_features": {"nothing_to_do": "x", MATERIALIZED_AT: t0 + 70},
            "a": {"duration_s": 9.0, MATERIALIZED_AT: t0 + 100},
        },
    }
    assert refreshes_by(_record(six_steps), window_end) == 2
    # a failed run's steps that committed are refreshes all the same
    assert refreshes_by(_record({**six_steps, "status": "FAILURE"}), window_end) == 2
    # a sensor run: one refresh, when its table landed
    sensor = {
        "status": "SUCCESS",
        "end": t0 + 95,
        "assets": ["trade_aggr"],
        "metadata_by_asset": {"trade_aggr": {"duration_s": 3.0, MATERIALIZED_AT: t0 + 85}},
    }
    assert refreshes_by(_record(sensor), window_end) == 1
    late = {**sensor, "metadata_by_asset": {"trade_aggr": {MATERIALIZED_AT: t0 + 91}}}
    assert refreshes_by(_record(late), window_end) == 0
    # records from before the time was kept: the whole run, by its end
    old = {"status": "SUCCESS", "end": t0 + 50, "assets": ["trade_aggr"]}
    assert refreshes_by(_record(old), window_end) == 1
    assert refreshes_by(_record({**old, "end": t0 + 95}), window_end) == 0
    run = RunSummary(
        "interval_40",
        dir=_run_dir(tmp_path, "interval_40", 99, [six_steps, sensor]),
        start_us=int(t0 * 1e6),
        window_s=90,
    )
    figures = run_figures(run)
    assert figures.refreshes == 3
    assert figures.runs == 0  # no Dagster run ended inside the window


def test_phases_are_summarized_per_job_over_successful_runs(tmp_path: Path):
    from freshness_pipeline.lab.experiment.report_cost import phase_rows

    run_dir = tmp_path / "seed1" / "pmb"
    run_dir.mkdir(parents=True)
    runs = [
        {  # a sensor run: one asset's metadata
            "status": "SUCCESS",
            "tags": {"freshness/asset": "trade_aggr"},
            "metadata": {"phase_read_s": 1.0, "phase_index_lookup_s": 4.0, "duration_s": 7},
        },
        {
            "status": "SUCCESS",
            "tags": {"freshness/asset": "trade_aggr"},
            "metadata": {"phase_read_s": 3.0, "phase_index_lookup_s": 6.0, "phase_clean_s": 2.0},
        },
        {  # a failed run's phases are not a run's cost
            "status": "FAILURE",
            "tags": {"freshness/asset": "trade_aggr"},
            "metadata": {"phase_read_s": 100.0},
        },
        {  # a peer's run of two assets
            "status": "SUCCESS",
            "metadata_by_asset": {
                "price_aggr": {"phase_read_s": 0.5},
                "market_features": {"duration_s": 3.0},  # recorded before the phases
            },
        },
    ]
    _write(run_dir, runs)
    rows = phase_rows([RunSummary("pmb", dir=run_dir)])
    assert rows[0] == "| job | runs | read | index_lookup | clean |"
    assert "| trade_aggr | 2 | 2.00 | 5.00 | 2.00 |" in rows
    assert "| price_aggr | 1 | 0.50 | - | - |" in rows
    assert not any("market_features" in row for row in rows)
    assert phase_rows([]) == ["No run recorded its phases."]


def test_each_steps_cpu_is_summed_per_variant_and_job(tmp_path: Path):
    from freshness_pipeline.lab.experiment.report_cost import step_cpu_rows

    def step(task: float, jvm: float, classes: int | None = None) -> dict:
        found = {
            "cpu_task_cpu_s": task,
            "cpu_jvm_cpu_s": jvm,
            "cpu_jvm_jit_s": 0.5,
            "cpu_jvm_gc_s": 0.1,
        }
        if classes is not None:  # steps recorded before the count have none
            found["cpu_jvm_codegen_classes"] = classes
        return found

    runs = []
    for variant, records in {
        "pmb": [
            {"status": "SUCCESS", "metadata_by_asset": {"trade_aggr": step(1.0, 4.0, 20)}},
            {"status": "SUCCESS", "metadata_by_asset": {"trade_aggr": step(3.0, 8.0, 30)}},
            {"status": "FAILURE", "metadata_by_asset": {"trade_aggr": step(90.0, 90.0)}},
        ],
        "dagster_eager": [
            {
                "status": "SUCCESS",
                "metadata_by_asset": {"price_aggr": step(2.0, 5.0), "sector_vwap": {}},
            }
        ],
    }.items():
        run_dir = tmp_path / variant
        run_dir.mkdir()
        _write(run_dir, records)
        runs.append(RunSummary(variant, dir=run_dir))
    rows = step_cpu_rows(runs, ["pmb", "dagster_eager"])
    assert "| pmb | trade_aggr | 2 | 2.00 | 6.00 | 0.50 | 0.10 | 12.0 | 25 |" in rows
    assert "| dagster_eager | price_aggr | 1 | 2.00 | 5.00 | 0.50 | 0.10 | 5.0 | - |" in rows
    assert not any("sector_vwap" in row for row in rows)  # a step that did not measure
    assert step_cpu_rows([], ["pmb"])[0].startswith("No step recorded its CPU")


def _plan(candidates: int, files: int, pending: int, mib: float, b: float, c: float, e: float):
    from freshness_pipeline.scheduling.run_plan import RunPlan

    return RunPlan(
        asset="trade_aggr",
        cutoff_us=2,
        t_done_us=1,
        file_count=files,
        pending_files=pending,
        scan_bytes=int(mib * 2**20),
        policy="pmb",
        gain_s=10.0,
        cost_s=e,
        eta=10.0 / e,
        candidates=candidates,
        cost_a_s=e - b * mib - c * files,
        cost_b_s_per_mib=b,
        cost_c_s_per_file=c,
        cost_model="fit:three_term",
        cost_fit="",
    )


def test_why_no_subset_counts_single_cutoffs_and_the_set_dependent_cost():
    from freshness_pipeline.lab.experiment.report import subset_reason_rows

    plans = {
        "pmb": [
            _plan(1, 26, 26, 1.0, 0.0, 0.0, 20.0),  # one cutoff: nothing to choose
            _plan(3, 52, 52, 2.0, 1.0, 0.1, 20.0),  # set-dependent 2 + 5.2 = 7.2 s
            _plan(4, 10, 52, 1.0, 2.0, 0.0, 10.0),  # a subset; 2 s of 10
        ]
    }
    [_, _, row] = subset_reason_rows(plans, ["pmb", "random"])
    assert row == "| pmb | 3 | 1 | 2 | 1 | 20.00 | 2.000 | 20.0% |"


def test_the_parent_to_child_lag_waits_for_the_child_to_catch_up_with_each_commit():
    from freshness_pipeline.lab.experiment.report import commit_lags
    from freshness_pipeline.scheduling.units import US_PER_S

    s = US_PER_S

    def rows(table, marks):
        return [
            {"at_us": str(t * s), "table": table, "watermark_us": str(w) if w else ""}
            for t, w in marks
        ]

    samples = rows("trade_aggr", [(0, 10), (1, 10), (2, 20), (3, 20), (4, 20), (5, 30)])
    samples += rows("price_aggr", [(0, 10), (1, 10), (2, 10), (3, 20), (4, 20), (5, 20)])
    # market_features reads both: it reaches 20 at 4 s (trade_aggr's 20 came at 2 s,
    # price_aggr's at 3 s) and never reaches trade_aggr's 30
    samples += rows("market_features", [(0, None), (1, 10), (2, 10), (3, 10), (4, 20), (5, 20)])
    lags, unreached = commit_lags(samples)
    # trade 10 (0 s) -> 1 s, trade 20 (2 s) -> 2 s; price 10 (0 s) -> 1 s, price 20 (3 s) -> 1 s
    assert sorted(lags) == [1.0, 1.0, 1.0, 2.0]
    # trade_aggr's 30 at 5 s (market_features has not caught up), and market_features' two
    # commits, which enriched_features (no watermark in these samples) never reached
    assert unreached == 3


def test_the_services_cpu_per_refresh_is_given_seed_by_seed():
    from freshness_pipeline.lab.experiment.report_cost import service_per_refresh_rows

    def run(variant: str, seed: int, service_s: float, refreshes: int) -> RunSummary:
        budget = {"Spark service": service_s, "code server": 99.0}
        return RunSummary(variant, seed=seed, job_refreshes=refreshes, cpu_by_kind_s=budget)

    runs = [
        run("pmb", 2, 300.0, 60),
        run("pmb", 1, 330.0, 66),
        run("pmb", 3, 400.0, 40),
        run("interval", 1, 100.0, 0),  # no refresh in the window: no figure
        RunSummary("interval", seed=2, job_refreshes=5),  # recorded before the sampler
    ]
    rows = service_per_refresh_rows(runs, ["pmb", "interval"])
    assert rows[0] == "| variant | CPU-s per refresh, by seed | median |"
    assert rows[2:] == ["| pmb | 1: 5.0, 2: 5.0, 3: 10.0 | 5.0 |"]
    assert service_per_refresh_rows(runs[3:], ["interval"]) == [
        "No run sampled the Spark service's CPU with a refresh in its window."
    ]
