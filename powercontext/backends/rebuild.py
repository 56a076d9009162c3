"""Offline maintenance of the projections: ``rebuild`` (one Memory's head rows, full-text
rows, vectors and c̄ from its authoritative head), the analyzer migration, and c̄ from
scratch. Mixin of DatabaseMemoryBackend.

Each runs as ONE transaction (a crash leaves the old projection, never a mix), but no
statement in it grows with the Memory: rows are deleted, inserted and read back one
``_in_lists`` slice at a time. A 100k-entry rebuild on OceanBase issued one DELETE of
every row of the Memory (FULLTEXT and HNSW upkeep included), which ran past the
server's 60 s ob_query_timeout; and c̄ from scratch read all 100k vectors into
Python at once (~1 GB of tuples).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from .. import analyzer as analyzer_module
from ..errors import RevisionConflictError
from ..model import ArtifactRef
from . import centroid


class ProjectionRebuild:
    async def rebuild(self, ref: ArtifactRef, vectors: Mapping[str, tuple[str, tuple[float, ...]]]) -> int:
        return await self._run(self._rebuild_sync, ref, vectors)

    def _rebuild_sync(self, ref: ArtifactRef, vectors) -> int:
        """Rebuild every projection of one Memory from its authoritative head: manifest
        membership and canonical hashes are re-validated; nothing else is trusted."""
        with self._transaction(write=True) as tx:
            head = self._read_head(tx, ref.artifact_id)
            if head != ref.revision:
                raise RevisionConflictError(f"{ref} is no longer the head (Revision {head}); rebuild the new head")
            revision = self._revision(tx, ref)
            active = revision.manifest.active
            versions = self._versions(tx, [i.entry_version_id for i in active])
            for item in active:
                self._check_version(versions.get(item.entry_version_id), ref, item)
            self._validate_vectors(vectors, {i.entry_version_id: i for i in active})
            self._check_stored_analyzer(tx)
            generation = self._bump_projection_generation(tx)  # searches elsewhere re-check completeness
            # whatever rows the projection has now, stray ones included
            for part in self._in_lists([row[0] for row in self._read_projection(tx, ref.artifact_id)]):
                self._delete_projections(tx, ref.artifact_id, part)
            # every row was just deleted: insert, never the update-or-insert of a commit
            for part in self._in_lists(active):
                self._insert_projections(tx, ref.artifact_id, ref.revision, [
                    (item.entry_id, item.entry_version_id, item.entry_content_hash,
                     self.analyzer.searchable_text(versions[item.entry_version_id].text),
                     vectors.get(item.entry_version_id))
                    for item in part])
            if self._vector_sums_kept():
                self._write_vector_sum(tx, ref.artifact_id,
                                       *self._sum_from_scratch(tx, ref.artifact_id, [i.entry_id for i in active]))
        # Every head row written here with a vector validated against this profile's
        # embedding hash of its version: the head is complete at the new generation, and
        # the first search after the rebuild need not re-check it (10k entries: 29 ms on
        # SQLite, 116 ms on OceanBase). A row left without a vector: the search checks.
        self._record_completeness(ref, (generation,), all(i.entry_version_id in vectors for i in active))
        return len(active)

    # ---------------------------------------------------------------- analyzer migration

    async def migrate_analyzer(self, version: str) -> dict[str, int]:
        return await self._run(self._migrate_analyzer_sync, version)

    def _migrate_analyzer_sync(self, version: str) -> dict[str, int]:
        """The RFC's analyzer migration: in ONE transaction, re-analyze the text of
        every head row of every Memory with ``version``, rewrite its searchable_text
        and full-text row, and record the new analyzer. A crash leaves the old
        analyzer and the old projection; never a mix. Vectors do not depend on the
        analyzer and stay."""
        target = analyzer_module.get(version)
        rebuilt: dict[str, int] = {}
        with self._transaction(write=True) as tx:
            self._check_stored_analyzer(tx)
            for part in self._in_lists(self._head_rows(tx)):  # one read per in-list, not one per row
                texts = self._versions(tx, [version_id for _, _, version_id in part])
                for projection_id, artifact_id, version_id in part:
                    text = texts[version_id].text
                    self._set_searchable_text(tx, projection_id, target.searchable_text(text))
                    rebuilt[artifact_id] = rebuilt.get(artifact_id, 0) + 1
            self._write_schema_value(tx, "analyzer", target.version)
        self.analyzer = target
        return rebuilt

    # ---------------------------------------------------------------- c̄ from scratch

    def _backfill_vector_sums(self, tx: Any) -> int:
        """Databases created before c̄ was kept: sum each Memory's stored head vectors
        once (the migration the 'vector_sums' schema record marks as done)."""
        done = 0
        if self._vector_sums_kept():
            for artifact_id, _ in self._list_heads(tx):
                self._write_vector_sum(tx, artifact_id, *self._sum_from_scratch(tx, artifact_id))
                done += 1
        self._write_schema_value(tx, "vector_sums", "1")
        self._bump_projection_generation(tx)  # searches cache c̄ per head and generation
        return done

    def _sum_from_scratch(self, tx: Any, artifact_id: str, entry_ids: Sequence[str] | None = None) -> tuple[int, list[int]]:
        """(count, sums) of the stored vectors of ``entry_ids`` (None: of every head
        row), read one in-list at a time and added up as they come."""
        if entry_ids is None:
            entry_ids = [row[0] for row in self._read_projection(tx, artifact_id)]
        delta = centroid.VectorSumDelta(self.embedding_profile.dimension)
        for part in self._in_lists(list(entry_ids)):
            for values in self._projection_vectors(tx, artifact_id, part).values():
                delta.add(values)
        return delta.count, delta.sums
