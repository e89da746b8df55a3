"""--resume keeps finished runs of the same conditions and reruns the rest."""

from dataclasses import replace
from pathlib import Path

from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.lab.experiment import harness
from freshness_pipeline.lab.experiment.harness import ExperimentConfig
from freshness_pipeline.lab.experiment.run_files import RunSummary
from freshness_pipeline.lab.experiment.variants import VARIANTS


def test_resume_keeps_only_runs_of_the_same_conditions(tmp_path: Path, monkeypatch):
    config = ExperimentConfig(
        out_dir=tmp_path,
        variants=(VARIANTS["pmb"], VARIANTS["random"]),
        seeds=(1,),
        duration_s=60,
        rate=300.0,
        speedup=1.0,
        universe_size=50,
        resume=True,
    )
    ran = []
    settings = load_settings({})

    def fake_run(config, variant, seed, stream, settings, progress=None):
        ran.append(variant.name)
        run_dir = config.out_dir / f"seed{seed}" / variant.name
        run_dir.mkdir(parents=True, exist_ok=True)
        summary = RunSummary(
            variant.name,
            seed,
            dir=run_dir,
            env=variant.env,
            conditions=harness._conditions(config),
            commit=harness.code_version(),
        )
        summary.write(run_dir)
        return summary

    monkeypatch.setattr(harness, "record", lambda config, seed: tmp_path / "stream")
    monkeypatch.setattr(harness, "run_variant", fake_run)
    monkeypatch.setattr(harness, "machine_facts", lambda: {})
    monkeypatch.setattr(harness, "code_version", lambda: "abc1234")

    harness.run_experiment(replace(config, variants=(VARIANTS["pmb"],)), settings)
    assert ran == ["pmb"]
    harness.run_experiment(config, settings)  # pmb is kept, random runs
    assert ran == ["pmb", "random"]
    harness.run_experiment(replace(config, rate=600.0), settings)  # other conditions: both rerun
    assert ran == ["pmb", "random", "pmb", "random"]
    harness.run_experiment(replace(config, resume=False), settings)  # no resume: both rerun
    assert ran[-2:] == ["pmb", "random"] and len(ran) == 6
    # the code changed since: a report's seeds run on one commit, so both run again
    monkeypatch.setattr(harness, "code_version", lambda: "def5678")
    harness.run_experiment(config, settings)
    assert ran[-2:] == ["pmb", "random"] and len(ran) == 8
    harness.run_experiment(config, settings)  # and now they are of this commit: kept
    assert len(ran) == 8


def test_bursts_are_a_condition_and_a_stream_of_their_own(tmp_path: Path):
    steady = ExperimentConfig(
        out_dir=tmp_path,
        variants=(VARIANTS["pmb"],),
        seeds=(1,),
        duration_s=60,
        rate=300.0,
        speedup=1.0,
        universe_size=50,
        layout="published",
    )
    # Runs recorded before bursts existed carry exactly these keys and must still match
    # (they ran on the published layout; another layout is a condition of its own).
    assert set(harness._conditions(steady)) == {
        "duration_s",
        "rate",
        "speedup",
        "universe_size",
        "k",
        "tick_s",
        "commit_interval_s",
    }
    assert harness._conditions(replace(steady, layout=None))["layout"] == "declared"
    bursty = replace(steady, burst_every_s=30, burst_s=5, burst_factor=20.0)
    assert harness._conditions(bursty) != harness._conditions(steady)
    assert harness._conditions(bursty)["burst_factor"] == 20.0
    assert bursty.stream_config(7).rate_at(0) == 6000.0
    assert bursty.stream_config(7).seed == 7
    # news spikes are a condition of their own, and only then a key (older bursty runs match)
    assert "spike_symbols" not in harness._conditions(bursty)
    spiky = replace(bursty, spike_symbols=4)
    assert harness._conditions(spiky)["spike_symbols"] == 4
    assert harness._conditions(spiky) != harness._conditions(bursty)
    assert spiky.stream_config(7).spike_symbols == 4
    packed = replace(steady, raw_packing=True)
    assert harness._conditions(packed) == {**harness._conditions(steady), "raw_packing": True}
    env = harness.variant_env(packed, VARIANTS["pmb"], 1, tmp_path / "run")
    assert env["FRESHNESS_RAW_PACKING"] == "true" and env["FRESHNESS_CLUSTERING_TABLES"] == "none"
    assert "FRESHNESS_RAW_PACKING" not in harness.variant_env(steady, VARIANTS["pmb"], 1, tmp_path)


def _tiny(out_dir: Path, speedup: float = 1.0) -> ExperimentConfig:
    """Two event seconds at 20 events/s: a stream recorded in a moment."""
    return ExperimentConfig(
        out_dir=out_dir,
        variants=(VARIANTS["pmb"],),
        seeds=(1,),
        duration_s=2,
        rate=20.0,
        speedup=speedup,
        universe_size=50,
    )


def test_a_bursty_stream_is_recorded_under_its_own_name(tmp_path: Path):
    base = _tiny(tmp_path)
    steady = harness.record(base, 1)
    bursty = harness.record(replace(base, burst_every_s=30, burst_s=5, burst_factor=20.0), 1)
    assert steady.name == "stream-seed1-2s-20eps.jsonl.gz"
    assert bursty.name == "stream-seed1-2s-20eps-burst30s5x20.jsonl.gz"
    assert bursty.stat().st_size > 2 * steady.stat().st_size
    spiky = replace(base, burst_every_s=30, burst_s=5, burst_factor=20.0, spike_symbols=3)
    assert harness.record(spiky, 1).name == "stream-seed1-2s-20eps-burst30s5x20-spikes3.jsonl.gz"


def test_a_warm_up_is_a_condition_and_lengthens_the_stream_by_itself(tmp_path: Path):
    base = _tiny(tmp_path, speedup=2.0)
    warm = replace(base, warmup_s=3.0)
    assert "warmup_s" not in harness._conditions(base)  # earlier runs still match
    assert harness._conditions(warm)["warmup_s"] == 3.0
    # 3 wall seconds at speedup 2 are 6 event seconds more before the window's 2
    assert harness.record(warm, 1).name == "stream-seed1-8s-20eps.jsonl.gz"
    assert harness.record(base, 1).name == "stream-seed1-2s-20eps.jsonl.gz"
