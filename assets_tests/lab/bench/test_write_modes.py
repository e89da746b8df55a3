"""The write-mode bench's pure parts: the modes' options, the rotation, the summary."""

from __future__ import annotations

import pytest

from freshness_pipeline.catalog.jobs import JOBS
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.lab.bench.write_modes import main, modes, rotated, spec_for, summarize
from freshness_pipeline.runtime.spark import INTERPRETED


def test_modes_are_the_published_layout_the_declared_one_and_the_alternatives():
    found = modes(buckets=4)
    assert found["published"] == found["hour"] == {}  # nothing over the job's own options
    assert found["bloom"] == found["hour_bloom"] == {"hoodie.index.type": "BLOOM"}
    assert found["bucket"]["hoodie.bucket.index.num.buckets"] == "4"
    assert found["hour_bucket"]["hoodie.bucket.index.num.buckets"] == "1"
    assert found["mor"] == {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    assert found["mor_bucket"] == {**found["mor"], **found["bucket"]}
    # session settings, as FRESHNESS_SPARK_CODEGEN=false gives every driver
    assert found["published_interpreted"] == found["hour_interpreted"] == INTERPRETED
    assert all(key.startswith("spark.") for key in INTERPRETED)
    spec = JOBS["trade_aggr"]
    assert spec_for(spec, "published").partition_by == "symbol_prefix"
    assert spec_for(spec, "bloom").partition_by == "symbol_prefix"
    assert spec_for(spec, "hour").declaration.partition == spec.declaration.partition
    assert spec_for(spec, "none").partition_by is None


def test_every_mode_takes_every_place_in_turn():
    names = ["bloom", "simple", "mor"]
    orders = [rotated(names, i) for i in range(3)]
    assert orders == [names, ["simple", "mor", "bloom"], ["mor", "bloom", "simple"]]
    assert all(sorted(o) == sorted(names) for o in orders)


def test_summary_takes_medians_and_skips_phases_a_run_lacks():
    runs = {
        "bloom": [
            {"seconds": 5.0, "index_lookup": 2.0},
            {"seconds": 7.0, "index_lookup": 3.0},
            {"seconds": 6.0},
        ],
        "bucket": [{"seconds": 2.0, "write_files": 1.0}],
    }
    assert summarize(runs) == [
        ("bloom", 6.0, {"index_lookup": 2.5}),
        ("bucket", 2.0, {"write_files": 1.0}),
    ]


def test_unknown_mode_or_no_baseline_is_refused_before_spark_starts(capsys):
    with pytest.raises(SystemExit):
        main(["--modes", "published,hash"], load_settings({}))
    assert "unknown ['hash']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--modes", "hour"], load_settings({}))
