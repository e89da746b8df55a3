from __future__ import annotations

import random

import pytest

from freshness_pipeline.scheduling.cost_model import (
    DEFAULT_PRIOR,
    FittedCost,
    RunSample,
    fit_cost_model,
)

GIB = 1024**3


def runs(a, b, c, n=30, noise=0.0, seed=1):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        size = rng.randint(1, 4000) * 1024**2
        files = rng.randint(1, 60)
        out.append(RunSample(size, files, a + b * size + c * files + rng.gauss(0, noise)))
    return out


def test_recovers_three_terms():
    fit = fit_cost_model(runs(12.0, 3.0 / GIB, 0.2))
    assert fit.source == "fit" and fit.samples_used == 30
    assert fit.model.a_s == pytest.approx(12.0, rel=1e-6)
    assert fit.model.b_s_per_byte * GIB == pytest.approx(3.0, rel=1e-6)
    assert fit.model.c_s_per_file == pytest.approx(0.2, rel=1e-6)
    assert fit.rmse_s == pytest.approx(0.0, abs=1e-6)


def test_two_term_mode_ignores_files():
    fit = fit_cost_model(runs(5.0, 2.0 / GIB, 0.0), mode="two_term")
    assert fit.model.c_s_per_file == 0.0
    assert fit.model.a_s == pytest.approx(5.0, rel=1e-6)


def test_prior_until_enough_history():
    assert fit_cost_model([]) == FittedCost(DEFAULT_PRIOR, "three_term", "prior", 0, None)
    # a few runs: the prior's slopes, its fixed term moved to the runs' level
    few = [RunSample(0, 1, 4.0), RunSample(0, 1, 6.0), RunSample(0, 1, 50.0)]
    fit = fit_cost_model(few)
    assert fit.source == "level" and fit.samples_used == 3
    assert fit.model.a_s == pytest.approx(6.0 - DEFAULT_PRIOR.c_s_per_file)  # the median
    assert fit.model.b_s_per_byte == DEFAULT_PRIOR.b_s_per_byte
    assert fit_cost_model(runs(5.0, 1e-9, 0.1, n=4)).source == "level"
    assert fit_cost_model(runs(5.0, 1e-9, 0.1, n=3), mode="two_term").source == "level"
    assert fit_cost_model(runs(5.0, 1e-9, 0.1, n=4), mode="two_term").source == "fit"


def test_runs_cheaper_than_the_slopes_alone_scale_the_prior_to_meet_them():
    """A backlog's runs can cost less than the prior's per-file and per-byte terms alone;
    no fixed term meets them, so the prior is scaled (its split between fixed and per-file
    cost kept), and the model estimates the median run at what it took."""
    prior = DEFAULT_PRIOR  # 20 s + 10 s/GiB + 0.05 s/file
    backlog = [RunSample(8 * 1024**2, 900, 11.3), RunSample(9 * 1024**2, 950, 24.9)]
    fit = fit_cost_model(backlog, prior=prior)
    assert fit.source == "level"
    expected = [run.seconds / prior.estimate(run.scan_bytes, run.files) for run in backlog]
    scale = sum(expected) / 2  # the median of two
    assert fit.model.a_s == pytest.approx(prior.a_s * scale)
    assert fit.model.c_s_per_file == pytest.approx(prior.c_s_per_file * scale)
    assert fit.model.b_s_per_byte == pytest.approx(prior.b_s_per_byte * scale)
    assert 0 < fit.model.a_s < prior.a_s
    one = fit_cost_model([RunSample(10 * GIB, 1, 1.0)])
    assert one.model.a_s > 0 and one.model.estimate(10 * GIB, 1) == pytest.approx(1.0)
    # a prior with no fixed term and a run it gives no cost: scaled on the runs it costs
    flat = DEFAULT_PRIOR.__class__(0.0, 0.0, 0.05)
    mixed = [RunSample(0, 0, 3.0), RunSample(0, 900, 9.0), RunSample(0, 800, 10.0)]
    assert fit_cost_model(mixed, prior=flat).model.c_s_per_file == pytest.approx(
        0.05 * ((9.0 / 45.0 + 10.0 / 40.0) / 2)
    )


def test_robust_to_outliers_and_nonnegative():
    history = runs(10.0, 1.0 / GIB, 0.1, noise=0.05)
    history[5] = RunSample(history[5].scan_bytes, history[5].files, 900.0)  # a stalled run
    fit = fit_cost_model(history)
    assert fit.samples_used == 29
    assert fit.model.a_s == pytest.approx(10.0, abs=0.2)
    # time falling with size must not give a negative per-byte cost
    falling = [RunSample(s, 1, 100.0 - s / 1e8) for s in range(10**8, 10**9, 10**8)]
    fit = fit_cost_model(falling, mode="two_term")
    assert fit.model.b_s_per_byte >= 0 and fit.model.a_s > 0


def test_recent_window_tracks_change():
    old = runs(50.0, 0.0, 0.0, n=40, seed=2)
    new = runs(5.0, 0.0, 0.0, n=40, seed=3)
    assert fit_cost_model(old + new, window=40).model.a_s == pytest.approx(5.0, abs=1e-6)
    with pytest.raises(ValueError):
        fit_cost_model(old, mode="four_term")


def test_a_cost_prior_round_trips_and_refuses_what_it_cannot_use():
    from freshness_pipeline.scheduling.cost_model import DEFAULT_PRIOR, CostPrior, fit_run_cost
    from freshness_pipeline.scheduling.planner import DEFAULT_RUN_COST_S, CostModel

    prior = CostPrior((("trade_aggr", CostModel(4.0, 2.0 / 1024**2, 0.01)),), 2.5, "a test")
    again = CostPrior.from_json(prior.to_json())
    assert again.model("trade_aggr").a_s == 4.0
    assert again.model("trade_aggr").b_s_per_byte * 1024**2 == pytest.approx(2.0)
    assert again.model("price_aggr") == DEFAULT_PRIOR  # a job it does not name
    assert again.run_cost_s == 2.5 and again.source == "a test"
    for bad in (
        {},
        {"jobs": {"x": {"a_s": 1}}},
        {"jobs": {"x": {"a_s": -1, "b_s_per_mib": 0, "c_s_per_file": 0}}},
    ):
        with pytest.raises(ValueError):
            CostPrior.from_json(bad)
    # L: the prior until three runs measured it, then their median
    assert fit_run_cost([1.0, 9.0]) == DEFAULT_RUN_COST_S
    assert fit_run_cost([1.0, 9.0], prior_s=2.5) == 2.5
    assert fit_run_cost([1.0, 9.0, 2.0]) == 2.0
    assert fit_run_cost([1.0, 9.0, 2.0, 3.0]) == 2.5
