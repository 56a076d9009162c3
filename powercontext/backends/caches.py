"""Byte-bounded LRU caches of verified reads (issue 15).

A cached Revision of a 10k-entry Memory holds megabytes; bounding such a cache by a count
of items bounds nothing. Each item is put with its approximate size in bytes and the
least recently used items go first when the total would exceed ``max_bytes``. An item
larger than the whole budget is not kept — unless the cache is made with
``keep_oversize=True`` (the revision cache): then the most recent such item is kept in
a slot of its own, beside the budget (``replaces`` may keep the one there instead). A 100k-entry Memory's head Revision is ~95 MB
here, over the 64 MB default: it was never cached, so every head read, commit and
search re-verified the whole manifest (11 s each on OceanBase). The cache then holds at
most ``max_bytes`` plus that one item, whose manifest objects the caller holds anyway.
``max_bytes = 0`` still disables the cache. Thread-safe (the OceanBase adapter reads
from several worker threads).

``pinned(keys)`` keeps items from being evicted for the length of a block: a cold
``entries(head)`` at 20k entries reads the older Revisions that created the head's
versions (~19 MB each here) and, by plain LRU, they pushed the head out of the 64 MB
budget and the same call verified the head a second time. A pin changes only which
items go first, never the total: to make room, ``put`` evicts unpinned items, least
recently used first; if pinned items leave no room, the new item is not kept (as if it
were over the budget). So ``nbytes <= max_bytes`` still holds after every ``put``;
lowering ``max_bytes`` evicts pinned items too.

Budgets: ``POWERCONTEXT_REVISION_CACHE_MB`` (default 64),
``POWERCONTEXT_VERSION_CACHE_MB`` (default 16) and ``POWERCONTEXT_PROVEN_CHUNKS_MB``
(default 64; manifest groups shared with cached Revisions, revision_store.py), or set ``max_bytes`` on a backend's
``revision_cache`` / ``version_cache`` / ``proven_chunks`` at run time.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Hashable, Iterable, Iterator


def budget_from_env(name: str, default_mb: float) -> int:
    raw = os.environ.get(name)
    try:
        mb = float(raw) if raw else default_mb
    except ValueError:
        mb = default_mb
    return max(0, int(mb * 2**20))


class ByteLRU:
    def __init__(self, max_bytes: int, *, keep_oversize: bool = False,
                 replaces: Callable[[Hashable, Hashable], bool] | None = None) -> None:
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.keep_oversize = keep_oversize
        self._oversize: tuple[Hashable, Any, int] | None = None  # (key, value, nbytes)
        # whether a new oversize key may take the slot from the one there (default: yes)
        self._replaces = replaces or (lambda new, old: True)
        self._pins: dict[Hashable, int] = {}  # key -> blocks pinning it (threads may nest)
        self.max_bytes = max_bytes

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        with self._lock:
            self._max_bytes = int(value)
            self._trim(respect_pins=False)
            if self._max_bytes <= 0:
                self._oversize = None

    def _trim(self, respect_pins: bool = True) -> None:
        if not (respect_pins and self._pins):
            while self._bytes > self._max_bytes and self._items:
                _, (_, size) = self._items.popitem(last=False)
                self._bytes -= size
            return
        over, victims = self._bytes - self._max_bytes, []
        for key, (_, size) in self._items.items():  # least recently used first
            if over <= 0:
                break
            if key not in self._pins:
                victims.append(key)
                over -= size
        for key in victims:
            self._bytes -= self._items.pop(key)[1]

    @contextmanager
    def pinned(self, keys: Iterable[Hashable]) -> Iterator[None]:
        """Within the block, the items under ``keys`` (cached now or put meanwhile) are
        not evicted to make room for others; see the module docstring for the budget."""
        keys = list(dict.fromkeys(keys))
        with self._lock:
            for key in keys:
                self._pins[key] = self._pins.get(key, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                for key in keys:
                    if self._pins[key] == 1:
                        del self._pins[key]
                    else:
                        self._pins[key] -= 1

    @property
    def nbytes(self) -> int:
        """Bytes of the items within the budget (the oversize slot: ``oversize_bytes``)."""
        return self._bytes

    @property
    def oversize_bytes(self) -> int:
        return 0 if self._oversize is None else self._oversize[2]

    def __len__(self) -> int:
        return len(self._items) + (self._oversize is not None)

    def _held(self, key: Hashable) -> Any | None:
        """The value of ``key``, marked as just used, or None; the lock is held."""
        item = self._items.get(key)
        if item is None:
            big = self._oversize
            return big[1] if big is not None and big[0] == key else None
        self._items.move_to_end(key)
        return item[0]

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            return self._held(key)

    def get_many(self, keys: Iterable[Hashable]) -> dict[Hashable, Any]:
        """``{key: value}`` of the keys held, under one lock: a search looks up ~64
        candidates' versions and scripts, and a lock per key cost it ~25 µs a cache."""
        with self._lock:
            found = {key: self._held(key) for key in keys}
        return {key: value for key, value in found.items() if value is not None}

    def put(self, key: Hashable, value: Any, nbytes: int) -> None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if self._oversize is not None and self._oversize[0] == key:
                self._oversize = None
            if nbytes > self._max_bytes:
                if self.keep_oversize and self._max_bytes > 0 and (
                        self._oversize is None or self._replaces(key, self._oversize[0])):
                    self._oversize = (key, value, nbytes)
                return
            if self._pins and nbytes > self._max_bytes - sum(
                    self._items[k][1] for k in self._pins if k in self._items):
                return  # the pinned items leave no room for it: not kept, nothing evicted
            self._items[key] = (value, nbytes)
            self._bytes += nbytes
            self._trim()  # evicts only unpinned items, and never this one (it fits beside the pinned)

    def discard_if(self, predicate: Callable[[Hashable], bool]) -> None:
        with self._lock:
            for key in [k for k in self._items if predicate(k)]:
                self._bytes -= self._items.pop(key)[1]
            if self._oversize is not None and predicate(self._oversize[0]):
                self._oversize = None

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
            self._oversize = None
