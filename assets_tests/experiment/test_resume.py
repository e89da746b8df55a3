"""--resume keeps finished runs of the same conditions and reruns the rest."""

import json
from dataclasses import replace
from pathlib import Path

from freshness_pipeline.experiment import harness
from freshness_pipeline.experiment.harness import POLICY_VARIANTS, ExperimentConfig


def test_resume_keeps_only_runs_of_the_same_conditions(tmp_path: Path, monkeypatch):
    config = ExperimentConfig(
        out_dir=tmp_path, variants=(POLICY_VARIANTS["pmb"], POLICY_VARIANTS["random"]),
        seeds=(1,), duration_s=60, rate=300.0, speedup=1.0, universe_size=50, resume=True,
    )  # fmt: skip
    ran = []

    def fake_run(config, variant, seed, stream):
        ran.append(variant.name)
        summary = {"variant": variant.name, "seed": seed,
                   "conditions": harness._conditions(config)}  # fmt: skip
        run_dir = config.out_dir / f"seed{seed}" / variant.name
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "summary.json").write_text(json.dumps(summary))
        return summary

    monkeypatch.setattr(harness, "record", lambda config, seed: tmp_path / "stream")
    monkeypatch.setattr(harness, "run_variant", fake_run)
    monkeypatch.setattr(harness, "machine_facts", lambda: {})

    harness.run_experiment(replace(config, variants=(POLICY_VARIANTS["pmb"],)))
    assert ran == ["pmb"]
    harness.run_experiment(config)  # pmb is kept, random runs
    assert ran == ["pmb", "random"]
    harness.run_experiment(replace(config, rate=600.0))  # other conditions: both rerun
    assert ran == ["pmb", "random", "pmb", "random"]
    harness.run_experiment(replace(config, resume=False))  # no resume: both rerun
    assert ran[-2:] == ["pmb", "random"] and len(ran) == 6
