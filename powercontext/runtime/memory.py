"""The scoped Memory application: ``runtime.memory.for_scope(scope)`` (RFC 001
"Explicit Memory writes", "Processing a Source window manually", "Failure semantics").

Two independent paths reach the scope's Memory. ``remember()`` writes what the caller
already knows through ``MemoryService.remember(mode="append")``: no Source is created
and no pipeline runs. ``flush()`` processes the next Source window: the pure
SourceWindowTrigger picks it, ``MemoryService.remember(mode="extract")`` runs the
candidate pipeline over its canonical Sources, and only after that commit (or a clean
no-op) does the cursor move. Everything that mutates the Memory holds the scope lock.

Exact entry operations check, in this order: the anchor names this scope's Memory
(``ArtifactNotFoundError``), its Revision is the head (``RevisionConflictError``), the
entry is in that manifest (``MemoryEntryNotFoundError``).
"""

from __future__ import annotations

import logging
from typing import Any, Iterable, Sequence

from ..errors import (
    ArtifactNotFoundError,
    InvalidRuntimeRequestError,
    MemoryEntryNotFoundError,
    RevisionConflictError,
    shown,
)
from ..model import ArtifactRef, MemoryEntryInput, MemoryEntryVersion, MemoryRevision, MemorySearchResult
from .errors import RuntimeStateError
from .requests import EntryAnchor, MemoryFlushResult, RememberMemoryRequest, as_anchor
from .scoped import ScopedRuntime
from .sources import CapturedSource
from .sql_storage import utc_now
from .trigger import ProcessSourceWindow, SourceCursor, SourceHighWatermark, window_limit

