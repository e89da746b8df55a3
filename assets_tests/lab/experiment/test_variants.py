"""One registry of variants: what the harness sets, the simulator models, the report
compares and the CLI offers all come from it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from freshness_pipeline.lab.experiment import report, simulate
from freshness_pipeline.lab.experiment.command import EXPERIMENT_MODES
from freshness_pipeline.lab.experiment.sim_conditions import calibrated
from freshness_pipeline.lab.experiment.simulate_wide import wide_conditions
from freshness_pipeline.lab.experiment.variants import (
    MODELLED,
    PEERS,
    VARIANTS,
    Model,
    Variant,
)


def test_every_mode_runs_registered_variants():
    for mode in EXPERIMENT_MODES.values():
        names = mode["variants"].split(",")
        assert set(names) <= set(VARIANTS), set(names) - set(VARIANTS)
        assert len(names) == len(set(names))


def test_every_comparison_is_against_a_registered_variant_of_our_sensor():
    for variant in VARIANTS.values():
        assert variant.name and (variant.policy == "") == variant.is_peer
        if variant.baseline:
            assert variant.baseline in VARIANTS and not VARIANTS[variant.baseline].is_peer
            assert variant.isolates, variant.name
    assert ("pmb_at_once", "pmb") in {(v, b) for v, b, _ in report.COMPARISONS}


def test_the_simulator_models_a_variant_from_its_own_settings():
    assert VARIANTS["pmb_at_once"].model == Model("pmb", "three_term", steps_at_once=3)
    assert VARIANTS["pmb_serial"].model == Model("pmb", "three_term", runs_at_once=1)
    assert VARIANTS["pmb_single"].model == Model("pmb", "three_term", chains=False)
    assert VARIANTS["pmb_two_term"].model == Model("pmb", "two_term")
    assert VARIANTS["fixed_order_subsets"].model == Model("fixed_order_pmb", "three_term")
    # A setting the model does not have: the variant says which, and is not simulated.
    assert VARIANTS["pmb_footer_tmin"].unmodelled == ("FRESHNESS_TMIN_MODE",)
    assert VARIANTS["pmb_footer_tmin"].model is None
    assert Variant("x", "pmb", {"FRESHNESS_NEW_KNOB": "1"}).model is None
    # the simulator runs the registry's variants and no other
    with pytest.raises(ValueError, match="pmb_footer_tmin"):
        simulate.simulate(calibrated(), "pmb_footer_tmin")
    assert "pmb_at_once" in MODELLED and not set(PEERS) & set(MODELLED)


def test_a_variants_steps_at_once_act_as_the_conditions_would():
    base = replace(wide_conditions(1), duration_s=200, work_jitter=0.0, capacity=3.0)
    costs = dict(step_overhead_s=1.0, parallel_start_s=2.0)
    by_variant = simulate.simulate(replace(base, **costs), "pmb_at_once", 1)
    by_conditions = simulate.simulate(replace(base, steps_at_once=3, **costs), "pmb", 1)
    alone = simulate.simulate(replace(base, **costs), "pmb", 1)
    assert by_variant.p == by_conditions.p and by_variant.runs == by_conditions.runs
    assert by_variant.p != alone.p
