"""The database-adapter SPI (RFC 000 "Code structure and abstraction boundaries").

``DatabaseMemoryBackend`` owns everything that must be the same on every database:
async-over-sync execution, the Unit of Work, canonical validation of a commit plan,
manifest/entry/evidence checks, projection maintenance order, and the authoritative
filtering of search candidates. A concrete adapter implements only the synchronous
primitives at the bottom of this file: transactions, CRUD, the head CAS, and its
search dialect. If two adapters need the same rule, it belongs here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from .. import analyzer, canonical
from ..embedding import check_vector
from ..errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    InvalidCitationError,
    InvalidEmbeddingError,
    InvalidMemoryRequestError,
    MemoryEntryNotFoundError,
    RevisionConflictError,
    SourceConflictError,
    SourceNotFoundError,
)
from ..model import (
    MEMORY_FAMILY,
    MEMORY_SCHEMA,
    MANIFEST_FORMAT,
    ArtifactRef,
    ChannelCandidate,
    ContentSource,
    EmbeddingProfile,
    MemoryCapabilities,
    MemoryContent,
    MemoryEntryVersion,
    MemoryRevision,
    MemoryRevisionChanges,
    RevisionLineage,
    Source,
    SourceRef,
    sorted_refs,
    source_payload,
)

MAX_TEXT_BYTES = 8192
MAX_REASON_CODE_POINTS = 512
MAX_KIND_LENGTH = 64
SEARCH_HEAD_RETRIES = 3
REVISION_CACHE_SIZE = 256


# ------------------------------------------------------------------ plan and request


@dataclass(frozen=True)
class CommitPlan:
    """Everything one Memory commit writes, built by the service outside the
    transaction and re-validated by the backend inside it."""

    artifact_id: str
    base_revision: int | None  # None creates the Memory
    content: MemoryContent
    lineage: RevisionLineage
    new_versions: tuple[MemoryEntryVersion, ...] = ()
    # entry_version_id -> (embedding_content_hash, vector); absent = no vector written
    vectors: Mapping[str, tuple[str, tuple[float, ...]]] = field(default_factory=dict)

    @property
    def next_revision(self) -> int:
        return 1 if self.base_revision is None else self.base_revision + 1


@dataclass(frozen=True)
class RetrievalRequest:
    memories: tuple[ArtifactRef, ...]  # each must still be its Memory's head
    terms: tuple[str, ...]
    channels: tuple[str, ...]
    pool: int
    query_vector: tuple[float, ...] | None = None


@dataclass(frozen=True)
class Retrieval:
    """Per-channel candidates in backend order, with raw signals, already filtered
    through the authoritative head manifests. Admission has not run yet."""

    memories: tuple[ArtifactRef, ...]
    terms: tuple[str, ...]
    channels: Mapping[str, tuple[ChannelCandidate, ...]]


# ------------------------------------------------------------------ shared validators


def normalize_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidMemoryRequestError(f"entry text must be a string, not {type(text).__name__}")
    text = canonical.nfc(text).strip()
    if not text:
        raise InvalidMemoryRequestError("entry text is empty after normalization")
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InvalidMemoryRequestError(
            f"entry text is {size} UTF-8 bytes; the limit is {MAX_TEXT_BYTES}. Split it into entries of one topic each"
        )
    return text


def normalize_reason(reason: object) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InvalidMemoryRequestError("reason must be a string or None")
    reason = canonical.nfc(reason).strip()
    if not reason:
        return None
    if len(reason) > MAX_REASON_CODE_POINTS:
        raise InvalidMemoryRequestError(
            f"reason has {len(reason)} code points; the limit is {MAX_REASON_CODE_POINTS}"
        )
    return reason


def validate_kind(kind: object) -> str:
    if (
        not isinstance(kind, str)
        or not kind
        or len(kind) > MAX_KIND_LENGTH
        or not all(33 <= ord(c) <= 126 for c in kind)
    ):
        raise InvalidMemoryRequestError(
            f"kind must be a non-empty ASCII word of at most {MAX_KIND_LENGTH} characters "
            f"(fact, preference, decision, constraint, working_note …), got {kind!r}"
        )
    return kind


def version_content_hash(version: MemoryEntryVersion) -> str:
    return canonical.entry_content_hash(version.content())


def refs_to_json(refs) -> str:
    return canonical.canonical_text([r.to_canonical() for r in refs])


def source_refs_from_json(text: str) -> tuple[SourceRef, ...]:
    return tuple(SourceRef(name=r["name"], content_hash=r["content_hash"]) for r in json.loads(text))


def artifact_refs_from_json(text: str) -> tuple[ArtifactRef, ...]:
    return tuple(ArtifactRef(r["artifact_id"], r["revision"]) for r in json.loads(text))


def cosine_from_l2(distance: float) -> float:
    """Unit vectors: ‖a−b‖² = 2 − 2·cos, so cos = 1 − d²/2."""
    return 1.0 - (distance * distance) / 2.0


# -------------------------------------------------------------------------- backend


class DatabaseMemoryBackend(ABC):
    """Async MemoryBackend over synchronous adapter primitives."""

    name: str = "database"
    max_workers: int = 1

    def __init__(self, embedding_profile: EmbeddingProfile | None = None) -> None:
        self.embedding_profile = embedding_profile
        self._executor = ThreadPoolExecutor(max_workers=self.max_workers, thread_name_prefix=f"pc-{self.name}")
        self._closed = False
        self._completeness: dict[ArtifactRef, bool] = {}
        self._completeness_lock = threading.Lock()
        # Verified Revisions, keyed by ref and checked against the exact stored strings
        # on every read: re-verifying a large manifest costs far more than the query.
        self._revision_cache: dict[ArtifactRef, tuple[tuple[str, str, str], MemoryRevision]] = {}
        self._revision_cache_lock = threading.Lock()

    # ---------------------------------------------------------------- async facade

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._closed:
            raise RuntimeError(f"{self.name} backend is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, fn, *args)

    async def capabilities(self) -> MemoryCapabilities:
        return await self._run(self._capabilities_sync)

    async def head(self, artifact_id: str) -> int | None:
        return await self._run(self._head_sync, artifact_id)

    async def list_memories(self) -> tuple[ArtifactRef, ...]:
        return await self._run(self._list_memories_sync)

    async def load_revision(self, ref: ArtifactRef) -> MemoryRevision:
        return await self._run(self._load_revision_sync, ref)

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

    async def vector_complete(self, refs: Sequence[ArtifactRef]) -> bool:
        return await self._run(self._vector_complete_sync, tuple(refs))

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

    def _load_revision_sync(self, ref: ArtifactRef) -> MemoryRevision:
        with self._transaction(write=False) as tx:
            return self._revision(tx, ref)

    def _revision(self, tx: Any, ref: ArtifactRef) -> MemoryRevision:
        """Load a Revision and prove its stored bytes are canonical and hash to the
        stored content hash: corruption of a Revision row is never read as truth."""
        row = self._read_revision(tx, ref.artifact_id, ref.revision)
        if row is None:
            if self._read_head(tx, ref.artifact_id) is None:
                raise ArtifactNotFoundError(f"no Memory {ref.artifact_id!r} in this database")
            raise ArtifactNotFoundError(f"Memory {ref.artifact_id!r} has no Revision {ref.revision}")
        row = tuple(row)
        with self._revision_cache_lock:
            cached = self._revision_cache.get(ref)
        if cached is not None and cached[0] == row:
            return cached[1]  # the stored strings are exactly the ones verified before
        content_text, content_hash, lineage_text = row
        try:
            content = MemoryContent.from_json(content_text)
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidCitationError(f"Revision {ref} is not valid MemoryContent: {exc}") from exc
        if content.canonical() != (content_text, content_hash):
            raise InvalidCitationError(f"Revision {ref} does not match its content hash: the row was altered")
        revision = MemoryRevision(ref=ref, content=content, content_hash=content_hash, lineage=RevisionLineage.from_json(lineage_text))
        with self._revision_cache_lock:
            if len(self._revision_cache) >= REVISION_CACHE_SIZE:
                self._revision_cache.pop(next(iter(self._revision_cache)))
            self._revision_cache[ref] = (row, revision)
        return revision

    def _load_manifest_versions_sync(self, ref: ArtifactRef, entry_ids: Sequence[str] | None) -> dict[str, MemoryEntryVersion]:
        with self._transaction(write=False) as tx:
            revision = self._revision(tx, ref)
            items = revision.manifest.by_id()
            wanted = list(items) if entry_ids is None else list(entry_ids)
            for entry_id in wanted:
                if entry_id not in items:
                    raise MemoryEntryNotFoundError(f"entry {entry_id!r} is not in the manifest of {ref}")
            versions = self._versions(tx, [items[e].entry_version_id for e in wanted])
            out = {}
            for entry_id in wanted:
                version = versions.get(items[entry_id].entry_version_id)
                self._check_version(version, ref, items[entry_id])
                out[entry_id] = version
            return out

    def _entry_history_sync(self, artifact_id: str, entry_id: str) -> tuple[MemoryEntryVersion, ...]:
        with self._transaction(write=False) as tx:
            rows = self._read_entry_versions(tx, artifact_id, entry_id)
            return tuple(sorted((self._version_from_row(r) for r in rows), key=lambda v: v.version))

    def _versions(self, tx: Any, version_ids: Sequence[str]) -> dict[str, MemoryEntryVersion]:
        if not version_ids:
            return {}
        rows = self._read_versions(tx, list(dict.fromkeys(version_ids)))
        return {row[2]: self._version_from_row(row) for row in rows}

    @staticmethod
    def _version_from_row(row: Sequence[Any]) -> MemoryEntryVersion:
        (memory_id, entry_id, version_id, version, previous, kind, text, source_refs,
         artifact_refs, content_hash, created) = row
        return MemoryEntryVersion(
            memory_artifact_id=memory_id,
            entry_id=entry_id,
            entry_version_id=version_id,
            version=int(version),
            previous_version_id=previous,
            kind=kind,
            text=text,
            sources=source_refs_from_json(source_refs),
            artifacts=artifact_refs_from_json(artifact_refs),
            entry_content_hash=content_hash,
            created_in_revision=int(created),
        )

    @staticmethod
    def _version_row(v: MemoryEntryVersion) -> tuple[Any, ...]:
        return (
            v.memory_artifact_id, v.entry_id, v.entry_version_id, v.version, v.previous_version_id,
            v.kind, v.text, refs_to_json(v.sources), refs_to_json(v.artifacts),
            v.entry_content_hash, v.created_in_revision,
        )

    @staticmethod
    def _check_version(version: MemoryEntryVersion | None, ref: ArtifactRef, item) -> None:
        """A manifest item and the version row it points at must agree on identity and
        on the hash of the row's canonical bytes."""
        where = f"entry {item.entry_id!r} version {item.entry_version_id!r} of {ref}"
        if version is None:
            raise InvalidCitationError(f"{where}: the version row is missing")
        if version.memory_artifact_id != ref.artifact_id or version.entry_id != item.entry_id:
            raise InvalidCitationError(f"{where}: the version row belongs to another Memory or entry")
        actual = version_content_hash(version)
        if actual != item.entry_content_hash or version.entry_content_hash != item.entry_content_hash:
            raise InvalidCitationError(f"{where}: content does not hash to the manifest's entry_content_hash (altered row)")

    def _changes_sync(self, ref: ArtifactRef, since: int | None) -> tuple[MemoryRevisionChanges, ...]:
        if since is not None and (not isinstance(since, int) or isinstance(since, bool) or since < 0):
            raise InvalidMemoryRequestError(f"since_revision must be None or an integer ≥ 0, got {since!r}")
        with self._transaction(write=False) as tx:
            head = self._read_head(tx, ref.artifact_id)
            if head is None:
                raise ArtifactNotFoundError(f"no Memory {ref.artifact_id!r} in this database")
            if ref.revision < 1 or ref.revision > head:
                raise ArtifactNotFoundError(f"Memory {ref.artifact_id!r} has no Revision {ref.revision} (head is {head})")
            lo = ref.revision - 1 if since is None else since
            if lo > ref.revision:
                raise InvalidMemoryRequestError(
                    f"since_revision {since} is after the target Revision {ref.revision}"
                )
            rows = self._read_revision_range(tx, ref.artifact_id, lo + 1, ref.revision)
            out = []
            for revision, content_text, content_hash in rows:
                content = MemoryContent.from_json(content_text)
                if content.canonical() != (content_text, content_hash):
                    raise InvalidCitationError(f"Revision {ref.artifact_id}@{revision} does not match its content hash")
                out.append(MemoryRevisionChanges(ArtifactRef(ref.artifact_id, revision), content.changes))
            return tuple(out)

    def _expand_sync(self, citations: tuple[Any, ...]) -> tuple[MemoryEntryVersion, ...]:
        with self._transaction(write=False) as tx:
            out = []
            revisions: dict[ArtifactRef, MemoryRevision] = {}
            for cite in citations:
                try:
                    ref, entry_id, version_id = cite.memory_ref, cite.entry_id, cite.entry_version_id
                except AttributeError:
                    raise InvalidCitationError(
                        f"{type(cite).__name__} is not a citation: it needs memory_ref, entry_id and entry_version_id"
                    ) from None
                if not isinstance(ref, ArtifactRef):
                    raise InvalidCitationError(f"memory_ref must be an ArtifactRef, got {ref!r}")
                try:
                    revision = revisions.get(ref) or self._revision(tx, ref)
                except ArtifactNotFoundError as exc:
                    raise InvalidCitationError(str(exc)) from exc
                revisions[ref] = revision
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
            return tuple(out)

    # ---------------------------------------------------------------- sources

    def _persist_source_sync(self, source: ContentSource) -> Source:
        if not isinstance(source, ContentSource):
            raise InvalidMemoryRequestError("persist() takes a ContentSource(name, content, description=None, metadata={})")
        name = canonical.nfc(source.name) if isinstance(source.name, str) else source.name
        if not canonical.is_valid_id(name):
            raise InvalidMemoryRequestError(f"source name must be printable ASCII without spaces, ≤128 chars: {source.name!r}")
        if not isinstance(source.content, str):
            raise InvalidMemoryRequestError("source content must be a string")
        payload = source_payload(name, canonical.nfc(source.content), source.description, source.metadata)
        try:
            payload_text = canonical.canonical_text(payload)
        except (TypeError, ValueError) as exc:
            raise InvalidMemoryRequestError(f"source {name!r} is not canonical JSON: {exc}") from exc
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

    @staticmethod
    def _source_from_payload(payload_text: str, content_hash: str) -> Source:
        data = json.loads(payload_text)
        return Source(data["name"], data["content"], data["description"], data["metadata"], content_hash)

    # ---------------------------------------------------------------- commit

    def _commit_sync(self, plan: CommitPlan) -> MemoryRevision:
        """One transaction: validate the plan against the real base, insert the
        Revision, CAS the head, insert versions, maintain every projection."""
        if not canonical.is_valid_id(plan.artifact_id):
            raise InvalidMemoryRequestError(f"invalid Memory id {plan.artifact_id!r}")
        next_revision = plan.next_revision
        content_text, content_hash = plan.content.canonical()
        lineage_text = canonical.canonical_text(plan.lineage.to_canonical())
        with self._transaction(write=True) as tx:
            head = self._read_head(tx, plan.artifact_id)
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
            base = None if plan.base_revision is None else self._revision(tx, ArtifactRef(plan.artifact_id, plan.base_revision))
            self._validate_plan(tx, plan, base)

            try:
                self._insert_revision(tx, plan.artifact_id, next_revision, MEMORY_FAMILY, content_text, content_hash, lineage_text)
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
            for version in plan.new_versions:
                self._insert_version(tx, self._version_row(version))
            self._apply_projections(tx, plan, base)
        self._invalidate_completeness(plan.artifact_id)
        return MemoryRevision(
            ref=ArtifactRef(plan.artifact_id, next_revision),
            content=plan.content,
            content_hash=content_hash,
            lineage=plan.lineage,
        )

    def _validate_plan(self, tx: Any, plan: CommitPlan, base: MemoryRevision | None) -> None:
        content = plan.content
        if content.schema != MEMORY_SCHEMA or content.manifest.format != MANIFEST_FORMAT:
            raise InvalidMemoryRequestError("unknown MemoryContent schema or manifest format")
        items = content.manifest.entries
        ids = [i.entry_id for i in items]
        if ids != sorted(ids, key=canonical.utf8_key) or len(set(ids)) != len(ids):
            raise InvalidMemoryRequestError("manifest entries must be unique and sorted by UTF-8 entry_id")
        change_ids = [c.entry_id for c in content.changes]
        if change_ids != sorted(change_ids, key=canonical.utf8_key) or len(set(change_ids)) != len(change_ids):
            raise InvalidMemoryRequestError("a Revision records at most one change per entry, sorted by entry_id")
        if not content.changes:
            raise InvalidMemoryRequestError("a Revision must record at least one change (no empty Revisions)")
        for item in items:
            if not canonical.is_valid_id(item.entry_id) or not canonical.is_valid_id(item.entry_version_id):
                raise InvalidMemoryRequestError(f"invalid entry id or version id in manifest: {item.entry_id!r}")
            if item.state not in ("active", "inactive") or not canonical.is_sha256_hex(item.entry_content_hash):
                raise InvalidMemoryRequestError(f"invalid manifest item for {item.entry_id!r}")

        base_items = {} if base is None else base.manifest.by_id()
        new_items = content.manifest.by_id()
        missing = set(base_items) - set(new_items)
        if missing:
            raise InvalidMemoryRequestError(f"entries cannot leave a manifest (deactivate them instead): {sorted(missing)}")

        new_versions = {v.entry_version_id: v for v in plan.new_versions}
        if len(new_versions) != len(plan.new_versions):
            raise InvalidMemoryRequestError("duplicate entry_version_id in commit plan")
        clash = self._existing_version_ids(tx, list(new_versions))
        if clash:
            raise InvalidMemoryRequestError(f"entry_version_id already exists: {sorted(clash)}")

        # Evidence: resolve every operation Source and Artifact again, here.
        for ref in plan.lineage.sources:
            row = self._read_source(tx, ref.name)
            if row is None or row[1] != ref.content_hash:
                raise InvalidMemoryRequestError(
                    f"source {ref.name!r} is not persisted with that content hash; persist it with svc.sources.persist()"
                )
        for aref in plan.lineage.artifacts:
            if self._read_revision(tx, aref.artifact_id, aref.revision) is None:
                raise InvalidMemoryRequestError(f"artifact evidence {aref} does not exist")
        op_sources, op_artifacts = set(plan.lineage.sources), set(plan.lineage.artifacts)

        changes = {c.entry_id: c for c in content.changes}
        predecessors = self._versions(tx, [base_items[v.entry_id].entry_version_id for v in plan.new_versions if v.entry_id in base_items])
        for entry_id, item in new_items.items():
            old = base_items.get(entry_id)
            change = changes.get(entry_id)
            version = new_versions.get(item.entry_version_id)
            if old is None:
                expect = ("add", None, item.entry_version_id)
            elif old.entry_version_id != item.entry_version_id:
                expect = ("revise", old.entry_version_id, item.entry_version_id)
            elif old.state != item.state:
                expect = ("deactivate", old.entry_version_id, None) if item.state == "inactive" else ("reactivate", None, old.entry_version_id)
            elif old.entry_content_hash != item.entry_content_hash:
                raise InvalidMemoryRequestError(f"entry {entry_id!r} changed its hash without a new version")
            else:
                expect = None
            got = None if change is None else (change.op, change.from_entry_version_id, change.to_entry_version_id)
            if got != expect:
                raise InvalidMemoryRequestError(f"change for entry {entry_id!r} is {got}, the manifests imply {expect}")
            if change is not None:
                if normalize_reason(change.reason) != change.reason:
                    raise InvalidMemoryRequestError(f"reason of {entry_id!r} is not normalized or too long")
            if expect is not None and expect[0] in ("add", "revise"):
                if item.state != "active" or version is None:
                    raise InvalidMemoryRequestError(f"{expect[0]} of {entry_id!r} needs a new active version")
                pred = None if old is None else predecessors.get(old.entry_version_id)
                self._validate_new_version(version, plan, item, pred, op_sources, op_artifacts)
            elif version is not None:
                raise InvalidMemoryRequestError(f"version {version.entry_version_id!r} is not introduced by a change")
        unused = set(new_versions) - {i.entry_version_id for i in items}
        if unused:
            raise InvalidMemoryRequestError(f"new versions not referenced by the manifest: {sorted(unused)}")
        for entry_id in set(changes) - set(new_items):
            raise InvalidMemoryRequestError(f"change for {entry_id!r}, which is not in the manifest")
        self._validate_vectors(plan.vectors, {i.entry_version_id: i for i in content.manifest.active})

    def _validate_vectors(self, vectors: Mapping[str, tuple[str, tuple[float, ...]]], active: Mapping[str, Any]) -> None:
        """A vector may enter a projection only for an active head version, with the
        embedding hash of (this deployment's profile, that version's content hash) and
        values that pass the profile's checks."""
        if vectors and self.embedding_profile is None:
            raise CapabilityNotSupportedError("this database has no vector projection; vectors cannot be written")
        for version_id, (embedding_hash, values) in vectors.items():
            item = active.get(version_id)
            if item is None:
                raise InvalidMemoryRequestError(f"vector for {version_id!r}, which is not an active head version")
            if embedding_hash != self.expected_embedding_hash(item.entry_content_hash):
                raise InvalidEmbeddingError(
                    f"vector for {version_id!r} was computed for another profile or other content"
                )
            check_vector(values, self.embedding_profile)

    def expected_embedding_hash(self, entry_hash: str) -> str:
        return canonical.embedding_content_hash(self.embedding_profile.to_canonical(), entry_hash)

    def _validate_new_version(self, v, plan, item, pred, op_sources, op_artifacts) -> None:
        where = f"entry {v.entry_id!r}"
        if v.memory_artifact_id != plan.artifact_id or v.entry_id != item.entry_id:
            raise InvalidMemoryRequestError(f"{where}: version belongs to another Memory or entry")
        if not canonical.is_valid_id(v.entry_version_id):
            raise InvalidMemoryRequestError(f"{where}: invalid entry_version_id")
        if v.created_in_revision != plan.next_revision:
            raise InvalidMemoryRequestError(f"{where}: created_in_revision must be {plan.next_revision}")
        validate_kind(v.kind)
        if normalize_text(v.text) != v.text:
            raise InvalidMemoryRequestError(f"{where}: text is not NFC-normalized and stripped")
        if version_content_hash(v) != v.entry_content_hash or v.entry_content_hash != item.entry_content_hash:
            raise InvalidMemoryRequestError(f"{where}: entry_content_hash does not match the canonical content")
        if v.sources != sorted_refs(v.sources) or v.artifacts != sorted_refs(v.artifacts):
            raise InvalidMemoryRequestError(f"{where}: references must be sorted and unique")
        if pred is None:
            if v.version != 1 or v.previous_version_id is not None:
                raise InvalidMemoryRequestError(f"{where}: a new entry starts at version 1 with no predecessor")
            allowed_s, allowed_a = op_sources, op_artifacts
        else:
            if v.previous_version_id != pred.entry_version_id or v.version != pred.version + 1:
                raise InvalidMemoryRequestError(
                    f"{where}: a revision must follow the base manifest's current version directly"
                )
            if not set(pred.sources) <= set(v.sources) or not set(pred.artifacts) <= set(v.artifacts):
                raise InvalidMemoryRequestError(f"{where}: a revision keeps its predecessor's evidence")
            allowed_s, allowed_a = op_sources | set(pred.sources), op_artifacts | set(pred.artifacts)
        outside = [r.name for r in v.sources if r not in allowed_s] + [str(a) for a in v.artifacts if a not in allowed_a]
        if outside:
            raise InvalidMemoryRequestError(
                f"{where}: evidence {outside} is not part of this operation's evidence (or the predecessor's)"
            )

    def _apply_projections(self, tx: Any, plan: CommitPlan, base: MemoryRevision | None) -> None:
        """Make memory_entry_heads (and its FTS/vector projections) mirror the active
        entries of the new head. Inactive entries have no projection at all."""
        base_items = {} if base is None else base.manifest.by_id()
        new_versions = {v.entry_version_id: v for v in plan.new_versions}
        for item in plan.content.manifest.entries:
            old = base_items.get(item.entry_id)
            was_active = old is not None and old.state == "active"
            if item.state == "inactive":
                if was_active:
                    self._delete_projection(tx, plan.artifact_id, item.entry_id)
                continue
            if was_active and old.entry_version_id == item.entry_version_id:
                continue  # unchanged active entry: its projection stays
            version = new_versions.get(item.entry_version_id)
            if version is None:  # reactivation restores the same version
                version = self._versions(tx, [item.entry_version_id])[item.entry_version_id]
            vector = plan.vectors.get(item.entry_version_id)
            self._put_projection(
                tx,
                plan.artifact_id,
                plan.next_revision,
                item.entry_id,
                item.entry_version_id,
                item.entry_content_hash,
                analyzer.searchable_text(version.text),
                vector,
            )
        self._set_projection_revision(tx, plan.artifact_id, plan.next_revision)

    # ---------------------------------------------------------------- rebuild

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
            self._delete_all_projections(tx, ref.artifact_id)
            for item in active:
                self._put_projection(
                    tx, ref.artifact_id, ref.revision, item.entry_id, item.entry_version_id, item.entry_content_hash,
                    analyzer.searchable_text(versions[item.entry_version_id].text), vectors.get(item.entry_version_id),
                )
        self._invalidate_completeness(ref.artifact_id)
        return len(active)

    # ---------------------------------------------------------------- search

    def _retrieve_sync(self, request: RetrievalRequest) -> Retrieval:
        last_error: Exception | None = None
        for _ in range(SEARCH_HEAD_RETRIES):
            try:
                return self._retrieve_once(request)
            except _HeadMoved as exc:  # a concurrent commit between our reads
                last_error = exc
        raise RevisionConflictError(f"the selected Memory kept moving during the search: {last_error}")

    def _retrieve_once(self, request: RetrievalRequest) -> Retrieval:
        with self._transaction(write=False) as tx:
            heads = self._read_heads(tx, [r.artifact_id for r in request.memories])
            for ref in request.memories:
                head = heads.get(ref.artifact_id)
                if head is None:
                    raise ArtifactNotFoundError(f"no Memory {ref.artifact_id!r} in this database")
                if head != ref.revision:
                    raise RevisionConflictError(
                        f"{ref} is no longer the head (now Revision {head}); search the current head"
                    )
            manifests = {r.artifact_id: self._revision(tx, r).manifest.by_id() for r in request.memories}
            ids = [r.artifact_id for r in request.memories]
            raw: dict[str, list[tuple[Any, ...]]] = {}
            if "fts" in request.channels and request.terms:
                raw["fts"] = self._fts_query(tx, ids, request.terms, request.pool)
            elif "fts" in request.channels:
                raw["fts"] = []
            if "vector" in request.channels:
                if request.query_vector is None or self.embedding_profile is None:
                    raise CapabilityNotSupportedError("vector retrieval needs a vector projection and a query vector")
                check_vector(request.query_vector, self.embedding_profile)
                for ref in request.memories:  # reconfirmed in the query transaction
                    if not self._projection_complete(tx, ref.artifact_id):
                        raise CapabilityNotSupportedError(
                            f"the vector projection of {ref} is incomplete; run rebuild_projections()"
                        )
                raw["vector"] = self._vector_query(tx, ids, request.query_vector, request.pool)
            channels = {name: self._authoritative(tx, name, rows, manifests, request) for name, rows in raw.items()}
            # The head must not have moved while the channel queries ran (READ
            # COMMITTED databases see each statement's own snapshot).
            after = self._read_heads(tx, ids)
            if after != heads:
                raise _HeadMoved(f"heads {heads} became {after}")
        return Retrieval(memories=request.memories, terms=request.terms, channels=channels)

    def _authoritative(self, tx, channel, rows, manifests, request) -> tuple[ChannelCandidate, ...]:
        """Keep only rows that the authoritative head manifest confirms: same entry,
        active, exact version, and a version row whose canonical bytes hash to the
        manifest's hash. Candidate text comes from the version row, not the index."""
        refs = {r.artifact_id: r for r in request.memories}
        versions = self._versions(tx, [row[2] for row in rows])
        out: list[ChannelCandidate] = []
        query_terms = set(request.terms)
        for row in rows:
            memory_id, entry_id, version_id, content_hash, signal = row
            item = manifests.get(memory_id, {}).get(entry_id)
            version = versions.get(version_id)
            if (
                item is None
                or item.state != "active"
                or item.entry_version_id != version_id
                or item.entry_content_hash != content_hash
                or version is None
                or version.entry_id != entry_id
                or version.memory_artifact_id != memory_id
                or version_content_hash(version) != item.entry_content_hash
            ):
                continue
            common = dict(
                channel=channel,
                rank=len(out) + 1,
                memory_ref=refs[memory_id],
                entry_id=entry_id,
                entry_version_id=version_id,
                entry_content_hash=content_hash,
                kind=version.kind,
                text=version.text,
            )
            if channel == "fts":
                stored = set(signal.split())
                matched = tuple(t for t in request.terms if t in stored and t in query_terms)
                out.append(ChannelCandidate(**common, matched_terms=matched, query_term_count=len(request.terms)))
            else:
                out.append(ChannelCandidate(**common, cosine=cosine_from_l2(float(signal))))
        return tuple(out)

    # ---------------------------------------------------------------- vectors

    def _vector_complete_sync(self, refs: tuple[ArtifactRef, ...]) -> bool:
        """Is every selected Memory's vector projection complete? Cached per head
        Revision (a new head is a new key; commits here also invalidate)."""
        if not self._capabilities_sync().vector:
            return False
        missing = [r for r in refs if r not in self._completeness]
        if missing:
            with self._transaction(write=False) as tx:
                for ref in missing:
                    complete = self._read_head(tx, ref.artifact_id) == ref.revision and self._projection_complete(tx, ref.artifact_id)
                    with self._completeness_lock:
                        self._completeness[ref] = complete
        return all(self._completeness[r] for r in refs)

    def _projection_complete(self, tx: Any, artifact_id: str) -> bool:
        """Complete iff every head row has a vector whose embedding hash matches this
        profile and the row's content hash (RFC "Vector integrity")."""
        if self.embedding_profile is None or not self._vector_supported_sync():
            return False
        return all(
            has_vector and embedding_hash == self.expected_embedding_hash(content_hash)
            for content_hash, embedding_hash, has_vector in self._vector_rows(tx, artifact_id)
        )

    def _invalidate_completeness(self, artifact_id: str) -> None:
        with self._completeness_lock:
            for ref in [r for r in self._completeness if r.artifact_id == artifact_id]:
                del self._completeness[ref]

    def _vector_rows(self, tx: Any, artifact_id: str) -> list[tuple[str, str | None, bool]]:
        """(entry_content_hash, embedding_content_hash, has_vector) per head row."""
        raise CapabilityNotSupportedError(f"the {self.name} backend has no vector projection configured")

    def _vector_query(self, tx: Any, artifact_ids: list[str], vector: tuple[float, ...], k: int) -> list[tuple[Any, ...]]:
        raise CapabilityNotSupportedError(f"the {self.name} backend has no vector projection configured")

    # ---------------------------------------------------------------- adapter primitives

    @abstractmethod
    def _transaction(self, write: bool) -> contextlib.AbstractContextManager[Any]:
        """BEGIN IMMEDIATE / BEGIN …; commit on success, roll back on any exception."""

    @abstractmethod
    def _close_sync(self) -> None: ...

    @abstractmethod
    def _is_unique_violation(self, exc: BaseException) -> bool: ...

    @abstractmethod
    def _read_head(self, tx: Any, artifact_id: str) -> int | None: ...

    @abstractmethod
    def _read_heads(self, tx: Any, artifact_ids: Sequence[str]) -> dict[str, int]: ...

    @abstractmethod
    def _list_heads(self, tx: Any) -> list[tuple[str, int]]: ...

    @abstractmethod
    def _read_revision(self, tx: Any, artifact_id: str, revision: int) -> tuple[str, str, str] | None:
        """(content, content_hash, lineage) or None."""

    @abstractmethod
    def _read_revision_range(self, tx: Any, artifact_id: str, lo: int, hi: int) -> list[tuple[int, str, str]]:
        """(revision, content, content_hash) for lo ≤ revision ≤ hi, ascending."""

    @abstractmethod
    def _insert_revision(self, tx, artifact_id, revision, family, content, content_hash, lineage) -> None: ...

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
    def _insert_version(self, tx: Any, row: tuple[Any, ...]) -> None: ...

    @abstractmethod
    def _read_source(self, tx: Any, name: str) -> tuple[str, str] | None:
        """(payload, content_hash) or None."""

    @abstractmethod
    def _insert_source(self, tx: Any, name: str, content_hash: str, payload: str) -> None: ...

    @abstractmethod
    def _put_projection(self, tx, artifact_id, head_revision, entry_id, version_id, content_hash, searchable_text, vector) -> None:
        """Insert or replace the head row of one active entry, its FTS row, and its
        vector projection (``vector`` = (embedding_content_hash, values) or None, in
        which case no vector — and no stale vector — may remain)."""

    @abstractmethod
    def _delete_projection(self, tx: Any, artifact_id: str, entry_id: str) -> None: ...

    @abstractmethod
    def _delete_all_projections(self, tx: Any, artifact_id: str) -> None: ...

    @abstractmethod
    def _set_projection_revision(self, tx: Any, artifact_id: str, revision: int) -> None: ...

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


class _HeadMoved(Exception):
    pass

