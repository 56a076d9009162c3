"""Where a commit's manifest differs from its base's, proven without visiting every
entry in Python (issue 15: a one-entry commit should cost the change, not the Memory).

A commit records one change per entry it touches, and every other manifest item must
be exactly the base's. ``diff`` checks precisely that shape: the new entries are the
base entries with the changed ids put in place or inserted, and every run of entries
between two changes equals the base's run (a tuple comparison: pointer identity first,
so in C and nearly free when the service reused the base's objects). What it proves
lets the commit check only the changed items:

* every base entry is still there, in the same order (entries never leave);
* every unchanged entry is equal to the base's (same version, hash and state);
* if the base's ids are strictly increasing, so are the new ones (each change sits
  where bisect put it; the changed ids are checked strictly increasing here).

When the shape does not hold — a caller built another manifest — ``diff`` returns None
and the commit runs every rule over every entry, as it always did.
"""

from __future__ import annotations

import bisect
import operator
from dataclasses import dataclass
from typing import Sequence

from ..model import MemoryManifest, MemoryManifestEntry

_ENTRY_ID = operator.attrgetter("entry_id")


@dataclass(frozen=True, slots=True)
class Placed:
    """One changed item: its position in the new entries and the base item it
    replaces (None for an added entry)."""

    position: int
    old: MemoryManifestEntry | None
    new: MemoryManifestEntry


@dataclass(frozen=True, slots=True)
class ManifestDiff:
    base: tuple[MemoryManifestEntry, ...]
    entries: tuple[MemoryManifestEntry, ...]
    placed: tuple[Placed, ...]

    def item(self, entry_id: str) -> MemoryManifestEntry | None:
        """The new manifest's item of ``entry_id`` (bisect: the new ids are sorted
        whenever the base's are, which is when a diff is used)."""
        i = bisect.bisect_left(self.entries, entry_id, key=_ENTRY_ID)
        if i < len(self.entries) and self.entries[i].entry_id == entry_id:
            return self.entries[i]
        return None


def diff(base: Sequence[MemoryManifestEntry], entries: Sequence[MemoryManifestEntry],
         changed_ids: Sequence[str], manifest: MemoryManifest | None = None) -> ManifestDiff | None:
    """The diff of ``entries`` against the strictly sorted ``base`` if ``entries`` is
    ``base`` with exactly the items of ``changed_ids`` replaced or inserted; else None.
    (The caller must know ``base`` is strictly sorted by entry_id.) ``manifest``: the
    MemoryManifest holding ``entries``; if ``with_items`` made it from this very
    ``base`` at exactly these ids, its record of the splice is the proof, and the
    unchanged runs are not compared again."""
    base, entries, ids = tuple(base), tuple(entries), list(changed_ids)
    try:
        if not all(isinstance(i, str) for i in ids) or not all(map(operator.lt, ids, ids[1:])):
            return None
        splice = None if manifest is None or manifest.entries is not entries else manifest._splice
        if splice is not None and splice.base is base and [new.entry_id for _, _, new in splice.placed] == ids:
            return ManifestDiff(base, entries, tuple(Placed(*p) for p in splice.placed))
        placed = []
        b = n = 0  # next unmatched position in base and in entries
        for entry_id in ids:
            pos = bisect.bisect_left(base, entry_id, lo=b, key=_ENTRY_ID)
            run = pos - b
            if entries[n:n + run] != base[b:pos]:
                return None
            n += run
            if n >= len(entries) or not isinstance(entries[n], MemoryManifestEntry) or entries[n].entry_id != entry_id:
                return None
            old = base[pos] if pos < len(base) and base[pos].entry_id == entry_id else None
            placed.append(Placed(n, old, entries[n]))
            n += 1
            b = pos if old is None else pos + 1
        if entries[n:] != base[b:]:
            return None
    except (TypeError, AttributeError):  # not entries at all: the full rules name the problem
        return None
    return ManifestDiff(base, entries, tuple(placed))
