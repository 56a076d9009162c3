"""The database-adapter SPI (RFC 000 "Code structure and abstraction boundaries").

``DatabaseMemoryBackend`` owns everything that must be the same on every database:
async-over-sync execution, the Unit of Work, verified reads of Revisions and entry
versions, citations, Sources, the commit sequence and projection maintenance order,
and offline rebuilds. Mixins hold the rest of the shared rules: ``validation``
(the in-transaction checks of a commit plan), ``retrieval`` (authoritative search
filtering and vector completeness) and ``rebuild`` (projection rebuilds, the analyzer
migration). A concrete adapter implements only the synchronous
primitives at the bottom of this file: transactions, CRUD, the head CAS, and its
search dialect (``portable.py`` holds the statements that are the same everywhere).
If two adapters need the same rule, it belongs here, not in an adapter.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

from .. import analyzer as analyzer_module, canonical
from ..errors import (
    ArtifactNotFoundError,
    InvalidCitationError,
    InvalidMemoryRequestError,
    MemoryEntryNotFoundError,
    RevisionConflictError,
    ServiceClosedError,
    SourceConflictError,
    SourceNotFoundError,
    shown,
)
from ..model import (
    MEMORY_FAMILY,
    ArtifactRef,
    ContentSource,
    EmbeddingProfile,
    MemoryCapabilities,
    MemoryEntryVersion,
    MemoryRevision,
    MemoryRevisionChanges,
    Source,
    source_payload,
)

from .plans import CommitPlan, Retrieval, RetrievalRequest  # noqa: F401  (re-exported)
from .retrieval import AuthoritativeRetrieval
from .rules import (  # noqa: F401  (re-exported)
    MAX_KIND_LENGTH,
    MAX_REASON_CODE_POINTS,
    MAX_TEXT_BYTES,
    artifact_refs_from_json,
    check_analyzer,
    cosine_from_l2,
    lineage_hash,
    normalize_reason,
    normalize_text,
    refs_to_json,
    source_fields,
    source_refs_from_json,
    stored_row,
    validate_kind,
    version_content_hash,
)
from . import centroid
from .resilience import DriverErrors
from .manifest_diff import diff as manifest_diff
from .projections import ProjectionUpkeep
from .maintenance import Maintenance
from .rebuild import ProjectionRebuild
from .revision_store import RevisionStore
from .version_rows import VersionRows
from .validation import CommitValidation
from .verification import MemoryVerification, VerifiedReads
from .schema_records import SchemaRecords

#: Statements that bind per-entry values bind at most this many (SQLite's variable
#: limit is 32,766; OceanBase statements must stay under max_allowed_packet).
IN_LIST_SIZE = 1000

# -------------------------------------------------------------------------- backend


class DatabaseMemoryBackend(DriverErrors, RevisionStore, ProjectionUpkeep, ProjectionRebuild, Maintenance, VersionRows, VerifiedReads, CommitValidation, AuthoritativeRetrieval, SchemaRecords, ABC):
    """Async MemoryBackend over synchronous adapter primitives."""

    name: str = "database"
    max_workers: int = 1
    in_list_size: int = IN_LIST_SIZE

    def __init__(self, embedding_profile: EmbeddingProfile | None = None, analyzer: str | None = None) -> None:
        self.embedding_profile = embedding_profile
        # The analyzer asked for; the adapter replaces it with the database's own at
        # open (schema_records: a new database records it, an existing one must match).
        self._requested_analyzer = analyzer
        self.analyzer = analyzer_module.get(analyzer)
        self._executor = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix=f"pc-{self.name}")
        self._closed = False
        self._completeness: dict[ArtifactRef, bool] = {}
        self._completeness_lock = threading.Lock()
        self._present: dict[tuple[ArtifactRef, int], bool] = {}
        # Verified Revisions (revision_store.py) and verified entry-version rows, each
        # keyed by the exact stored values: re-verifying costs far more than the query.
        self._init_revision_store()
        self._init_version_rows()
        self._init_verified_reads()
        self._init_retrieval()

    # ---------------------------------------------------------------- async facade

    def _check_open(self) -> None:
        if self._closed:
            raise ServiceClosedError(f"{self.name} backend is closed: open the database again")

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._check_open()
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, fn, args)

    async def capabilities(self) -> MemoryCapabilities:
        # What open() found (attribute reads): no statement, so no hop to the worker
        # thread, which costs a hybrid search more than its arithmetic on a busy machine.
        self._check_open()
        return self._capabilities_sync()

    async def head(self, artifact_id: str) -> int | None:
        return await self._run(self._head_sync, artifact_id)

    async def list_memories(self) -> tuple[ArtifactRef, ...]:
        return await self._run(self._list_memories_sync)

    async def load_revision(self, ref: ArtifactRef, check: str = "all") -> MemoryRevision:
        """A verified Revision. ``check="root"`` (commit bases) does not re-read the
        chunks of a cached Revision (see revision_store.py)."""
        return await self._run(self._load_revision_sync, ref, check)

    async def load_head(self, artifact_id: str, check: str = "all",
                        expected: int | None = None) -> tuple[int | None, MemoryRevision | None]:
        """A Memory's head and its verified Revision, read in one transaction: (None,
        None) when there is no such Memory. With ``expected`` (a write's base), the
        Revision is loaded only when the head is that one, else (head, None). One call
        where a head read and a Revision read were two hops and two transactions."""
        return await self._run(self._load_head_sync, artifact_id, check, expected)

    async def load_versions(self, ref: ArtifactRef, entry_ids: Sequence[str] | None = None) -> dict[str, MemoryEntryVersion]:
        """The versions the manifest of ``ref`` points at (all, or the given entries)."""
        return await self._run(self._load_manifest_versions_sync, ref, entry_ids)

    async def entry_history(self, artifact_id: str, entry_id: str) -> tuple[MemoryEntryVersion, ...]:
        return await self._run(self._entry_history_sync, artifact_id, entry_id)

    async def commit(self, plan: CommitPlan) -> MemoryRevision:
        return await self._run(self._commit_sync, plan)

    @contextlib.asynccontextmanager
    async def begin(self):
        """RFC shape: ``async with backend.begin() as uow: await uow.commit(plan)``."""
        yield MemoryUnitOfWork(self)

    async def changes(self, ref: ArtifactRef, since_revision: int | None) -> tuple[MemoryRevisionChanges, ...]:
        return await self._run(self._changes_sync, ref, since_revision)

    async def retrieve(self, request: RetrievalRequest) -> Retrieval:
        return await self._run(self._retrieve_sync, request)

    async def expand(self, citations: Sequence[Any]) -> tuple[MemoryEntryVersion, ...]:
        return await self._run(self._expand_sync, tuple(citations))

    async def persist_source(self, source: ContentSource) -> Source:
        return await self._run(self._persist_source_sync, source)

    async def get_source(self, name: str) -> Source:
        return await self._run(self._get_source_sync, name)

    async def verify_memory(self, artifact_id: str) -> MemoryVerification:
        return await self._run(self._verify_memory_sync, artifact_id)

    async def vector_complete(self, refs: Sequence[ArtifactRef]) -> bool:
        refs = tuple(refs)
        self._check_open()
        if self._capabilities_sync().vector:
            # Known for every head already: answer without a hop. This is the planning
            # check only; the search's own transaction re-confirms (retrieval.py).
            with self._completeness_lock:
                known = [self._completeness.get(r) for r in refs]
            if all(k is True for k in known):  # not-complete is re-read: a ref may no longer be the head
                return True
        return await self._run(self._vector_complete_sync, refs)

    async def close(self) -> None:
        if self._closed:
            return
        await self._run(self._close_sync)
        self._closed = True
        self._executor.shutdown(wait=True)

    # ---------------------------------------------------------------- reads

    def _capabilities_sync(self) -> MemoryCapabilities:
        vector = self.embedding_profile is not None and self._vector_supported_sync()
        return MemoryCapabilities(fts=True, vector=vector, hybrid=vector, embedding_profile=self.embedding_profile if vector else None)

    def _vector_supported_sync(self) -> bool:
        return False

    def _head_sync(self, artifact_id: str) -> int | None:
        with self._transaction(write=False) as tx:
            return self._read_head(tx, artifact_id)

    def _list_memories_sync(self) -> tuple[ArtifactRef, ...]:
        with self._transaction(write=False) as tx:
            return tuple(ArtifactRef(a, r) for a, r in sorted(self._list_heads(tx)))

    def _load_revision_sync(self, ref: ArtifactRef, check: str = "all") -> MemoryRevision:
        with self._transaction(write=False) as tx:
            return self._revision(tx, ref, check)

    def _load_head_sync(self, artifact_id: str, check: str,
                        expected: int | None) -> tuple[int | None, MemoryRevision | None]:
        with self._transaction(write=False) as tx:
            if expected is None:
                head = self._read_head(tx, artifact_id)
                if head is None:
                    return None, None
                return head, self._revision(tx, ArtifactRef(artifact_id, head), check)
            ref = ArtifactRef(artifact_id, expected)
            heads, rows = self._heads_and_revisions(tx, [ref])  # one statement for both
            head = heads.get(artifact_id)
            if head != expected:
                return head, None
            return head, self._cached_revision_of_row(tx, ref, rows[ref], check).revision

    def _load_manifest_versions_sync(self, ref: ArtifactRef, entry_ids: Sequence[str] | None) -> dict[str, MemoryEntryVersion]:
        with self._transaction(write=False) as tx:
            revision = self._revision(tx, ref, "all" if entry_ids is None else tuple(entry_ids))
            items = revision.manifest.by_id()
            wanted = list(items) if entry_ids is None else list(entry_ids)
            for entry_id in wanted:
                if entry_id not in items:
                    raise MemoryEntryNotFoundError(f"entry {entry_id!r} is not in the manifest of {ref}")
            rows: dict[str, tuple[Any, ...]] = {}
            hashed = self._hashed_versions(tx, [items[e].entry_version_id for e in wanted], rows=rows)
            out = {}
            for entry_id in wanted:
                version, actual = hashed.get(items[entry_id].entry_version_id, (None, None))
                self._check_version(version, ref, items[entry_id], actual)
                out[entry_id] = version
            # the older Revisions that created these versions (read next) must not push
            # this one out of the revision cache: it created some of them itself and is
            # read again to check those — at 20k entries it was verified twice (caches.py)
            with self.revision_cache.pinned((ref,)):
                self._verify_identities(tx, out.values(), hashed, rows)
            return out

    def _expand_sync(self, citations: tuple[Any, ...]) -> tuple[MemoryEntryVersion, ...]:
        with self._transaction(write=False) as tx:
            out = []
            for cite in citations:
                try:
                    ref, entry_id, version_id = cite.memory_ref, cite.entry_id, cite.entry_version_id
                except AttributeError:
                    raise InvalidCitationError(
                        f"{type(cite).__name__} is not a citation: it needs memory_ref, entry_id and entry_version_id"
                    ) from None
                if not isinstance(ref, ArtifactRef):
                    raise InvalidCitationError(f"memory_ref must be an ArtifactRef, got {shown(ref)}")
                try:  # re-checks the chunk holding this entry, not the whole manifest
                    revision = self._revision(tx, ref, (entry_id,))
                except ArtifactNotFoundError as exc:
                    raise InvalidCitationError(str(exc)) from exc
                item = revision.manifest.get(entry_id)
                if item is None:
                    raise InvalidCitationError(f"entry {entry_id!r} is not in the manifest of {ref}")
                if item.entry_version_id != version_id:
                    raise InvalidCitationError(
                        f"{ref} points entry {entry_id!r} at {item.entry_version_id!r}, not {version_id!r}"
                    )
                expected_hash = getattr(cite, "entry_content_hash", None)
                if expected_hash is not None and expected_hash != item.entry_content_hash:
                    raise InvalidCitationError(f"the citation's content hash differs from the manifest of {ref}")
                version = self._versions(tx, [version_id]).get(version_id)
                self._check_version(version, ref, item)
                out.append(version)
            with self.revision_cache.pinned(c.memory_ref for c in citations):  # as in _load_manifest_versions_sync
                self._verify_identities(tx, out)
            return tuple(out)

    # ---------------------------------------------------------------- sources

    def _persist_source_sync(self, source: ContentSource) -> Source:
        name, content, description, metadata = source_fields(source)
        payload = source_payload(name, content, description, metadata)
        try:
            payload_text = canonical.canonical_text(payload)
        except (TypeError, ValueError, RecursionError) as exc:
            raise InvalidMemoryRequestError(f"source {name!r} is not canonical JSON: {exc}"[:500]) from None
        content_hash = canonical.source_content_hash(payload)
        with self._transaction(write=True) as tx:
            existing = self._read_source(tx, name)
            if existing is not None:
                if existing[1] != content_hash:
                    raise SourceConflictError(
                        f"source {name!r} is already persisted with a different payload; Sources are immutable, "
                        "persist the new payload under a new name"
                    )
            else:
                self._insert_source(tx, name, content_hash, payload_text)
        return self._source_from_payload(payload_text, content_hash)

    def _get_source_sync(self, name: str) -> Source:
        with self._transaction(write=False) as tx:
            row = self._read_source(tx, name)
        if row is None:
            raise SourceNotFoundError(f"no persisted Source named {name!r}; persist it with svc.sources.persist()")
        return self._source_from_payload(row[0], row[1])

    # ---------------------------------------------------------------- commit

    def _commit_sync(self, plan: CommitPlan) -> MemoryRevision:
        """One transaction: validate the plan against the real base, insert the
        Revision, CAS the head, insert versions, maintain every projection."""
        if not canonical.is_valid_id(plan.artifact_id):
            raise InvalidMemoryRequestError(f"invalid Memory id {plan.artifact_id!r}")
        next_revision = plan.next_revision
        # Everything that needs only the plan happens before the write lock: SQLite
        # writers from other processes wait for exactly the SQL below, not for the
        # hashing and analyzing of a large batch.
        # A cached base that passed these checks in this process, and a manifest that
        # is that base changed at the recorded entries only (manifest_diff.py): then
        # the checks, the encoding and the projection upkeep visit the changed entries,
        # not the whole manifest. Anything else takes the full path.
        pre_base = None if plan.base_revision is None else self.revision_cache.get(
            ArtifactRef(plan.artifact_id, plan.base_revision))
        diff = None
        if pre_base is not None and pre_base.validated:
            diff = manifest_diff(pre_base.revision.manifest.entries, plan.content.manifest.entries,
                                 [c.entry_id for c in plan.content.changes], plan.content.manifest)
        # The canonical text is built from the cached base's groups where they are
        # unchanged: a one-entry commit encodes one group, not the whole manifest.
        encoded = self._encode_plan(plan, pre_base, diff)
        lineage_text = canonical.canonical_text(plan.lineage.to_canonical())
        self._check_plan(plan, diff)
        searchable = {v.entry_version_id: self.analyzer.searchable_text(v.text) for v in plan.new_versions}
        with self._transaction(write=True) as tx:
            base_ref = None if plan.base_revision is None else ArtifactRef(plan.artifact_id, plan.base_revision)
            if base_ref is None:
                head = self._read_head(tx, plan.artifact_id)
            else:  # the head and the base's row in one statement (a round trip on OceanBase)
                heads, base_rows = self._heads_and_revisions(tx, [base_ref])
                head = heads.get(plan.artifact_id)
            if plan.base_revision is None and head is not None:
                raise RevisionConflictError(f"Memory {plan.artifact_id!r} already exists (head {head})")
            if plan.base_revision is not None:
                if head is None:
                    raise ArtifactNotFoundError(f"no Memory {plan.artifact_id!r} in this database")
                if head != plan.base_revision:
                    raise RevisionConflictError(
                        f"Memory {plan.artifact_id!r} is at Revision {head}, not {plan.base_revision}: "
                        "reread the head and retry the operation"
                    )
            cached_base = None if base_ref is None else self._cached_revision_of_row(
                tx, base_ref, base_rows[base_ref], "root")
            base = None if cached_base is None else cached_base.revision
            if diff is not None and cached_base is not pre_base:
                # the cache moved on since (evicted, re-verified): check in full against
                # what this transaction read
                diff = None
                self._check_plan(plan)
            self._validate_plan(tx, plan, base, diff)

            try:
                row = self._store_revision(tx, plan, encoded, MEMORY_FAMILY, lineage_text, cached_base)
                if plan.base_revision is None:
                    self._insert_head(tx, plan.artifact_id, next_revision)
                elif self._cas_head(tx, plan.artifact_id, plan.base_revision, next_revision) != 1:
                    raise RevisionConflictError(f"Memory {plan.artifact_id!r} moved on during the commit; retry")
            except RevisionConflictError:
                raise
            except Exception as exc:
                if self._is_unique_violation(exc):
                    raise RevisionConflictError(
                        f"a concurrent writer committed Memory {plan.artifact_id!r} Revision {next_revision} first; retry"
                    ) from exc
                raise
            # Only now, holding the head row (a new Memory: locking the profile record),
            # can the records not move under this commit: see schema_records.py.
            self._check_stored_schema(tx, lock=plan.base_revision is None)
            if plan.new_versions:
                self._insert_versions(tx, [self._version_row(v) for v in plan.new_versions])
            rows_vectored = self._apply_projections(tx, plan, base, searchable, diff)
        ref = ArtifactRef(plan.artifact_id, next_revision)
        self._completeness_after_commit(
            None if plan.base_revision is None else ArtifactRef(plan.artifact_id, plan.base_revision), ref, rows_vectored)
        revision = MemoryRevision(ref=ref, content=plan.content, content_hash=encoded.content_hash, lineage=plan.lineage)
        # committed: the next commit's base and reads start from the cache, and its
        # manifest passed every check of a commit (what lets the next one use a diff);
        # the groups it canonicalized need not be again when an older Revision is read
        self._prove(encoded.fresh)
        self._remember_verified(ref, row, revision, encoded.layout, validated=True)
        return revision

    # ---------------------------------------------------------------- c̄ (vector sums)

    def _vector_sums_kept(self) -> bool:
        return self.embedding_profile is not None and self._vector_supported_sync()

    def _centroid(self, tx: Any, artifact_ids: Sequence[str]) -> tuple[float, ...] | None:
        """c̄ of the searched Memories: Σ sums / Σ counts of their active vectors."""
        return centroid.mean([self._read_vector_sum(tx, a) for a in artifact_ids], self.embedding_profile.dimension)


    # ---------------------------------------------------------------- adapter primitives

    @abstractmethod
    def _transaction(self, write: bool) -> contextlib.AbstractContextManager[Any]:
        """BEGIN IMMEDIATE / BEGIN …; commit on success, roll back on any exception."""

    @abstractmethod
    def _close_sync(self) -> None: ...

    @abstractmethod
    def _is_unique_violation(self, exc: BaseException) -> bool: ...

    @abstractmethod
    def _read_head(self, tx: Any, artifact_id: str, lock: bool = False) -> int | None: ...

    @abstractmethod
    def _heads_and_revisions(self, tx: Any, refs: Sequence[ArtifactRef]
                             ) -> tuple[dict[str, int], dict[ArtifactRef, tuple[Any, ...] | None]]:
        """The heads of these Memories and the rows of exactly these Revisions (None
        for a missing one), in one statement."""

    @abstractmethod
    def _list_heads(self, tx: Any, lock: bool = False) -> list[tuple[str, int]]: ...

    @abstractmethod
    def _read_revision(self, tx: Any, artifact_id: str, revision: int) -> tuple[str, str, str, str | None] | None:
        """(content, content_hash, lineage, lineage_hash) or None."""

    @abstractmethod
    def _read_revision_range(self, tx: Any, artifact_id: str, lo: int, hi: int) -> list[tuple[int, str, str]]:
        """(revision, content, content_hash) for lo ≤ revision ≤ hi, ascending."""

    @abstractmethod
    def _insert_revision(self, tx, artifact_id, revision, family, content, content_hash, lineage, lineage_hash) -> None: ...

    @abstractmethod
    def _insert_head(self, tx: Any, artifact_id: str, revision: int) -> None: ...

    @abstractmethod
    def _cas_head(self, tx: Any, artifact_id: str, base: int, next_revision: int) -> int:
        """UPDATE … WHERE revision = base; return the affected row count."""

    @abstractmethod
    def _read_versions(self, tx: Any, version_ids: list[str]) -> list[tuple[Any, ...]]:
        """Rows in _version_row column order."""

    @abstractmethod
    def _read_entry_versions(self, tx: Any, artifact_id: str, entry_id: str) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _existing_version_ids(self, tx: Any, version_ids: list[str]) -> set[str]: ...

    @abstractmethod
    def _insert_versions(self, tx: Any, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert these version rows (in _version_row column order), batched as the
        driver allows."""

    @abstractmethod
    def _insert_many(self, tx: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One ``INSERT … VALUES (?, …)`` for every row of ``rows``, sent as few
        statements as the database takes."""

    @abstractmethod
    def _read_source(self, tx: Any, name: str) -> tuple[str, str] | None:
        """(payload, content_hash) or None."""

    @abstractmethod
    def _insert_source(self, tx: Any, name: str, content_hash: str, payload: str) -> None: ...

    @abstractmethod
    def _projection_ids(self, tx: Any, artifact_id: str, entry_ids: Sequence[str]) -> dict[str, int]:
        """{entry_id: projection_id} of those entries' head rows (one in-list)."""

    @abstractmethod
    def _replace_projections(self, tx: Any, artifact_id: str, head_revision: int,
                             rows: Sequence[tuple[Any, ...]]) -> None:
        """Rewrite head rows that exist, each (projection_id, entry_id, version_id,
        content_hash, searchable_text, vector), with their FTS rows and vector
        projection (``vector`` = (embedding_content_hash, values) or None, in which case
        no vector — and no stale vector — may remain)."""

    @abstractmethod
    def _delete_projections(self, tx: Any, artifact_id: str, entry_ids: Sequence[str]) -> None:
        """Delete the head rows of these entries (one in-list) with their FTS and
        vector rows."""

    @abstractmethod
    def _insert_projections(self, tx: Any, artifact_id: str, head_revision: int, rows: Sequence[tuple[Any, ...]]) -> None:
        """Insert the head rows of entries that have none (one in-list), each
        (entry_id, version_id, content_hash, searchable_text, vector or None), with
        their FTS and vector rows, batched as the driver allows."""

    @abstractmethod
    def _set_projection_revision(self, tx: Any, artifact_id: str, revision: int) -> None: ...

    @abstractmethod
    def _read_schema_value(self, tx: Any, key: str) -> str | None: ...

    @abstractmethod
    def _write_schema_value(self, tx: Any, key: str, value: str) -> None:
        """Insert or replace one powercontext_schema row."""

    @abstractmethod
    def _head_rows(self, tx: Any) -> list[tuple[int, str, str, str | None]]:
        """(projection_id, memory_artifact_id, entry_version_id, searchable_text) of every
        head projection row; the text is None where the full-text index holds another."""

    @abstractmethod
    def _projection_rows(self, tx: Any, artifact_id: str, entry_ids: Sequence[str]) -> dict[str, tuple[Any, ...]]:
        """What a rebuild compares, for those entries' head rows (one in-list): {entry_id:
        (projection_id, entry_version_id, entry_content_hash, searchable_text,
        embedding_content_hash, vector)}, the vector as the database returns it (a
        numpy row) or None. The text is None where the full-text index holds another;
        the embedding hash None where no vector row belongs to this version."""

    @abstractmethod
    def _set_searchable_text(self, tx: Any, projection_id: int, searchable_text: str) -> None:
        """Rewrite one head row's searchable_text and its full-text index entry."""

    @abstractmethod
    def _projection_vectors(self, tx: Any, artifact_id: str, entry_ids: Sequence[str] | None) -> dict[str, tuple[float, ...]]:
        """The stored head vectors of these entries (all with None), by entry id;
        entries without a vector are absent."""

    @abstractmethod
    def _returned_values(self, vectors: Sequence[Sequence[float]]) -> Any:
        """(n, d) numpy array: the values this database returns for ``vectors`` once
        it has stored them (vector_values.py)."""

    @abstractmethod
    def _read_vector_sum(self, tx: Any, artifact_id: str) -> tuple[int, list[int]]:
        """(count, fixed-point sums) of the Memory's active vectors; (0, zeros) if none."""

    @abstractmethod
    def _write_vector_sum(self, tx: Any, artifact_id: str, count: int, sums: Sequence[int]) -> None: ...

    @abstractmethod
    def _fts_query(self, tx: Any, artifact_ids: list[str], terms: tuple[str, ...], k: int) -> list[tuple[Any, ...]]:
        """Top-k rows (memory_artifact_id, entry_id, entry_version_id,
        entry_content_hash, searchable_text) in the engine's relevance order."""


class MemoryUnitOfWork:
    """The RFC's Unit of Work: commit one plan atomically (or not at all)."""

    def __init__(self, backend: DatabaseMemoryBackend) -> None:
        self._backend = backend

    async def commit(self, plan: CommitPlan) -> MemoryRevision:
        return await self._backend.commit(plan)

    async def rollback(self) -> None:  # nothing is pending outside commit()
        return None


