"""Revision rows in and out: chunked manifest storage (``manifest_chunks``), the
byte-bounded cache of verified Revisions, and ``changes()`` from change lists alone.

What a read checks (RFC 000: reading a Revision compares ID, hash and canonical bytes):

* a Revision not in the cache is reassembled from its chunks (each must hash to its
  key), parsed, re-encoded canonically and compared with the content hash; its lineage
  likewise. Only then is it cached, with the exact stored root row.
* a cached Revision is served only if its stored root row (chunk list, content hash,
  lineage, lineage hash) is still exactly the cached one, and — depending on what the
  caller returns — the chunks behind it still hold the cached text: ``check="all"``
  re-reads every chunk (reads returning a whole manifest), an iterable of entry ids
  re-reads the chunks holding those entries (search candidates, citations), and
  ``check="root"`` trusts content-addressed chunks that were verified when cached
  (commit bases: the new Revision is built on the verified base either way, and an
  altered chunk it shares is still refused by every later read of it).

What a verification may skip (``proven_chunks``): parsing and re-canonicalizing a
manifest group that ``mc.encode`` itself produced in this process (``encoded.fresh`` of
a commit or of a verification: entries, their canonical text, its key), when a stored
chunk holds exactly that text. Every chunk read is still hashed to its key
(``mc.decode``) and compared with the proven group's text, so the stored bytes are the
ones that were canonical for those entries. Without this, every older Revision read for
identity checks (the creating Revision of each version ``entries()`` returns) parsed and
re-canonicalized the whole manifest it shares with the head: O(Revisions × entries)
after a reopen. Then the Revision's content is assembled from its decoded groups and
change list, re-encoded, compared with the reassembled stored text byte for byte and
hashed whole against the Revision's content hash — what is returned is exactly what
those bytes encode — so an altered chunk, root or hash column is refused as before,
proven or not (tests/conformance/test_proven_chunks.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from .. import canonical
from ..errors import ArtifactNotFoundError, InvalidCitationError, InvalidMemoryRequestError, shown
from ..model import ArtifactRef, MemoryContent, MemoryManifest, MemoryRevision, MemoryRevisionChanges, RevisionLineage
from . import manifest_chunks as mc
from .caches import ByteLRU, budget_from_env
from .rules import lineage_hash, stored_row

ENTRY_OBJECT_BYTES = 500  # a parsed MemoryManifestEntry with its four strings, and its index slots


@dataclass
class CachedRevision:
    row: tuple[Any, ...]
    revision: MemoryRevision
    layout: mc.Layout
    nbytes: int
    # Its manifest passed every check of a commit (_check_plan) in this process: true
    # for a Revision this backend committed, false for one read back from storage.
    validated: bool = False
    _group_of: dict[str, int] | None = field(default=None, repr=False)
    _items: dict[str, Any] | None = field(default=None, repr=False)
    _active: int | None = field(default=None, repr=False)

    @property
    def active_count(self) -> int:
        """Active entries of the manifest (counted once per cached Revision)."""
        if self._active is None:
            self._active = sum(1 for e in self.revision.manifest.entries if e.state == "active")
        return self._active

    def item(self, entry_id: str):
        """The manifest item of one entry (a dict built once per cached Revision)."""
        if self._items is None:
            self._items = self.revision.manifest.by_id()
        return self._items.get(entry_id)

    def group_keys(self, entry_ids: Iterable[str]) -> list[str]:
        if self._group_of is None:
            self._group_of = {e.entry_id: i for i, g in enumerate(self.layout.groups) for e in g.entries}
        groups = self.layout.groups
        return list(dict.fromkeys(groups[self._group_of[e]].key for e in entry_ids if e in self._group_of))


class RevisionStore:
    """Mixin of DatabaseMemoryBackend. Adapters provide ``_read_chunks(tx, keys)`` →
    {key: text} and ``_insert_chunks(tx, {key: text})`` (insert-or-ignore)."""

    def _init_revision_store(self) -> None:
        # A Revision over the whole budget (a 100k-entry head) has a slot of its own
        # (caches.py); an older Revision of the same Memory, read for history or identity
        # checks, does not take it from a later one: the head stays. Within the budget, a
        # read that checks the versions of the Revision it returns pins that Revision
        # while it reads their older creators (base.py, caches.py ``pinned``).
        self.revision_cache = ByteLRU(
            budget_from_env("POWERCONTEXT_REVISION_CACHE_MB", 64), keep_oversize=True,
            replaces=lambda new, old: new.artifact_id != old.artifact_id or new.revision >= old.revision)
        # key -> Group that ``mc.encode`` canonicalized itself in this process (``encoded.fresh``,
        # never a stored layout's groups: it grows only from text this process built)
        self.proven_chunks = ByteLRU(budget_from_env("POWERCONTEXT_PROVEN_CHUNKS_MB", 64))

    # ---------------------------------------------------------------- reads

    def _revision(self, tx: Any, ref: ArtifactRef, check: Any = "all") -> MemoryRevision:
        return self._cached_revision(tx, ref, check).revision

    def _cached_revision(self, tx: Any, ref: ArtifactRef, check: Any = "all") -> CachedRevision:
        return self._cached_revision_of_row(tx, ref, self._read_revision(tx, ref.artifact_id, ref.revision), check)

    def _cached_revision_of_row(self, tx: Any, ref: ArtifactRef, row: Sequence[Any] | None,
                                check: Any = "all") -> CachedRevision:
        """``_cached_revision`` of the row the caller read in this transaction (a
        search reads its heads' rows with its head re-check)."""
        if row is None:
            if self._read_head(tx, ref.artifact_id) is None:
                raise ArtifactNotFoundError(f"no Memory {ref.artifact_id!r} in this database")
            raise ArtifactNotFoundError(f"Memory {ref.artifact_id!r} has no Revision {ref.revision}")
        row = tuple(row)
        cached = self.revision_cache.get(ref)
        if cached is not None and cached.row == row and self._chunks_unchanged(tx, cached, check):
            return cached
        return self._verify_revision(tx, ref, row)

    def _chunks_unchanged(self, tx: Any, cached: CachedRevision, check: Any) -> bool:
        if check == "root" or not mc.is_chunked(cached.row[0]):
            return True  # an inline row was compared whole with the root row
        groups = {g.key: g.text for g in cached.layout.groups}
        if check == "all":
            groups.update(cached.layout.others)
            keys = list(groups)
        else:
            keys = cached.group_keys(check)
        if not keys:
            return True
        stored = self._read_chunks(tx, keys)
        return all(stored.get(k) == groups[k] for k in keys)

    def _verify_revision(self, tx: Any, ref: ArtifactRef, row: tuple[Any, ...]) -> CachedRevision:
        """Load a Revision and prove its stored bytes are canonical and hash to the
        stored content hash: corruption of a Revision row or chunk is never read as truth."""
        stored_content, content_hash, lineage_text, stored_lineage_hash = row
        where = f"Revision {ref}"
        stored_layout = proven = None
        if mc.is_chunked(stored_content):
            # a stored group holding exactly a proven group's text is not parsed again
            looked_up: dict[str, mc.Group] = {}

            def proven_group(key: str) -> mc.Group | None:
                group = looked_up[key] = self.proven_chunks.get(key)
                return group

            text, stored_layout = mc.decode(stored_content, lambda keys: self._read_chunks(tx, keys), where,
                                            proven_group)
            # nor canonicalized again: encode reuses it (comparing its entries); the groups
            # decode took from the cache, without a second locked lookup per group
            known = tuple(g for g in stored_layout.groups if looked_up.get(g.key) is g)
            proven = mc.Layout("", known) if known else None
        else:
            text = stored_content
        with stored_row(where):
            content = MemoryContent.from_json(text) if stored_layout is None else self._content_of(stored_layout, where)
            lineage = RevisionLineage.from_json(lineage_text)
        encoded = mc.encode(content, proven, **self.chunk_sizes)
        if (encoded.text, encoded.content_hash) != (text, content_hash):
            raise InvalidCitationError(f"Revision {ref} does not match its content hash: the row was altered")
        if (lineage_hash(lineage_text) != stored_lineage_hash
                or canonical.canonical_text(lineage.to_canonical()) != lineage_text):
            raise InvalidCitationError(f"Revision {ref}: its lineage does not match its lineage hash: the row was altered")
        self._prove(encoded.fresh)
        revision = MemoryRevision(ref=ref, content=content, content_hash=content_hash, lineage=lineage)
        # the stored grouping (what a chunk re-check compares) is over the very entry
        # objects of the manifest (so the next commit's reuse is identity checks)
        return self._remember_verified(ref, row, revision, encoded.layout if stored_layout is None else stored_layout)

    @staticmethod
    def _content_of(layout: mc.Layout, where: str) -> MemoryContent:
        """The MemoryContent of a decoded chunked Revision: change list, format and
        schema parsed from its text without the entries, the entries those of its groups.
        What it returns is what the caller then proves canonical: its re-encoded text
        must equal the stored text byte for byte."""
        shell = MemoryContent.from_json(mc.shell_text(layout, where))
        if shell.manifest.entries:
            raise InvalidCitationError(f"{where}: its change list chunk holds manifest entries (altered row)")
        entries = tuple(itertools.chain.from_iterable(g.entries for g in layout.groups))
        return MemoryContent(MemoryManifest(entries, shell.manifest.format), shell.changes, shell.schema)

    def _prove(self, groups: Iterable[mc.Group]) -> None:
        """Record groups whose text ``mc.encode`` canonicalized from their entries."""
        for g in groups:
            self.proven_chunks.put(g.key, g, g.nbytes)

    def _remember_verified(self, ref, row, revision, layout, validated: bool = False) -> CachedRevision:
        nbytes = layout.nbytes + len(row[2]) + ENTRY_OBJECT_BYTES * len(revision.manifest.entries)
        cached = CachedRevision(row, revision, layout, nbytes, validated)
        self.revision_cache.put(ref, cached, nbytes)
        return cached

    # ---------------------------------------------------------------- writes

    def _encode_plan(self, plan, cached: CachedRevision | None, diff=None) -> mc.Encoded:
        """Outside the write transaction: the content hash and chunks of the new
        content, reusing the canonical text of every group the cached base holds (and,
        with the diff against it, cutting only the groups around the change)."""
        return mc.encode(plan.content, None if cached is None else cached.layout, diff=diff, **self.chunk_sizes)

    chunk_sizes: dict[str, int] = {}

    def _store_revision(self, tx: Any, plan, encoded: mc.Encoded, family: str, lineage_text: str,
                        base: CachedRevision | None) -> tuple[Any, ...]:
        """Insert the chunks the base does not already reference and the Revision row;
        return the row as stored (what later reads compare with)."""
        new = encoded.new_chunks(None if base is None or not mc.is_chunked(base.row[0]) else base.layout)
        if new:
            self._insert_chunks(tx, new)
        row = (encoded.root, encoded.content_hash, lineage_text, lineage_hash(lineage_text))
        self._insert_revision(tx, plan.artifact_id, plan.next_revision, family, *row)
        return row

    # ---------------------------------------------------------------- history

    def _changes_sync(self, ref: ArtifactRef, since: int | None) -> tuple[MemoryRevisionChanges, ...]:
        """Change lists only: a chunked Revision's head chunk (hash-checked against its
        key), so the cost is linear in the changes read, not in manifests."""
        if since is not None and (not isinstance(since, int) or isinstance(since, bool) or since < 0):
            raise InvalidMemoryRequestError(f"since_revision must be None or an integer ≥ 0, got {shown(since)}")
        with self._transaction(write=False) as tx:
            head = self._read_head(tx, ref.artifact_id)
            if head is None:
                raise ArtifactNotFoundError(f"no Memory {ref.artifact_id!r} in this database")
            if ref.revision < 1 or ref.revision > head:
                raise ArtifactNotFoundError(f"Memory {ref.artifact_id!r} has no Revision {ref.revision} (head is {head})")
            lo = ref.revision - 1 if since is None else since
            if lo > ref.revision:
                raise InvalidMemoryRequestError(f"since_revision {since} is after the target Revision {ref.revision}")
            rows = self._read_revision_range(tx, ref.artifact_id, lo + 1, ref.revision)
            heads = [k for _, c, _ in rows if mc.is_chunked(c) for k in mc.head_keys(c)]
            fetched = self._read_chunks(tx, heads) if heads else {}
            out = []
            for revision, stored, content_hash in rows:
                where = f"Revision {ref.artifact_id}@{revision}"
                if mc.is_chunked(stored):
                    changes = mc.read_changes(stored, lambda keys: {k: fetched[k] for k in keys if k in fetched}, where)
                else:
                    with stored_row(where):
                        content = MemoryContent.from_json(stored)
                    if content.canonical() != (stored, content_hash):
                        raise InvalidCitationError(f"Revision {ref.artifact_id}@{revision} does not match its content hash")
                    changes = content.changes
                out.append(MemoryRevisionChanges(ArtifactRef(ref.artifact_id, revision), changes))
            return tuple(out)

    # ---------------------------------------------------------------- migration

    def _migrate_inline_revisions(self, tx: Any) -> int:
        """Rows written before chunked storage hold the whole canonical text: store it
        as chunks and keep only the root in the row. A row that does not verify is left
        as it is (reads keep refusing it; migration must not launder an altered row)."""
        todo = self._inline_revision_keys(tx)
        layout = None
        previous = None
        for artifact_id, revision in todo:
            if artifact_id != previous:
                layout, previous = None, artifact_id
            row = self._read_revision(tx, artifact_id, revision)
            text, content_hash = row[0], row[1]
            try:
                content = MemoryContent.from_json(text)
            except (ValueError, KeyError, TypeError):
                continue
            encoded = mc.encode(content, layout, **self.chunk_sizes)
            if (encoded.text, encoded.content_hash) != (text, content_hash):
                continue
            self._insert_chunks(tx, dict(encoded.chunks))
            self._set_revision_content(tx, artifact_id, revision, encoded.root)
            layout = encoded.layout
        return len(todo)

