"""A bounded, thread-safe cache for immutable Hudi metadata, shared by every reader in
the process (a long-running code server stays flat whatever the tables' age)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A thread-safe LRU map with a size bound, shared by every reader in the process.

    Only immutable things go in, keyed by what makes them immutable: a base file's path (a
    new version of a file group is a new file), a completed instant (Hudi never rewrites a
    completed commit), a timeline listing (same completed files, same latest slices). So an
    entry is never stale, across ticks and whatever other processes write meanwhile.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.capacity:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.hits = self.misses = 0
