"""The peers are experiment variants like the policies: selected by name, run with our
sensor off and Dagster's automation (or an interval) on, and their runs collected."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import dagster as dg
import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.lab.experiment.harness import ExperimentConfig, variant_env
from freshness_pipeline.lab.experiment.run_files import job_assets_of, launcher_of
from freshness_pipeline.lab.experiment.variants import TUNED_INTERVAL_S, VARIANTS, variant_named
from freshness_pipeline.scheduling.run_plan import ASSET_TAG


def config(tmp_path: Path) -> ExperimentConfig:
    return ExperimentConfig(
        out_dir=tmp_path,
        variants=(),
        seeds=(1,),
        duration_s=60,
        rate=300.0,
        speedup=1.0,
        universe_size=50,
        k=2,
        tick_s=5,
    )


def test_peers_run_without_our_sensor_under_the_same_k_tick_and_seed(tmp_path: Path):
    envs = {
        name: variant_env(config(tmp_path), variant_named(name), 7, tmp_path / name)
        for name in ("pmb", "dagster_eager", "interval", "interval_45")
    }
    for name, env in envs.items():
        assert (env["FRESHNESS_K"], env["FRESHNESS_TICK_S"], env["FRESHNESS_SEED"]) == (
            "2",
            "5",
            "7",
        )
        assert env["FRESHNESS_LAKEHOUSE"] == str(tmp_path / name / "tables")
        load_settings(env)  # every variant's settings are valid
    assert envs["pmb"]["FRESHNESS_AUTOMATION"] == "freshness_sensor"
    assert envs["pmb"]["FRESHNESS_POLICY"] == "pmb"
    assert envs["dagster_eager"]["FRESHNESS_AUTOMATION"] == "dagster_eager"
    assert "FRESHNESS_POLICY" not in envs["dagster_eager"]
    assert envs["interval"]["FRESHNESS_INTERVAL_S"] == str(TUNED_INTERVAL_S)
    assert envs["interval_45"]["FRESHNESS_INTERVAL_S"] == "45"
    assert load_settings(envs["interval_45"]).scheduler.automation == "interval"


def test_no_clustering_ablation_is_pmb_with_the_raw_tables_never_clustered(tmp_path: Path):
    cfg = config(tmp_path)
    base = variant_env(cfg, variant_named("pmb"), 7, tmp_path / "pmb")
    ablation = variant_env(cfg, variant_named("pmb_no_clustering"), 7, tmp_path / "off")
    assert ablation["FRESHNESS_POLICY"] == base["FRESHNESS_POLICY"] == "pmb"
    assert load_settings(ablation).clustering.tables == ()
    assert load_settings(base).clustering.tables == ("price_raw", "trade_raw")


def test_variant_names():
    assert variant_named("dagster_eager") is VARIANTS["dagster_eager"]
    assert variant_named("interval_20").is_peer and not variant_named("pmb").is_peer
    for bad in ("interval_2", "interval_x", "eager"):
        with pytest.raises(KeyError, match="interval_<seconds, at least 5>"):
            variant_named(bad)


@dataclass
class FakeRun:
    tags: dict[str, str] = field(default_factory=dict)
    asset_selection: frozenset[dg.AssetKey] | None = None
    run_config: dict = field(default_factory=dict)
    job_name: str = "__ASSET_JOB"


def test_runs_are_attributed_to_their_assets_and_launcher():
    peer = FakeRun(
        {"dagster/sensor_name": "eager_automation_sensor"},
        frozenset(dg.AssetKey(k) for k in ("market_features", "trade_aggr", "price_raw")),
    )
    assert job_assets_of(peer) == ["trade_aggr", "market_features"]  # pipeline order
    assert launcher_of(peer.tags) == "eager_automation_sensor"
    scheduled = FakeRun({"dagster/schedule_name": "interval_schedule"}, job_name="all_six_jobs")
    assert launcher_of(scheduled.tags) == "interval_schedule"
    assert job_assets_of(scheduled) == list(JOBS)  # the job's run carries no selection
    assert job_assets_of(FakeRun()) == []
    assert job_assets_of(FakeRun(), ["price_aggr"]) == ["price_aggr"]  # what it materialized
    sensor_tags = {
        ASSET_TAG: "sector_vwap",
        "freshness/u_us": "5",
        "freshness/t_done_us": "",
        "freshness/files_chosen": "1",
        "freshness/files_pending": "1",
        "freshness/scan_bytes": "10",
        "freshness/policy": "pmb",
        "freshness/G_s": "1",
        "freshness/E_s": "1",
        "freshness/eta": "1",
    }
    ours = FakeRun(sensor_tags, frozenset({dg.AssetKey("sector_vwap")}))
    assert launcher_of(ours.tags) == "freshness_sensor" and job_assets_of(ours) == ["sector_vwap"]
    assert launcher_of({}) == "manual"
    # today's sensor run: the plan lives in its run config, the tags name the asset
    assert launcher_of({ASSET_TAG: "sector_vwap", "dagster/sensor_name": "x"}) == "freshness_sensor"
    assert launcher_of({"freshness/launched_by": "hand"}) == "manual"


def test_only_failures_after_the_drain_are_counted_as_cut_off():
    from freshness_pipeline.lab.experiment.harness import cut_off_runs
    from freshness_pipeline.lab.experiment.run_files import DagsterRunRecord

    runs = [
        DagsterRunRecord("a", "FAILURE", end=1_000.0 + 240 + 3),  # the service stopped under it
        DagsterRunRecord("b", "FAILURE", end=1_000.0 + 10),  # failed on its own in the drain
        DagsterRunRecord("c", "SUCCESS", end=1_000.0 + 250),
        DagsterRunRecord("d", "CANCELED", end=None),  # queued, canceled at the stop
    ]
    assert cut_off_runs(runs, stop_at=1_000.0) == 1
    assert cut_off_runs(runs, stop_at=1_000.0, drain_s=5) == 2


def test_the_plain_peer_is_its_own_code_location_without_our_service(tmp_path: Path):
    from freshness_pipeline.lab.experiment.harness import _variant_stack
    from freshness_pipeline.lab.experiment.simulate import simulate
    from freshness_pipeline.lab.experiment.variants import PLAIN_PEER_MODULE, SIMULATED_PEERS

    cfg = config(tmp_path)
    for name, mode in (("dagster_plain", "eager"), ("dagster_plain_cron", "cron")):
        variant = variant_named(name)
        env = variant_env(cfg, variant, 7, tmp_path / name)
        assert env["DAGSTER_PLAIN_AUTOMATION"] == mode
        assert "FRESHNESS_AUTOMATION" not in env and "FRESHNESS_POLICY" not in env
        load_settings(env)
        stack, profile = _variant_stack(
            cfg, variant, 7, tmp_path / "s.jsonl", load_settings(), tmp_path / name
        )
        assert profile is None
        assert stack.config.code_location == PLAIN_PEER_MODULE
        assert (stack.config.spark_mode, stack.config.event_clock) == ("local", "wall")
        assert name not in SIMULATED_PEERS
    ours = _variant_stack(cfg, variant_named("pmb"), 7, tmp_path / "s", load_settings(), tmp_path)
    assert (ours[0].config.spark_mode, ours[0].config.event_clock) == ("service", "stream")
    assert {"dagster_eager", "interval"} <= set(SIMULATED_PEERS)
    with pytest.raises(ValueError, match="unknown variant 'dagster_plain'"):
        simulate(None, "dagster_plain")  # type: ignore[arg-type]
    # On the wide lakehouse the plain peer is told which tables to write, in its own file.
    wide = replace(cfg, wide_seed=3)
    env = variant_env(wide, variant_named("dagster_plain"), 7, tmp_path / "plain")
    assert env["DAGSTER_PLAIN_WIDE"] == str(tmp_path / "wide-seed3-plain.json")
    assert "DAGSTER_PLAIN_WIDE" not in variant_env(wide, variant_named("pmb"), 7, tmp_path)
    assert "DAGSTER_PLAIN_WIDE" not in variant_env(cfg, variant_named("dagster_plain"), 7, tmp_path)
