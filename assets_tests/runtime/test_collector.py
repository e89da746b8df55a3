import gc

import pytest

from freshness_pipeline.runtime.collector import kept_for_life


@pytest.fixture(autouse=True)
def _unfrozen():
    yield
    gc.unfreeze()
    gc.enable()


def test_no_collection_inside_and_everything_kept_out_of_later_walks():
    gc.unfreeze()
    kept = [[] for _ in range(1000)]
    with kept_for_life():
        assert not gc.isenabled()
        more = [{} for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(kept) + len(more)


def test_a_failure_inside_still_turns_the_collector_back_on():
    with pytest.raises(RuntimeError), kept_for_life():
        raise RuntimeError("a failed import")
    assert gc.isenabled()


def test_a_collector_someone_turned_off_stays_off():
    gc.disable()
    with kept_for_life():
        pass
    assert not gc.isenabled()
