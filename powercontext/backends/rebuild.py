"""Offline maintenance of the projections: ``rebuild`` (one Memory's head rows, full-text
rows, vectors and c̄ from its authoritative head), the analyzer migration, and c̄ from
scratch. Mixin of DatabaseMemoryBackend.

Each runs as ONE transaction (a crash leaves the old projection, never a mix), but no
statement in it grows with the Memory: rows are read, deleted, rewritten and inserted
one ``_in_lists`` slice at a time. A 100k-entry rebuild on OceanBase issued one DELETE
of every row of the Memory (FULLTEXT and HNSW upkeep included), which ran past the
server's 60 s ob_query_timeout; and c̄ from scratch read all 100k vectors into
Python at once (~1 GB of tuples). Both write only the rows whose derived value
changes: a rebuild or migration after nothing changed writes no head row.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

from .. import analyzer as analyzer_module
from ..errors import (
    CapabilityNotSupportedError,
    InvalidMemoryRequestError,
    MigrationOvertakenError,
    RevisionConflictError,
)
from ..model import ArtifactRef
from . import centroid


class _Rebuilt(NamedTuple):
    rows: int  # head rows of the Memory
    writes: int  # head rows rewritten, inserted or deleted
    sum_changed: bool  # c̄ rewritten
    complete: bool  # every head row holds a vector


class ProjectionRebuild:
    #: Head rows the last rebuild or analyzer migration of this handle wrote
    #: (rewritten, inserted or deleted): a diagnostic for benchmarks and tests.
    last_rebuild_writes: int | None = None

    async def rebuild(self, ref: ArtifactRef, vectors: Mapping[str, tuple[str, tuple[float, ...]]]) -> int:
        return await self._run(self._rebuild_sync, ref, vectors)

    def _rebuild_sync(self, ref: ArtifactRef, vectors) -> int:
        """Rebuild every projection of one Memory from its authoritative head: manifest
        membership and canonical hashes are re-validated; nothing else is trusted.

        Each head row is derived again (version, content hash, analyzer text, embedding
        hash and the vector as the database returns it) and compared with what is
        stored; only rows that differ are rewritten, stray rows deleted, missing ones
        inserted. A rebuild after nothing changed writes nothing: on OceanBase every
        written row costs its FULLTEXT and HNSW upkeep (a 100k-entry rebuild that
        deleted and re-inserted every row took 872 s)."""
        with self._transaction(write=True) as tx:
            self._check_stored_schema(tx)
            done = self._rebuild_rows(tx, ref, vectors, self.embedding_profile)
            changed = done.writes or done.sum_changed
            generation = self._bump_projection_generation(tx) if changed else self._projection_generation(tx)
        self.last_rebuild_writes = done.writes
        # Every head row now holds a vector validated against this profile's embedding
        # hash of its version (written here or found equal): the head is complete at
        # this generation, and the first search after the rebuild need not re-check it
        # (10k entries: 29 ms on SQLite, 116 ms on OceanBase). A row without a vector:
        # the search checks.
        self._record_completeness(ref, (generation,), done.complete)
        return done.rows

    def _rebuild_rows(self, tx: Any, ref: ArtifactRef, vectors, profile) -> "_Rebuilt":
        """Inside ``tx``: bring one Memory's head rows and c̄ to what its head and
        ``vectors`` (computed for ``profile``) derive, writing only what differs. The
        caller bumps the projection generation when anything was written."""
        # Held to the end (FOR UPDATE on OceanBase, whose plain reads lock nothing): a
        # commit to this Memory meanwhile would otherwise land between this read and the
        # rewrite, and the rewrite would delete its rows as strays of the older head.
        head = self._read_head(tx, ref.artifact_id, lock=True)
        if head != ref.revision:
            raise RevisionConflictError(f"{ref} is no longer the head (Revision {head}); rebuild the new head")
        revision = self._revision(tx, ref)
        active = revision.manifest.active
        versions = self._versions(tx, [i.entry_version_id for i in active])
        for item in active:
            self._check_version(versions.get(item.entry_version_id), ref, item)
        self._validate_vectors(vectors, {i.entry_version_id: i for i in active}, profile)
        wanted = {i.entry_id for i in active}
        stray = [entry_id for entry_id, *_ in self._read_projection(tx, ref.artifact_id) if entry_id not in wanted]
        sums = centroid.VectorSumDelta(profile.dimension) if self._vector_sums_kept() else None
        changed: list[tuple] = []  # (projection_id, entry_id, version_id, content_hash, text, vector)
        missing: list[tuple] = []  # (entry_id, version_id, content_hash, text, vector)
        for part in self._in_lists(active):
            stored = self._projection_rows(tx, ref.artifact_id, [i.entry_id for i in part])
            part_vectors = [vectors.get(i.entry_version_id) for i in part]
            given = [v[1] for v in part_vectors if v is not None]
            as_returned = self._returned_values(given) if given else ()
            returned = iter(as_returned)
            for item, vector in zip(part, part_vectors):
                values = None if vector is None else next(returned)
                row = (item.entry_version_id, item.entry_content_hash,
                       self.analyzer.searchable_text(versions[item.entry_version_id].text), vector)
                current = stored.get(item.entry_id)
                if current is None:
                    missing.append((item.entry_id, *row))
                elif not _same_row(current, row, values):
                    changed.append((current[0], item.entry_id, *row))
            if sums is not None and given:
                sums.add_many(as_returned)  # c̄ from scratch: the head's vectors as they will read back
        sum_differs = sums is not None and self._read_vector_sum(tx, ref.artifact_id) != (sums.count, sums.sums)
        for part in self._in_lists(stray):
            self._delete_projections(tx, ref.artifact_id, part)
        for part in self._in_lists(changed):
            self._replace_projections(tx, ref.artifact_id, ref.revision, part)
        for part in self._in_lists(missing):
            self._insert_projections(tx, ref.artifact_id, ref.revision, part)
        if sum_differs:
            self._write_vector_sum(tx, ref.artifact_id, sums.count, sums.sums)
        return _Rebuilt(len(active), len(stray) + len(changed) + len(missing), sum_differs,
                        all(i.entry_version_id in vectors for i in active))

    # ---------------------------------------------------------------- embedding migration

    def check_migration_target(self, profile) -> None:
        """Whether this database can move to ``profile`` (the service asks before it
        spends minutes embedding; the migration itself asks again)."""
        if self.embedding_profile is None:
            raise CapabilityNotSupportedError(
                "this database has no vector projection to migrate: open it with embedding=… to give it one")
        if profile.dimension != self.embedding_profile.dimension:
            raise InvalidMemoryRequestError(
                f"{profile.profile_id!r} has {profile.dimension} dimensions and this database's vectors "
                f"{self.embedding_profile.dimension}: a migration keeps the dimension; load the Memories into a "
                "new database opened with that model instead")

    async def migrate_embedding(self, profile, vectors: Mapping[ArtifactRef, Mapping[str, tuple[str, Any]]]
                                ) -> dict[str, int]:
        return await self._run(self._migrate_embedding_sync, profile, vectors)

    def _migrate_embedding_sync(self, profile, vectors) -> dict[str, int]:
        """Move the database to another embedding profile in ONE transaction: every
        head row of every Memory gets its vector from ``vectors`` (each head's active
        versions embedded as documents by the new model, outside the transaction), c̄
        is recomputed, and the schema records the new profile. A crash, a kill or a
        refusal leaves the old profile and the old vectors, never a mix; a handle
        opened before refuses to search or write afterwards (its query vectors would
        come from the old model). The vector column keeps its dimension: a profile
        of another dimension is refused (OceanBase's DDL commits on its own, so a
        column change could not be undone with the rows)."""
        self.check_migration_target(profile)
        rebuilt: dict[str, int] = {}
        written = 0
        with self._transaction(write=True) as tx:
            self._check_stored_schema(tx)
            # The profile record first, then every head, both held to the end: a commit
            # reads the profile only once it holds its head row (or, creating a Memory,
            # the profile record), so it either finished before these locks (and its
            # head differs from what was embedded: the caller catches up) or reads the
            # new profile after this commits and refuses. Never an old-model vector
            # among the new ones (issue 43).
            self._write_schema_value(tx, "embedding_profile", json.dumps(profile.to_canonical(), sort_keys=True))
            heads = {artifact_id: revision for artifact_id, revision in self._list_heads(tx, lock=True)}
            embedded = {ref.artifact_id: ref.revision for ref in vectors}
            if heads != embedded:
                moved = sorted(a for a in heads.keys() | embedded.keys() if heads.get(a) != embedded.get(a))
                raise MigrationOvertakenError(
                    f"Memory {moved[0]!r} moved on while its entries were embedded ({len(moved)} Memories moved)")
            for ref, given in vectors.items():
                done = self._rebuild_rows(tx, ref, given, profile)
                if not done.complete:
                    raise InvalidMemoryRequestError(f"{ref}: a migration needs a vector for every active entry")
                rebuilt[ref.artifact_id] = done.rows
                written += done.writes
            generation = self._bump_projection_generation(tx)  # other handles' caches of completeness and c̄ go
        self.embedding_profile = profile
        self.last_rebuild_writes = written
        for ref in vectors:
            self._record_completeness(ref, (generation,), True)
        return rebuilt

    # ---------------------------------------------------------------- analyzer migration

    async def migrate_analyzer(self, version: str) -> dict[str, int]:
        return await self._run(self._migrate_analyzer_sync, version)

    def _migrate_analyzer_sync(self, version: str) -> dict[str, int]:
        """The RFC's analyzer migration: in ONE transaction, re-analyze the text of
        every head row of every Memory with ``version``, rewrite the searchable_text
        and full-text row of each row whose text changes (a token the two analyzers
        agree on is not rewritten: on OceanBase each rewrite costs the row's FULLTEXT
        upkeep), and record the new analyzer. A crash leaves the old analyzer and the
        old projection; never a mix. Vectors do not depend on the analyzer and stay.
        Returns the head rows per Memory (each now analyzed by ``version``)."""
        target = analyzer_module.get(version)
        rebuilt: dict[str, int] = {}
        written = 0
        with self._transaction(write=True) as tx:
            self._check_stored_schema(tx)
            # The record first, then every head, both held to the end — the embedding
            # migration's order (above): a commit either finished before these locks and
            # its rows are read below, or reads the new analyzer after this commits and
            # refuses. Never a row analyzed by the old analyzer under the new record.
            self._write_schema_value(tx, "analyzer", target.version)
            self._list_heads(tx, lock=True)
            for part in self._in_lists(self._head_rows(tx)):  # one read per in-list, not one per row
                texts = self._versions(tx, [version_id for _, _, version_id, _ in part])
                for projection_id, artifact_id, version_id, stored in part:
                    searchable = target.searchable_text(texts[version_id].text)
                    if searchable != stored:
                        self._set_searchable_text(tx, projection_id, searchable)
                        written += 1
                    rebuilt[artifact_id] = rebuilt.get(artifact_id, 0) + 1
        self.analyzer = target
        self.last_rebuild_writes = written
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


def _same_row(current: Sequence[Any], wanted: tuple, returned: Any) -> bool:
    """Whether a stored head row (projection_rows' form) already holds the derived
    ``wanted`` (version_id, content_hash, searchable_text, vector) whose vector the
    database would return as ``returned``."""
    _, version_id, content_hash, text, embedding_hash, stored_values = current
    want_version, want_hash, want_text, vector = wanted
    if (version_id, content_hash, text) != (want_version, want_hash, want_text):
        return False
    if vector is None:
        return embedding_hash is None and stored_values is None
    return (embedding_hash == vector[0] and stored_values is not None
            and len(stored_values) == len(returned) and np.array_equal(stored_values, returned))