log = logging.getLogger(__name__)


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class ScopedMemoryApplication:
    def __init__(self, scoped: ScopedRuntime) -> None:
        self._scoped = scoped
        self.scope = scoped.scope

    def __repr__(self) -> str:
        return f"ScopedMemoryApplication({self.scope!r})"

    @property
    def _gate(self):
        return self._scoped.gate

    @property
    def _svc(self):
        return self._scoped.service

    # ------------------------------------------------------------------ reads

    async def head(self) -> MemoryRevision | None:
        """The scope's current Memory Revision, or None before its first write."""
        async with self._gate.admit():
            return await self._scoped.head()

    async def memory_id(self) -> str | None:
        """The bound Memory Artifact id (None while the scope has no binding)."""
        async with self._gate.admit():
            binding = await self._scoped.store.binding()
            return None if binding is None else binding.memory_artifact_id

    async def cursor(self) -> int:
        async with self._gate.admit():
            return await self._scoped.store.cursor(self._scoped.trigger.name)

    async def entries(self, state: str = "active") -> tuple[MemoryEntryVersion, ...]:
        async with self._gate.admit():
            head = await self._scoped.head()
            return () if head is None else await self._svc.entries(head, state)

    async def search(self, query: str, *, limit: int = 8, mode: str = "auto", policy: Any = None,
                     explain: bool = False) -> MemorySearchResult:
        """Search the scope's head (full-text without an embedding model). A scope with
        no Memory yet has no hits."""
        async with self._gate.admit():
            head = await self._scoped.head()
            if head is None:
                return MemorySearchResult(query=query, hits=(), mode="fts", requested_mode=mode, policy=policy,
                                          fallback_reason=f"scope {self.scope!r} has no Memory yet")
            return await self._svc.search(query, memories=(head,), limit=limit, mode=mode, policy=policy, explain=explain)

    async def changes(self, since_revision: int | None = None):
        """Compact per-Revision changes of the scope's Memory up to its head. A
        ``since_revision`` newer than the head is refused (InvalidRuntimeRequestError)."""
        async with self._gate.admit():
            head = await self._scoped.head()
            current = 0 if head is None else head.revision
            if since_revision is not None and (not isinstance(since_revision, int) or isinstance(since_revision, bool)
                                               or since_revision < 0):
                raise InvalidRuntimeRequestError(f"since_revision must be None or an integer ≥ 0, got {shown(since_revision)}")
            if since_revision is not None and since_revision > current:
                raise InvalidRuntimeRequestError(
                    f"since_revision {since_revision} is newer than the head of scope {self.scope!r} (Revision {current})"
                )
            return () if head is None else await self._svc.changes(head, since_revision)

    async def entry(self, anchor: Any) -> MemoryEntryVersion:
        """The entry version an anchor names, in the Revision it names (older Revisions
        of this scope's Memory are readable; another Memory is not)."""
        async with self._gate.admit():
            anchor = as_anchor(anchor)
            await self._own(anchor.memory_ref)
            return await self._svc.entry(anchor.memory_ref, anchor.entry_id)

    async def cite(self, anchor: Any, entry_version_id: str | None = None):
        """A validated citation of an entry version of this scope's Memory."""
        async with self._gate.admit():
            anchor = as_anchor(anchor)
            await self._own(anchor.memory_ref)
            version = entry_version_id or getattr(anchor, "entry_version_id", None)
            if version is None:
                version = (await self._svc.entry(anchor.memory_ref, anchor.entry_id)).entry_version_id
            return await self._svc.cite(anchor.memory_ref, anchor.entry_id, version)

    async def evidence(self, entry: MemoryEntryVersion | Any) -> tuple[CapturedSource, ...]:
        """The captured Sources (scope, sequence, canonical payload) that support an
        entry version: its lineage back into the journal."""
        async with self._gate.admit():
            if not isinstance(entry, MemoryEntryVersion):
                anchor = as_anchor(entry)
                await self._own(anchor.memory_ref)
                entry = await self._svc.entry(anchor.memory_ref, anchor.entry_id)
            else:
                await self._own(ArtifactRef(entry.memory_artifact_id, entry.created_in_revision))
            records = await self._scoped.store.by_memory_source_names([r.name for r in entry.sources])
            return tuple(self._scoped.captured(r) for r in records)

    async def _own(self, ref: ArtifactRef) -> MemoryRevision:
        """The head, after checking that ``ref`` names this scope's Memory."""
        binding = await self._scoped.store.binding()
        if binding is None or ref.artifact_id != binding.memory_artifact_id:
            raise ArtifactNotFoundError(f"{ref} is not the Memory of scope {self.scope!r}")
        head = await self._scoped.head(binding)
        if head is None or ref.revision > head.revision or ref.revision < 1:
            raise ArtifactNotFoundError(f"the Memory of scope {self.scope!r} has no Revision {ref.revision}")
        return head

    async def _exact(self, anchors: Iterable[Any]) -> tuple[MemoryRevision, list[MemoryEntryVersion]]:
        if not isinstance(anchors, (list, tuple)):
            raise InvalidRuntimeRequestError(f"anchors must be a list or tuple of entry anchors, got {shown(anchors)}")
        anchors = [as_anchor(a) for a in anchors]
        if not anchors:
            raise InvalidRuntimeRequestError("name at least one entry")
        head = None
        for anchor in anchors:
            head = await self._own(anchor.memory_ref)
            if anchor.memory_ref.revision != head.revision:
                raise RevisionConflictError(
                    f"{anchor.memory_ref} is stale: the Memory of scope {self.scope!r} is at {head.ref}; reread and retry"
                )
            if head.manifest.get(anchor.entry_id) is None:
                raise MemoryEntryNotFoundError(f"entry {anchor.entry_id!r} is not in the manifest of {head.ref}")
        return head, [await self._svc.entry(head, a.entry_id) for a in anchors]

    # ------------------------------------------------------------------ explicit writes

    async def remember(self, request: RememberMemoryRequest) -> MemoryRevision:
        """Append the request's entries to the scope's Memory (creating it with the
        bound id); returns the new Revision, or the head when nothing changed."""
        if not isinstance(request, RememberMemoryRequest):
            raise InvalidRuntimeRequestError(f"remember() takes a RememberMemoryRequest, got {type(request).__name__}")
        scoped = self._scoped
        async with self._gate.admit(), scoped.lock:
            binding = await scoped.bind()
            head = await scoped.head(binding)
            self._check_expected(request.expected_revision, binding.memory_artifact_id, head)
            entries = []
            for entry in request.entries:
                sources = await scoped.resolve_evidence(entry.sources)
                entries.append(MemoryEntryInput(entry.kind, entry.text, sources, entry.artifacts, entry.entry, entry.reason))
            op_sources = await scoped.resolve_evidence(request.sources)
            evidence = tuple({s.name: s for s in op_sources + tuple(s for e in entries for s in e.sources)}.values())
            return await scoped.remember(binding, head, sources=evidence, entries=tuple(entries), mode="append")

    def _check_expected(self, expected: Any, artifact_id: str, head: MemoryRevision | None) -> None:
        current = 0 if head is None else head.revision
        if isinstance(expected, ArtifactRef):
            if expected.artifact_id != artifact_id:
                raise ArtifactNotFoundError(f"{expected} is not the Memory of scope {self.scope!r}")
            expected = expected.revision
        if expected is not None and expected != current:
            raise RevisionConflictError(
                f"scope {self.scope!r} expected Revision {expected}, but its Memory is at Revision {current}; reread and retry"
            )

    async def revise(self, anchor: Any, text: str, *, kind: str | None = None, sources: Sequence[Any] = (),
                     reason: str | None = None) -> MemoryRevision:
        """A new version of one entry of the head, with captured Sources as evidence."""
        scoped = self._scoped
        async with self._gate.admit(), scoped.lock:
            head, (current,) = await self._exact((anchor,))
            evidence = await scoped.resolve_evidence(sources)
            candidate = MemoryEntryInput(kind or current.kind, text, evidence, entry=current, reason=reason)
            binding = await scoped.store.binding()
            return await scoped.remember(binding, head, sources=evidence, entries=(candidate,), mode="append")

    async def retire(self, anchors: Iterable[Any], *, reason: str | None = None) -> MemoryRevision:
        """Mark entries of the head inactive (``MemoryService.forget``)."""
        async with self._gate.admit(), self._scoped.lock:
            head, versions = await self._exact(anchors)
            return await self._svc.forget(head, versions, reason=reason)

    async def restore(self, anchors: Iterable[Any], *, reason: str | None = None) -> MemoryRevision:
        """Mark inactive entries of the head active again (``MemoryService.reactivate``)."""
        async with self._gate.admit(), self._scoped.lock:
            head, versions = await self._exact(anchors)
            return await self._svc.reactivate(head, versions, reason=reason)

    # ------------------------------------------------------------------ Source windows

    async def flush(self, limit: int | None = None) -> MemoryFlushResult:
        """Process the next Source window: through = min(high watermark, cursor + limit).

        Within the scope lock: read the cursor and high watermark, let the Trigger pick
        the window, decode its canonical Sources, log that the window is being committed
        on the current head, ``remember(mode="extract")``, and save the cursor only after
        that succeeded. A failure keeps the cursor (the next activation retries the same
        window). A replay after a crash between the commit and the cursor save finds the
        start log and the Revision the window committed on top of that head: it is a
        no-op whatever the user did since (retired, revised or restored entries stay as
        they are). Never raises for a failing window: the result says ``failed`` and why.
        A cursor that disagrees with the journal or the window log (a hand-edited row)
        is refused, not trusted: the result says ``failed`` and how to repair it."""
        scoped = self._scoped
        limit = window_limit(scoped.source_window_limit if limit is None else limit)
        store, trigger = scoped.store, scoped.trigger
        async with self._gate.admit(), scoped.lock:
            started = utc_now()
            high = await store.high_watermark()
            before = await store.cursor(trigger.name)
            result = dict(scope=self.scope, window=None, cursor_before=before, cursor=before, high_watermark=high)
            problem = await store.cursor_problem(trigger.name)
            if problem is not None:
                return MemoryFlushResult(status="failed", error=problem, errors=(RuntimeStateError(problem),), **result)
            window = trigger.activate(SourceHighWatermark(high, limit), SourceCursor(before)).action
            result["window"] = window
            if window is None:
                return MemoryFlushResult(status="idle", **result)
            if scoped.candidate_pipeline is None:
                reason = "extraction is unavailable: this Runtime has no candidate pipeline"
                await self._log_failure(window, "unavailable", reason, started)
                return MemoryFlushResult(status="unavailable", error=reason, **result)
            head = None
            try:
                binding = await scoped.bind()
                replay = await self._committed_before(before, high, binding.memory_artifact_id)
                if replay is not None:
                    window, captured, replayed = replay  # exactly the window that was committed
                    result["window"], revision = window, replayed
                else:
                    captured, sources = await self._window_sources(window)
                    head = await scoped.head(binding)
                    await store.start_window(trigger.name, window, binding.memory_artifact_id,
                                             0 if head is None else head.revision, started)
                    revision = await scoped.remember(binding, head, sources=sources, mode="extract")
            except Exception as exc:  # noqa: BLE001 - any failure keeps the cursor; the result says why
                log.warning("scope %r window %s failed: %s", self.scope, window, _reason(exc))
                await self._log_failure(window, "failed", _reason(exc), started)
                return MemoryFlushResult(status="failed", error=_reason(exc), errors=(exc,), **result)
            changed = replay is None and revision is not None and (head is None or revision.ref != head.ref)
            status = "committed" if changed else "no_change"
            if replay is not None:
                detail = f"{len(captured)} Sources, replayed: committed before as {revision.ref}"
            elif changed:
                detail = f"{len(captured)} Sources → {revision.ref}"
            else:
                detail = f"{len(captured)} Sources, no change" + (f" (Memory stays at {revision.ref})" if revision else "")
            try:
                cursor = await store.complete_window(
                    trigger.name, window, status, None if revision is None else revision.artifact_id,
                    None if revision is None else revision.revision, detail, started,
                )
            except Exception as exc:  # noqa: BLE001 - committed, not recorded: the next activation replays
                reason = f"the Memory committed but the cursor was not saved ({_reason(exc)}); the window will be replayed"
                log.warning("scope %r window %s: %s", self.scope, window, reason)
                await self._log_failure(window, "failed", reason, started)
                return MemoryFlushResult(status="failed", revision=revision, error=reason, errors=(exc,), **result)
            result["cursor"] = cursor
            return MemoryFlushResult(status=status, revision=revision, source_ids=tuple(c.source_id for c in captured),
                                     **result)

    async def _window_sources(self, window: ProcessSourceWindow) -> tuple[list[CapturedSource], tuple[Any, ...]]:
        """The window's captured Sources, decoded, and their Memory-layer evidence."""
        scoped = self._scoped
        captured = [scoped.captured(r) for r in await scoped.store.records(window.after, window.through)]
        if [c.sequence for c in captured] != list(range(window.after + 1, window.through + 1)):
            raise InvalidRuntimeRequestError(f"the journal of scope {self.scope!r} has a gap in window {window}")
        return captured, tuple([await scoped.memory_source(c) for c in captured])

    async def _committed_before(self, cursor: int, high: int, artifact_id: str):
        """(window, captured, Revision) when an interrupted attempt at the window that
        starts at ``cursor`` did commit, else None. Its start log names the head it
        committed on (N, 0 for none): the commit is Revision N + 1 of the bound Memory,
        if that Revision exists and its operation evidence is exactly that window's
        Sources (an explicit write in between has other evidence). Recognising it by
        its Revision, not by comparing entries, keeps the replay a no-op whatever the
        user did since: a retired entry stays retired, a revised one is not re-added."""
        scoped = self._scoped
        started = await scoped.store.started_window(scoped.trigger.name, cursor)
        if started is None or started.memory_artifact_id != artifact_id or not cursor < started.through <= high:
            return None
        try:
            revision = await self._svc.revision(ArtifactRef(artifact_id, (started.revision or 0) + 1))
        except ArtifactNotFoundError:
            return None
        window = ProcessSourceWindow(cursor, started.through)
        captured, sources = await self._window_sources(window)
        lineage = revision.lineage
        if lineage.artifacts or set(lineage.sources) != {s.ref for s in sources}:
            return None
        return window, captured, revision

    async def _log_failure(self, window, outcome: str, reason: str, started: str) -> None:
        try:
            await self._scoped.store.record_window(self._scoped.trigger.name, window, outcome, reason, started)
        except Exception as exc:  # noqa: BLE001 - the failure itself is what the caller must see
            log.warning("could not log the %s window %s of scope %r: %s", outcome, window, self.scope, exc)
