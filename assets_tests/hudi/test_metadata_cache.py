"""The bounded caches behind the metadata module (pure; the Hudi side is tested in
test_hudi_metadata.py against real tables)."""

from __future__ import annotations

import threading

from freshness_pipeline.hudi.caches import BoundedCache


def test_bounded_cache_evicts_least_recently_used():
    cache: BoundedCache[str, int] = BoundedCache(capacity=3)
    for i, key in enumerate("abc"):
        cache.put(key, i)
    assert cache.get("a") == 0  # a is now the most recent
    cache.put("d", 3)
    assert cache.get("b") is None and len(cache) == 3
    assert [cache.get(k) for k in "acd"] == [0, 2, 3]
    assert cache.hits == 4 and cache.misses == 1


def test_bounded_cache_stays_bounded_under_concurrent_writers():
    cache: BoundedCache[tuple[int, int], int] = BoundedCache(capacity=100)

    def writer(n: int) -> None:
        for i in range(2_000):
            cache.put((n, i), i)
            cache.get((n, i // 2))

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 100
