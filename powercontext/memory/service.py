"""MemoryService: the public, async Memory API (RFC 000 "Writes and lifecycle",
"Search and reads").

The service validates arguments, turns a domain operation into a ``CommitPlan``
against the exact base Revision (outside any transaction: candidate generation and
embedding happen here), and hands the plan to the backend, which re-validates it
inside one transaction. Search is retrieve → admit → fuse; only retrieve touches the
database, so the evaluation harness can replay admission offline with the same code.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Iterable, Sequence

from .. import canonical
from ..backends.base import DatabaseMemoryBackend
from ..backends.plans import CommitPlan
from ..backends.rules import normalize_reason, normalize_text, validate_kind
from ..canonical import IdMinter, utf8_key
from ..embedding import embed_checked
from ..errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    InvalidMemoryRequestError,
    RevisionConflictError,
    shown,
)
from ..model import (
    ArtifactRef,
    ContentSource,
    MemoryCapabilities,
    MemoryChange,
    MemoryCitation,
    MemoryContent,
    MemoryEntryInput,
    MemoryEntryVersion,
    MemoryManifest,
    MemoryManifestEntry,
    MemoryRevision,
    MemoryRevisionChanges,
    RevisionLineage,
    Source,
    SourceRef,
    entry_content,
    sorted_refs,
)
from ..suggest import unknown_keyword
from . import arguments, context, migration, patching, vectors
from .arguments import as_ref
from .admission import AdmissionPolicy
from .candidates import DefaultCandidatePipeline
from .search_log import DEFAULT_CAP, SearchLog, check_cap
from .searching import MemorySearch
from .source_store import SourceStore

log = logging.getLogger(__name__)
REMEMBER_MODES = ("append", "extract", "auto")


class MemoryService(MemorySearch):
    def __init__(
        self,
        backend: DatabaseMemoryBackend,
        *,
        embedding: Any = None,
        pipeline: Any = "default",
        ids: IdMinter | None = None,
        policy: AdmissionPolicy | None = None,
        search_log: bool = False,
        search_log_cap: int = DEFAULT_CAP,
    ) -> None:
        """``search_log=True`` logs every search in the database (memory/search_log.py;
        off by default: questions can hold secrets), keeping the newest
        ``search_log_cap`` records."""
        self.check_options(pipeline=pipeline, ids=ids, policy=policy, search_log=search_log,
                           search_log_cap=search_log_cap)
        self.backend = backend
        self.embedding = embedding
        # The model-free DefaultCandidatePipeline serves mode="extract" unless the
        # caller configures another one, or None to refuse extraction.
        self.sources = SourceStore(backend)
        self.pipeline = DefaultCandidatePipeline(sources=self.sources) if pipeline == "default" else pipeline
        self.ids = ids or IdMinter()
        # each embedding model has its own default: thresholds tuned for one model's
        # cosines admit all or nothing under another's
        self.policy = policy or AdmissionPolicy.default_for(backend.embedding_profile)
        self._search_log = SearchLog(backend, search_log, search_log_cap)

    #: The keyword options a service takes (``pc.open`` passes them through).
    OPTIONS = ("pipeline", "ids", "policy", "search_log", "search_log_cap")

    @staticmethod
    def check_options(**options: Any) -> None:
        """Refuse service options this service does not take, or of the wrong kind
        (``pc.open`` calls it before it creates anything)."""
        for name in options:
            if name not in MemoryService.OPTIONS:
                raise InvalidMemoryRequestError(unknown_keyword("MemoryService()", name, MemoryService.OPTIONS))
        if not isinstance(options.get("search_log", False), bool):
            raise InvalidMemoryRequestError(f"search_log must be True or False, got {shown(options['search_log'])}")
        check_cap(options.get("search_log_cap", DEFAULT_CAP))
        pipeline, ids, policy = (options.get(k) for k in ("pipeline", "ids", "policy"))
        if pipeline not in (None, "default") and not inspect.iscoroutinefunction(getattr(pipeline, "extract", None)):
            raise InvalidMemoryRequestError(
                f"pipeline must be None, 'default' or have async extract(sources, artifacts, current), got {shown(pipeline)}"
            )
        if ids is not None and not all(callable(getattr(ids, m, None)) for m in ("artifact_id", "entry_id", "entry_version_id")):
            raise InvalidMemoryRequestError(f"ids must be an IdMinter (artifact_id, entry_id, entry_version_id), got {shown(ids)}")
        if policy is not None and not isinstance(policy, AdmissionPolicy):
            raise InvalidMemoryRequestError(f"policy must be an AdmissionPolicy or None, got {shown(policy)}")

    # ------------------------------------------------------------------ reads

    async def head(self, memory: Any) -> MemoryRevision:
        """The current head Revision of a Memory (given its id, a ref or a Revision).

        The Revision is verified against its content and lineage hashes. The head
        pointer itself is not covered by any hash (RFC 000: it is the CAS'd
        ``artifact_heads`` row); ``svc.verify`` checks that it names the last Revision."""
        artifact_id = arguments.text_id(memory, "memory") if isinstance(memory, str) else as_ref(memory).artifact_id
        head, revision = await self.backend.load_head(artifact_id)
        if head is None:
            raise ArtifactNotFoundError(f"no Memory {artifact_id!r} in this database")
        return revision

    async def revision(self, ref: ArtifactRef) -> MemoryRevision:
        return await self.backend.load_revision(as_ref(ref))

    async def memories(self) -> tuple[ArtifactRef, ...]:
        """Every Memory in this database, as its head ref."""
        return await self.backend.list_memories()

    async def entries(self, memory: Any, state: str = "active") -> tuple[MemoryEntryVersion, ...]:
        """The entry versions a Revision's manifest points at, sorted by entry_id."""
        if state not in ("active", "inactive", "all"):
            raise InvalidMemoryRequestError("state must be 'active', 'inactive' or 'all'")
        ref = as_ref(memory)
        revision = await self.backend.load_revision(ref, check="root")  # load_versions re-checks what it returns
        ids = [e.entry_id for e in revision.manifest.entries if state == "all" or e.state == state]
        versions = await self.backend.load_versions(ref, ids)
        return tuple(versions[i] for i in ids)

    async def entry(self, memory: Any, entry_id: str) -> MemoryEntryVersion:
        """The version of ``entry_id`` in a Revision's manifest."""
        ref = as_ref(memory)
        entry_id = arguments.text_id(entry_id, "entry_id")
        return (await self.backend.load_versions(ref, [entry_id]))[entry_id]

    async def lineage(self, memory: Any, entry_id: str) -> tuple[MemoryEntryVersion, ...]:
        """Every content version of one entry, oldest first, each verified against the
        Revision that created it (content hash in its manifest, the recorded change's
        predecessor, and a version number that counts up from 1)."""
        return await self.backend.entry_history(as_ref(memory).artifact_id, arguments.text_id(entry_id, "entry_id"))

    async def verify(self, memory: Any):
        """Check a whole Memory's history offline and list every mismatch (it does not
        stop at the first): each Revision's content and lineage hashes, every entry
        version's content against the manifests and its number, predecessor and
        creating Revision against the recorded changes, every cited Source and
        Artifact, and the search projection against the head. Returns a
        ``MemoryVerification`` (``.ok``, ``.issues``); raises only if the Memory does
        not exist."""
        artifact_id = arguments.text_id(memory, "memory") if isinstance(memory, str) else as_ref(memory).artifact_id
        return await self.backend.verify_memory(artifact_id)

    async def changes(self, memory: Any, since_revision: int | None = None) -> tuple[MemoryRevisionChanges, ...]:
        """Compact per-Revision changes in ascending order; ``since_revision`` is
        exclusive, 0 reads the whole history, None only the target Revision."""
        return await self.backend.changes(as_ref(memory), since_revision)

    async def capabilities(self) -> MemoryCapabilities:
        """What this service can do: the database's capabilities, with vector/hybrid
        only when an embedding model with the database's exact profile is configured."""
        db = await self.backend.capabilities()
        vector = db.vector and self.embedding is not None and self.embedding.profile == db.embedding_profile
        return MemoryCapabilities(fts=db.fts, vector=vector, hybrid=vector, embedding_profile=db.embedding_profile)

    @property
    def read_only(self) -> bool:  # an OceanBase GRANT SELECT account: writes raise ReadOnlyError
        return bool(getattr(self.backend, "read_only", False))

    # ------------------------------------------------------------------ writes

    async def _base(self, memory: Any) -> MemoryRevision:
        """A write's base: it must be the head (RevisionConflictError otherwise). The
        backend re-validates the plan against this base inside the commit; a cached
        base is not re-read chunk by chunk (revision_store.py)."""
        ref = as_ref(memory)
        head, base = await self.backend.load_head(ref.artifact_id, check="root", expected=ref.revision)
        if head is None:
            raise ArtifactNotFoundError(f"no Memory {ref.artifact_id!r} in this database")
        if base is None:
            raise RevisionConflictError(f"{ref} is not the head (Revision {head}); reread the head and retry")
        return base

    @staticmethod
    def _evidence(sources: Iterable[Any], artifacts: Iterable[Any]) -> tuple[tuple[SourceRef, ...], tuple[ArtifactRef, ...]]:
        source_refs = []
        for s in sources:
            if isinstance(s, ContentSource):
                raise InvalidMemoryRequestError(
                    f"source {s.name!r} is not persisted yet: pass the result of await svc.sources.persist(...)"
                )
            if not isinstance(s, Source):
                raise InvalidMemoryRequestError(f"evidence must be a persisted Source, got {type(s).__name__}")
            source_refs.append(s.ref)
        artifact_refs = []
        for a in artifacts:
            if isinstance(a, MemoryRevision):
                a = a.ref
            if not isinstance(a, ArtifactRef):
                raise InvalidMemoryRequestError(f"artifact evidence must be an exact ArtifactRef, got {type(a).__name__}")
            artifact_refs.append(a)
        return sorted_refs(source_refs), sorted_refs(artifact_refs)

    async def remember(
        self,
        memory: Any = None,
        sources: Sequence[Source] = (),
        artifacts: Sequence[Any] = (),
        entries: Sequence[MemoryEntryInput] = (),
        mode: str = "auto",
    ) -> MemoryRevision | None:
        """Write entries (append) or extract candidates from evidence (extract).

        Returns the new Revision; the current Revision when nothing changed; None when
        ``memory=None`` and nothing was worth saving."""
        if mode not in REMEMBER_MODES:
            raise InvalidMemoryRequestError(f"mode must be one of {REMEMBER_MODES}, got {shown(mode)}")
        entries = arguments.sequence(entries, "entries")
        sources = arguments.sequence(sources, "sources")
        artifacts = arguments.sequence(artifacts, "artifacts")
        op_sources, op_artifacts = self._evidence(sources, artifacts)
        if mode == "auto":
            if entries:
                mode = "append"
            elif op_sources or op_artifacts:
                mode = "extract"
            else:
                raise InvalidMemoryRequestError("remember() has nothing to do: give entries or evidence")
        if mode == "append" and not entries:
            raise InvalidMemoryRequestError("append needs at least one MemoryEntryInput")
        base = None if memory is None else await self._base(memory)
        if mode == "extract":
            if entries:
                raise InvalidMemoryRequestError("extract derives entries from evidence; do not pass entries too")
            if not (op_sources or op_artifacts):
                raise InvalidMemoryRequestError("extract needs at least one Source or Artifact")
            if self.pipeline is None:
                raise CapabilityNotSupportedError(
                    "no candidate pipeline is configured; pass entries with mode='append'"
                )
            current = () if base is None else await self.entries(base)
            entries = tuple(await self.pipeline.extract(sources, artifacts, current))
            if not entries:
                return base
        return await self._commit_entries(base, entries, op_sources, op_artifacts)

    async def _commit_entries(self, base, inputs, op_sources, op_artifacts) -> MemoryRevision | None:
        # The base manifest answers lookups by bisect and dedupe from views it keeps
        # (model.py): nothing here walks every entry of a large Memory.
        base_manifest = MemoryManifest() if base is None else base.manifest
        revised_ids = [i.entry.entry_id for i in inputs if isinstance(i, MemoryEntryInput) and i.entry is not None]
        predecessors = {} if base is None or not revised_ids else await self._predecessors(base, revised_ids)
        next_revision = 1 if base is None else base.revision + 1
        artifact_id = base.artifact_id if base is not None else self.ids.artifact_id()

        seen_entries: set[str] = set()
        new_hashes: set[str] = set()
        versions: list[MemoryEntryVersion] = []
        changes: dict[str, MemoryChange] = {}
        items: dict[str, MemoryManifestEntry] = {}  # the manifest items this commit changes
        for candidate in inputs:
            if not isinstance(candidate, MemoryEntryInput):
                raise InvalidMemoryRequestError(f"entries must be MemoryEntryInput, got {type(candidate).__name__}")
            kind = validate_kind(candidate.kind)
            text = normalize_text(candidate.text)
            reason = normalize_reason(candidate.reason)
            cand_sources, cand_artifacts = self._evidence(
                arguments.sequence(candidate.sources, "MemoryEntryInput.sources"),
                arguments.sequence(candidate.artifacts, "MemoryEntryInput.artifacts"),
            )
            if candidate.entry is None:
                content = entry_content(kind, text, cand_sources, cand_artifacts)
                content_hash = canonical.entry_content_hash(content)
                if content_hash in new_hashes or base_manifest.has_active_hash(content_hash):
                    continue  # exact duplicate: the first (or the existing) one stays
                new_hashes.add(content_hash)
                entry_id, previous, number = self.ids.entry_id(), None, 1
                sources_, artifacts_ = sorted_refs(cand_sources), sorted_refs(cand_artifacts)
            else:
                pred = self._check_revision_target(candidate.entry, base, seen_entries, predecessors)
                sources_ = sorted_refs(pred.sources + cand_sources)
                artifacts_ = sorted_refs(pred.artifacts + cand_artifacts)
                content = entry_content(kind, text, sources_, artifacts_)
                content_hash = canonical.entry_content_hash(content)
                if content_hash == pred.entry_content_hash:
                    continue  # identical content: no-op for this entry
                entry_id, previous, number = pred.entry_id, pred.entry_version_id, pred.version + 1
            version = MemoryEntryVersion(
                memory_artifact_id=artifact_id,
                entry_id=entry_id,
                entry_version_id=self.ids.entry_version_id(),
                version=number,
                previous_version_id=previous,
                kind=kind,
                text=text,
                sources=sources_,
                artifacts=artifacts_,
                entry_content_hash=content_hash,
                created_in_revision=next_revision,
            )
            versions.append(version)
            items[entry_id] = MemoryManifestEntry(entry_id, version.entry_version_id, content_hash, "active")
            changes[entry_id] = MemoryChange(
                "add" if previous is None else "revise", entry_id, previous, version.entry_version_id, reason
            )
        if not changes:
            return base
        return await self._commit(artifact_id, base, items, changes, versions, op_sources, op_artifacts)

    async def patch(
        self, memory: Any, entry: Any, old_string: str, new_string: str, reason: str | None = None,
        *, sources: Sequence[Source] = (), artifacts: Sequence[Any] = (),
    ) -> MemoryRevision:
        """Revise an active entry by replacing the one occurrence of ``old_string``
        through the ``remember`` path (rules and refusals: memory/patching.py)."""
        sources, artifacts = arguments.sequence(sources, "sources"), arguments.sequence(artifacts, "artifacts")
        base = await self._base(memory)
        current = await self.entry(base, patching.patch_target(base, entry))
        candidate = patching.patch_candidate(current, old_string, new_string, reason, sources, artifacts)
        op_sources, op_artifacts = self._evidence(sources, artifacts)
        return await self._commit_entries(base, (candidate,), op_sources, op_artifacts)

    async def _predecessors(self, base: MemoryRevision, entry_ids: list[str]) -> dict[str, MemoryEntryVersion]:
        known = [e for e in dict.fromkeys(entry_ids) if base.manifest.get(e) is not None]
        return await self.backend.load_versions(base.ref, known) if known else {}

    @staticmethod
    def _check_revision_target(entry: Any, base, seen: set[str], predecessors) -> MemoryEntryVersion:
        """A revision must name the exact current active version of an entry of this
        Memory, at most once per batch."""
        if not isinstance(entry, MemoryEntryVersion):
            raise InvalidMemoryRequestError("MemoryEntryInput.entry must be a MemoryEntryVersion or None")
        if base is None or entry.memory_artifact_id != base.artifact_id:
            raise InvalidMemoryRequestError(f"entry {entry.entry_id!r} belongs to another Memory")
        if entry.entry_id in seen:
            raise InvalidMemoryRequestError(f"entry {entry.entry_id!r} appears twice in one batch")
        seen.add(entry.entry_id)
        item = base.manifest.get(entry.entry_id)
        if item is None:
            raise InvalidMemoryRequestError(f"entry {entry.entry_id!r} is not in {base.ref}")
        if item.state != "active":
            raise InvalidMemoryRequestError(
                f"entry {entry.entry_id!r} is inactive in {base.ref}: reactivate() it first, then revise the new head"
            )
        pred = predecessors.get(entry.entry_id)
        if item.entry_version_id != entry.entry_version_id or pred is None or pred != entry:
            raise InvalidMemoryRequestError(
                f"entry {entry.entry_id!r} version {entry.entry_version_id!r} is stale: {base.ref} points at "
                f"{item.entry_version_id!r}; revise the current version"
            )
        return pred

    async def _commit(self, artifact_id, base, items, changes, versions, op_sources, op_artifacts) -> MemoryRevision:
        """``items``: the manifest items this commit changes or adds, by entry id; every
        other item of the base stays as it is (the same objects)."""
        content = MemoryContent(
            manifest=(MemoryManifest() if base is None else base.manifest).with_items(items.values()),
            changes=tuple(changes[k] for k in sorted(changes, key=utf8_key)),
        )
        plan = CommitPlan(
            artifact_id=artifact_id,
            base_revision=None if base is None else base.revision,
            content=content,
            lineage=RevisionLineage(sources=op_sources, artifacts=op_artifacts),
            new_versions=tuple(versions),
            vectors=await self._vectors_for(artifact_id, items, versions, base),
        )
        async with self.backend.begin() as uow:
            return await uow.commit(plan)

    async def _vectors_for(self, artifact_id, items, versions, base) -> dict:
        return await vectors.for_commit(self, items, versions, base)

    async def rebuild_projections(self, memories: Any = None, analyzer: str | None = None) -> dict[str, int]:
        """Offline maintenance: rebuild the FTS and vector projections of each Memory
        (default: all) from its authoritative head, re-validating manifest membership
        and hashes. Restores vector/hybrid search once every vector is back. Pause
        writes while it runs: a commit after it read a head and before its write
        transaction makes it raise RevisionConflictError (one during the transaction
        waits for it).

        ``analyzer="v2"`` is the analyzer migration instead: one transaction re-analyzes
        every head row of every Memory of the database, rewrites ``searchable_text`` and
        the full-text index, and records the new analyzer (vectors are untouched: they
        do not depend on it). A database has one analyzer, so ``memories`` must then be
        None. Returns the rows rebuilt per Memory.

        A handle opened with ``embedding=None`` on a database that keeps vectors may run
        the analyzer migration but not a rebuild: that would rewrite every head row
        without its vector (EmbeddingRequiredError, before anything is written)."""
        if analyzer is not None:
            if memories is not None:
                raise InvalidMemoryRequestError(
                    "an analyzer migration rebuilds every Memory of the database: call it without memories="
                )
            if not hasattr(self.backend, "migrate_analyzer"):
                raise CapabilityNotSupportedError(f"{type(self.backend).__name__} has no analyzer migration")
            return await self.backend.migrate_analyzer(analyzer)
        vectors.require_model(self, "rebuild the projections")
        if memories is None:
            refs = await self.backend.list_memories()
        else:
            one = isinstance(memories, (ArtifactRef, MemoryRevision))
            refs = tuple(as_ref(m) for m in ((memories,) if one else arguments.sequence(memories, "memories")))
            refs = tuple([ArtifactRef(r.artifact_id, (await self.head(r.artifact_id)).revision) for r in refs])
        rebuilt = {}
        for ref in refs:
            active = await self.entries(ref)
            given = {}
            if self.embedding is not None and self.backend.embedding_profile is not None and active:
                values = await embed_checked(self.embedding, [e.text for e in active], self.backend.embedding_profile,
                                             role="document")
                given = {
                    e.entry_version_id: (self.backend.expected_embedding_hash(e.entry_content_hash), v)
                    for e, v in zip(active, values)
                }
            rebuilt[ref.artifact_id] = await self.backend.rebuild(ref, given)
        return rebuilt

    async def migrate_embedding(self, embedding: Any, *, batch_size: int = 64, progress: bool = True):
        """Move the database to another embedding model of the same dimension (a
        bundled name, a model folder or an EmbeddingModel): re-embed every head row in
        batches, then rewrite the vectors and record the profile in one transaction
        (atomic, not resumable; see ``memory/migration.py``). Pause writes meanwhile;
        other handles must reopen. Returns an ``EmbeddingMigration``."""
        return await migration.migrate_embedding(self, embedding, batch_size, progress)

    async def maintain(self, timeout: float = 900.0, settle: float | None = None):
        """Upkeep after a bulk load, then wait until searches have settled: OceanBase
        compacts the server (a minor freeze, the dump, a major freeze; a fresh 10k
        load's searches got ~2× faster), SQLite merges its full-text index and
        checkpoints the WAL. Searches are timed before and after with probe rounds of
        the database's own statements, repeated until they stop getting faster for
        ``settle`` seconds (0: do not wait; None, the default: a window scaled to the
        database's size, 3 s for a few entries up to 60 s from 10k rows), within
        ``timeout`` seconds in all. Returns
        a ``MaintenanceReport``. Where the connected account may not compact the server,
        ``MaintenanceNotPermittedError`` is raised and nothing changes. Searches and
        writes stay correct throughout; they may be slower while the server compacts."""
        for name, value in (("timeout", timeout), ("settle", settle)):
            if name == "settle" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 86_400:
                raise InvalidMemoryRequestError(f"{name} must be a number of seconds in 0..86400, got {value!r}")
        if settle is not None and timeout < settle:
            raise InvalidMemoryRequestError(f"timeout ({timeout} s) must be at least settle ({settle} s)")
        return await self.backend.maintain(timeout, settle)

    async def _set_state(self, memory, entries, reason, target: str) -> MemoryRevision:
        base = await self._base(memory)
        reason = normalize_reason(reason)
        items: dict[str, MemoryManifestEntry] = {}  # the items this commit changes
        changes: dict[str, MemoryChange] = {}
        seen: set[str] = set()
        for entry in entries:
            if not isinstance(entry, MemoryEntryVersion):
                raise InvalidMemoryRequestError(
                    f"expected MemoryEntryVersion objects (from svc.entries() or svc.expand()), got {type(entry).__name__}"
                )
            if entry.memory_artifact_id != base.artifact_id:
                raise InvalidMemoryRequestError(f"entry {entry.entry_id!r} belongs to another Memory")
            if entry.entry_id in seen:
                raise InvalidMemoryRequestError(f"entry {entry.entry_id!r} appears twice")
            seen.add(entry.entry_id)
            item = base.manifest.get(entry.entry_id)
            if item is None:
                raise InvalidMemoryRequestError(f"entry {entry.entry_id!r} is not in {base.ref}")
            if item.entry_version_id != entry.entry_version_id or item.entry_content_hash != entry.entry_content_hash:
                raise InvalidMemoryRequestError(
                    f"entry {entry.entry_id!r} version {entry.entry_version_id!r} is stale: {base.ref} points at "
                    f"{item.entry_version_id!r}"
                )
            if item.state == target:
                continue  # idempotent
            items[entry.entry_id] = MemoryManifestEntry(item.entry_id, item.entry_version_id, item.entry_content_hash, target)
            if target == "inactive":
                changes[entry.entry_id] = MemoryChange("deactivate", item.entry_id, item.entry_version_id, None, reason)
            else:
                changes[entry.entry_id] = MemoryChange("reactivate", item.entry_id, None, item.entry_version_id, reason)
        if not changes:
            return base
        return await self._commit(base.artifact_id, base, items, changes, [], (), ())

    async def forget(self, memory: Any, entries: Sequence[MemoryEntryVersion], reason: str | None = None) -> MemoryRevision:
        """Mark entries inactive in a new Revision (no history is rewritten). Already
        inactive entries are a no-op; all no-ops return the base Revision."""
        return await self._set_state(memory, arguments.sequence(entries, "entries"), reason, "inactive")

    async def reactivate(self, memory: Any, entries: Sequence[MemoryEntryVersion], reason: str | None = None) -> MemoryRevision:
        """Mark inactive entries active again, restoring the same version and its
        search projection."""
        return await self._set_state(memory, arguments.sequence(entries, "entries"), reason, "active")

    async def organize(self, memory: Any, dedupe: bool = True, normalize: bool = True) -> MemoryRevision:
        """v1: exact dedupe (keep the smallest UTF-8 entry_id, deactivate the rest with
        reason 'dedupe'), then normalize references (revise with reason 'normalize')."""
        base = await self._base(memory)
        versions = await self.backend.load_versions(base.ref, [e.entry_id for e in base.manifest.active])
        items: dict[str, MemoryManifestEntry] = {}  # the items this commit changes
        changes: dict[str, MemoryChange] = {}
        new_versions: list[MemoryEntryVersion] = []
        deactivated: set[str] = set()
        if dedupe:
            by_content: dict[bytes, list[str]] = {}
            for entry_id, version in versions.items():
                by_content.setdefault(canonical.canonical_bytes(version.content()), []).append(entry_id)
            for group in by_content.values():
                for entry_id in sorted(group, key=utf8_key)[1:]:
                    item = base.manifest.get(entry_id)
                    items[entry_id] = MemoryManifestEntry(entry_id, item.entry_version_id, item.entry_content_hash, "inactive")
                    changes[entry_id] = MemoryChange("deactivate", entry_id, item.entry_version_id, None, "dedupe")
                    deactivated.add(entry_id)
        if normalize:
            for entry_id, v in versions.items():
                if entry_id in deactivated:
                    continue
                sources_, artifacts_ = sorted_refs(v.sources), sorted_refs(v.artifacts)
                if sources_ == v.sources and artifacts_ == v.artifacts:
                    continue
                content_hash = canonical.entry_content_hash(entry_content(v.kind, v.text, sources_, artifacts_))
                new = MemoryEntryVersion(
                    base.artifact_id, entry_id, self.ids.entry_version_id(), v.version + 1, v.entry_version_id,
                    v.kind, v.text, sources_, artifacts_, content_hash, base.revision + 1,
                )
                new_versions.append(new)
                items[entry_id] = MemoryManifestEntry(entry_id, new.entry_version_id, content_hash, "active")
                changes[entry_id] = MemoryChange("revise", entry_id, v.entry_version_id, new.entry_version_id, "normalize")
        if not changes:
            return base
        return await self._commit(base.artifact_id, base, items, changes, new_versions, (), ())

    # ------------------------------------------------------------------ citations

    async def expand(self, hits: Sequence[Any], layer: str = "full") -> tuple[MemoryEntryVersion, ...]:
        """Read the exact versions hits or citations point at, validating id, version,
        hash and canonical bytes against the cited Revision's manifest."""
        if layer != "full":
            raise InvalidMemoryRequestError("expand() supports layer='full' only")
        return await self.backend.expand(arguments.sequence(hits, "hits"))

    async def cite(self, memory_ref: Any, entry_id: str, entry_version_id: str) -> MemoryCitation:
        """A validated Handoff citation; it keeps validating after the Memory moves on."""
        ref = as_ref(memory_ref)
        entry_id = arguments.text_id(entry_id, "entry_id")
        entry_version_id = arguments.text_id(entry_version_id, "entry_version_id")
        probe = MemoryCitation(ref, entry_id, entry_version_id, None)  # type: ignore[arg-type]
        (version,) = await self.backend.expand((probe,))
        return MemoryCitation(ref, entry_id, entry_version_id, version.entry_content_hash)

    async def render_context(self, items: Any, budget_chars: int = context.DEFAULT_BUDGET_CHARS) -> context.AgentContext:
        """The text block an agent is given for these hits or citations: validated,
        framed as untrusted memory, within ``budget_chars`` (memory/context.py)."""
        return await context.render(self, items, budget_chars)

    async def close(self) -> None:
        await self._search_log.drain()  # the searches already answered are logged first
        await self.backend.close()

    async def __aenter__(self) -> "MemoryService":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
