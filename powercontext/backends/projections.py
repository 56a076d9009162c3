"""Projection upkeep of a commit: the head rows, full-text rows and vectors of the
entries a commit changes, and the Memory's vector sum (c̄) (RFC 000: every Memory
commit updates the full-text projection, and the vector projection when a model is
configured, in the same transaction). Mixin of DatabaseMemoryBackend."""

from __future__ import annotations

from typing import Any, Mapping

from ..model import MemoryRevision
from . import centroid
from .manifest_diff import ManifestDiff
from .plans import CommitPlan

VECTOR_SLICE = 4096  # vectors per numpy step of the vector-sum upkeep


class ProjectionUpkeep:
    def _apply_projections(self, tx: Any, plan: CommitPlan, base: MemoryRevision | None,
                           searchable: Mapping[str, str], diff: ManifestDiff | None = None) -> bool:
        """Make memory_entry_heads (and its FTS/vector projections) mirror the active
        entries of the new head. Inactive entries have no projection at all. Returns
        whether every row it wrote has a vector (each one checked by _validate_vectors).

        Only an item that differs from the base's can change a projection, so with the
        commit's ``diff`` (manifest_diff.py) the changed items are all that is visited;
        without one, every item is compared with the base's."""
        if diff is not None:
            pairs = [(p.new, p.old) for p in diff.placed]
        else:
            base_items = {} if base is None else base.manifest.by_id()
            pairs = [(item, base_items.get(item.entry_id)) for item in plan.content.manifest.entries]
        sums = self._vector_sums_kept()
        if sums:
            # The vectors that leave the head (forgotten or replaced entries), read
            # before their projection rows go: c̄'s sum loses exactly what they added.
            leaving = [
                item.entry_id for item, old in pairs
                if old is not None and old is not item and old.state == "active"
                and (item.state == "inactive" or old.entry_version_id != item.entry_version_id)
            ]
            delta = centroid.VectorSumDelta(self.embedding_profile.dimension)
            for values in (self._projection_vectors(tx, plan.artifact_id, leaving) if leaving else {}).values():
                delta.remove(values)
            entering: list[tuple[float, ...]] = []
        gone: list[str] = []  # entries whose projection goes
        put = []  # items whose projection is new or of another version
        for item, old in pairs:
            if old is item:
                continue  # the base's own item: its projection (or its absence) stays
            was_active = old is not None and old.state == "active"
            if item.state == "inactive":
                if was_active:
                    gone.append(item.entry_id)
                continue
            if was_active and old.entry_version_id == item.entry_version_id:
                continue  # unchanged active entry: its projection stays
            put.append(item)
        # A reactivation restores a version the commit did not write: its text is read.
        texts = dict(searchable)
        reread = [item.entry_version_id for item in put if item.entry_version_id not in texts]
        for version_id, version in (self._versions(tx, reread) if reread else {}).items():
            texts[version_id] = self.analyzer.searchable_text(version.text)
        every_row_vectored = True
        rows = []
        for item in put:
            vector = plan.vectors.get(item.entry_version_id)
            every_row_vectored = every_row_vectored and vector is not None
            if sums and vector is not None:
                entering.append(vector[1])
            rows.append((item.entry_id, item.entry_version_id, item.entry_content_hash, texts[item.entry_version_id],
                         vector))
        # In batches, one in-list at a time: on OceanBase every statement is a round
        # trip, and a 10k-entry remember() wrote its head rows one by one.
        for part in self._in_lists(gone):
            self._delete_projections(tx, plan.artifact_id, part)
        for part in self._in_lists(rows):
            self._put_projections(tx, plan.artifact_id, plan.next_revision, part, new_memory=base is None)
        if sums and entering:
            # Added as the database will return them, like the removals above read
            # them: a server that returns vectors in a rounded text form (OceanBase: 6
            # digits) then subtracts, later, exactly what it added here.
            # In slices: integer sums are order-free, and a 50k-row batch made ~150 MB
            # temporaries per numpy step, paid in page faults (issue 48).
            for i in range(0, len(entering), VECTOR_SLICE):
                delta.add_many(self._returned_values(entering[i:i + VECTOR_SLICE]))
        if sums and delta:
            count, total = self._read_vector_sum(tx, plan.artifact_id)
            self._write_vector_sum(tx, plan.artifact_id, *delta.applied_to(count, total))
        # head_revision is the Revision that last wrote each row: rewriting it on every
        # row of the Memory made each commit O(entries) in writes.
        return every_row_vectored

    def _put_projections(self, tx: Any, artifact_id: str, head_revision: int, rows: list[tuple[Any, ...]],
                         new_memory: bool = False) -> None:
        """Insert or replace the head rows of these active entries (one in-list), each
        (entry_id, version_id, content_hash, searchable_text, vector), with their FTS
        rows and vector projection. A row already there (a replaced version's, or a
        stray one) is rewritten in place; the others are inserted in one batch.

        A ``new_memory`` has no row to ask about: head rows are written only in the
        transaction that writes their Memory's head (and name its versions by foreign
        key), and this commit found none. On OceanBase the question cost a 100k-entry
        first load 10.1 s (100 in-lists)."""
        ids = {} if new_memory else self._projection_ids(tx, artifact_id, [row[0] for row in rows])
        replaced = [(ids[row[0]], *row) for row in rows if row[0] in ids]
        if replaced:
            self._replace_projections(tx, artifact_id, head_revision, replaced)
        fresh = [row for row in rows if row[0] not in ids]
        if fresh:
            self._insert_projections(tx, artifact_id, head_revision, fresh)
