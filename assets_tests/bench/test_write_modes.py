"""The write-mode bench's pure parts: the modes' options, the rotation, the summary."""

from __future__ import annotations

import pytest

from freshness_pipeline.bench.write_modes import main, modes, rotated, summarize
from freshness_pipeline.config.settings import load_settings


def test_modes_are_the_shipped_write_and_the_issues_alternatives():
    found = modes(buckets=4)
    assert found["bloom"] == {}  # as shipped: nothing over the job's own options
    assert found["simple"] == {"hoodie.index.type": "SIMPLE"}
    assert found["bucket"]["hoodie.bucket.index.num.buckets"] == "4"
    assert found["mor"] == {"hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    assert found["mor_bucket"] == {**found["mor"], **found["bucket"]}


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
        main(["--modes", "bloom,hash"], load_settings({}))
    assert "unknown ['hash']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--modes", "simple"], load_settings({}))
