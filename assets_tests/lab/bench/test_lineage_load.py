"""The lineage-load benchmark's variants still load the definitions (so its figures are
of what it says): one sample of each, in fresh processes."""

from __future__ import annotations

import pytest

from freshness_pipeline.lab.bench.lineage_load import _CHILD, _DIRECT, VARIANTS, sample


@pytest.mark.parametrize("variant", VARIANTS)
def test_each_variant_loads_the_definitions(variant):
    assert 0 < sample(variant) < 60


def test_the_lineage_work_alone_is_timed():
    # The fastest of three interleaved samples each: one sample of either can be slowed
    # by whatever else the machine runs.
    samples = [(sample("snapshot", _DIRECT), sample("derived", _DIRECT)) for _ in range(3)]
    snapshot, derived = (min(column) for column in zip(*samples, strict=True))
    assert 0 < snapshot < derived < 60
    assert "freshness_pipeline.definitions" in _CHILD
