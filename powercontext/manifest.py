"""The flat-v1 manifest of a Memory Revision (RFC 000 "Manifest"): its entries in
entry_id order, and what a commit derives from its base instead of rescanning every
entry (the active-hash counts, the record of a splice). Re-exported by ``model``.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from . import canonical

EntryState = Literal["active", "inactive"]
MANIFEST_FORMAT = "flat-v1"


@dataclass(frozen=True, slots=True)
class MemoryManifestEntry:
    entry_id: str
    entry_version_id: str
    entry_content_hash: str
    state: EntryState

    def to_canonical(self) -> dict[str, Any]:
        return {
            "entry_content_hash": self.entry_content_hash,
            "entry_id": self.entry_id,
            "entry_version_id": self.entry_version_id,
            "state": self.state,
        }


class _ActiveCounts:
    """entry_content_hash -> how many active entries hold it. The counts of a manifest
    made by ``with_items`` are its base's counts plus its own change, a chain of small
    dicts flattened into one table once it is ``CHAIN_LIMIT`` links deep: a one-entry
    commit to a 10k-entry Memory then neither copies a 10k-key table nor, when the
    Revision leaves the cache, frees one (together ~0.2 ms a commit). A lookup reads at
    most ``CHAIN_LIMIT`` dicts; dedupe looks up only the entries a commit adds."""

    CHAIN_LIMIT = 32
    __slots__ = ("_delta", "_base", "_depth")

    def __init__(self, delta: Mapping[str, int], base: "_ActiveCounts | None" = None) -> None:
        self._delta = dict(delta)
        self._base = base
        self._depth = 0 if base is None else base._depth + 1

    def get(self, entry_content_hash: str, default: int = 0) -> int:
        n, node = 0, self
        while node is not None:
            n += node._delta.get(entry_content_hash, 0)
            node = node._base
        return n if n else default

    def changed(self, delta: Mapping[str, int]) -> "_ActiveCounts":
        if self._depth + 1 < self.CHAIN_LIMIT:
            return _ActiveCounts(delta, self)
        flat = Counter(self.as_dict())  # every CHAIN_LIMIT commits: O(manifest) once
        flat.update(delta)
        return _ActiveCounts(flat)

    def as_dict(self) -> dict[str, int]:
        """The counts as one table, hashes with no active entry left out."""
        chain, node = [], self
        while node is not None:
            chain.append(node._delta)
            node = node._base
        total: Counter = Counter()
        for delta in reversed(chain):
            total.update(delta)
        return {h: n for h, n in total.items() if n}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ActiveCounts) and self.as_dict() == other.as_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"_ActiveCounts({self.as_dict()!r})"


@dataclass(frozen=True, slots=True)
class _Splice:
    """How ``with_items`` made a manifest from its base: the base's very entries tuple
    and, per changed id in order, (position in the new entries, the base item it
    replaced or None, the new item). The entries are immutable, so this is a proof of
    the splice a commit's manifest_diff would otherwise re-establish by comparing the
    unchanged runs (two 10k-pointer slices per one-entry commit at 10k entries). It
    keeps the base's entries tuple alive as long as this manifest (8 bytes an entry;
    the entry objects are shared)."""

    base: tuple["MemoryManifestEntry", ...]
    placed: tuple[tuple[int, "MemoryManifestEntry | None", "MemoryManifestEntry"], ...]


@dataclass(frozen=True, slots=True)
class _ManifestViews:
    """What a commit asks of its base manifest, computed once per manifest object: a
    one-entry commit to a 10k-entry Memory must not rescan the entries for them."""

    strictly_sorted: bool  # entry ids strictly increasing: lookups may bisect
    active_hashes: _ActiveCounts  # entry_content_hash -> number of active entries holding it


_ENTRY_ID = operator.attrgetter("entry_id")


@dataclass(frozen=True, slots=True)
class MemoryManifest:
    entries: tuple[MemoryManifestEntry, ...] = ()
    format: str = MANIFEST_FORMAT
    # Derived from the immutable entries (built lazily, or derived from the base's by
    # with_items); never part of equality, repr or the canonical form.
    _views: _ManifestViews | None = field(default=None, init=False, repr=False, compare=False)
    _splice: _Splice | None = field(default=None, init=False, repr=False, compare=False)

    def _derived(self) -> _ManifestViews:
        views = self._views
        if views is None:
            ids = list(map(_ENTRY_ID, self.entries))
            try:
                ordered = all(map(operator.lt, ids, ids[1:]))
            except TypeError:  # a non-string id: not a manifest a commit accepts anyway
                ordered = False
            hashes = _ActiveCounts(Counter(e.entry_content_hash for e in self.entries if e.state == "active"))
            views = _ManifestViews(ordered, hashes)
            object.__setattr__(self, "_views", views)  # a cache of a pure function: races are benign
        return views

    def get(self, entry_id: str) -> MemoryManifestEntry | None:
        if not isinstance(entry_id, str):
            return None  # ids are strings: nothing else equals one
        if self._derived().strictly_sorted:
            i = bisect.bisect_left(self.entries, entry_id, key=_ENTRY_ID)
            if i < len(self.entries) and self.entries[i].entry_id == entry_id:
                return self.entries[i]
            return None
        for item in self.entries:
            if item.entry_id == entry_id:
                return item
        return None

    def has_active_hash(self, entry_content_hash: str) -> bool:
        """Whether an active entry holds this content (exact dedupe of new entries)."""
        return self._derived().active_hashes.get(entry_content_hash, 0) > 0

    def with_items(self, items) -> "MemoryManifest":
        """This manifest with each of ``items`` in place of the entry with its id, or
        inserted in entry_id order: the manifest of the next Revision. A sorted base is
        spliced at the changed positions (bisect) and its views are updated by the
        change, so the cost is the change plus copying pointers, not a re-sort of every
        entry (tests/unit/test_manifest_views.py compares it with the full rebuild)."""
        changed = {item.entry_id: item for item in items}
        order = sorted(changed, key=canonical.utf8_key)
        views = self._derived()
        if not views.strictly_sorted:
            merged = {e.entry_id: e for e in self.entries}
            merged.update(changed)
            return MemoryManifest(tuple(merged[k] for k in sorted(merged, key=canonical.utf8_key)), self.format)
        entries, parts, start, n = self.entries, [], 0, 0
        delta: Counter = Counter()
        placed = []
        for entry_id in order:
            item = changed[entry_id]
            pos = bisect.bisect_left(entries, entry_id, lo=start, key=_ENTRY_ID)
            parts.append(entries[start:pos])
            n += pos - start
            old = None
            start = pos
            if pos < len(entries) and entries[pos].entry_id == entry_id:
                old = entries[pos]
                start = pos + 1
                if old.state == "active":
                    delta[old.entry_content_hash] -= 1
            placed.append((n, old, item))
            parts.append((item,))
            n += 1
            if item.state == "active":
                delta[item.entry_content_hash] += 1
        parts.append(entries[start:])
        # Concatenating a few tuples copies the pointers once (a list, extended and
        # then made a tuple, copied them twice more: 0.18 vs 0.06 ms at 10k entries);
        # many parts are chained instead, so the cost stays linear.
        joined = sum(parts, ()) if len(parts) <= 9 else tuple(itertools.chain.from_iterable(parts))
        manifest = MemoryManifest(joined, self.format)
        object.__setattr__(manifest, "_views", _ManifestViews(True, views.active_hashes.changed(delta)))
        object.__setattr__(manifest, "_splice", _Splice(entries, tuple(placed)))
        return manifest

    def by_id(self) -> dict[str, MemoryManifestEntry]:
        return dict(zip(map(_ENTRY_ID, self.entries), self.entries))

    @property
    def active(self) -> tuple[MemoryManifestEntry, ...]:
        return tuple(e for e in self.entries if e.state == "active")

    @property
    def inactive(self) -> tuple[MemoryManifestEntry, ...]:
        return tuple(e for e in self.entries if e.state == "inactive")

    def to_canonical(self) -> dict[str, Any]:
        return {"entries": [e.to_canonical() for e in self.entries], "format": self.format}
