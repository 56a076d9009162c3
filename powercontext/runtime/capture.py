"""The scoped Source application: ``runtime.sources.for_scope(scope)`` (RFC 001
"Capturing a Source").

``capture()`` does only this: resolve the ContentCapture, allocate the scope's next
journal sequence for it, persist the ContentSource as Memory-layer evidence, return the
canonical Source and its sequence. It never calls the candidate pipeline and never
writes Memory. (The RFC lists persisting before allocating; the journal row is the
persisted Source here, and the Memory-layer copy follows it so that no kill can leave
a copy without its record.)
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import InvalidRuntimeRequestError, SourceConflictError, shown
from .scoped import ScopedRuntime
from .scopes import SOURCE_TYPE, memory_source_name
from .sources import CapturedSource, CaptureReceipt, ContentCapture, ContentSourceAdapter, encode_source
from .trigger import position

MAX_JOURNAL_LIMIT = 100_000


class ScopedSourceApplication:
    adapter = ContentSourceAdapter()

    def __init__(self, scoped: ScopedRuntime) -> None:
        self._scoped = scoped
        self.scope = scoped.scope

    def __repr__(self) -> str:
        return f"ScopedSourceApplication({self.scope!r})"

    async def capture(self, value: ContentCapture) -> CaptureReceipt:
        """Journal a Source. The same canonical payload again is idempotent (same
        sequence, ``created=False``); the same source_id with another payload raises
        SourceConflictError and writes nothing."""
        scoped = self._scoped
        async with scoped.gate.admit():
            source = self.adapter.resolve(value)
            existing = await scoped.store.get(SOURCE_TYPE, source.name)
            if existing is not None:
                if existing.payload_hash != source.payload_hash:
                    raise SourceConflictError(
                        f"scope {self.scope!r} already holds Source {source.name!r} with a different payload "
                        f"(journal sequence {existing.sequence}); Sources are immutable: capture the new payload "
                        "under a new source_id"
                    )
                # an earlier capture of this payload may have stopped before its Memory-layer copy
                captured = scoped.captured(existing)
                await scoped.memory_source(captured)
                return CaptureReceipt(self.scope, captured.source, existing.sequence, False)
            binding = await scoped.bind()
            name = memory_source_name(binding.memory_artifact_id, source.name)
            await scoped.refuse_orphan_copy(name, source)
            # The journal is the record of what was captured; the Memory-layer Source is
            # its copy for citations. Journal first: a capture killed in between leaves a
            # record that get() shows, a retry with the same payload acknowledges and
            # flush() persists (idempotently). The other order left a Memory-layer Source
            # with no journal record that blocked every later capture of that source_id.
            record, created = await scoped.store.append(SOURCE_TYPE, source.name, name, encode_source(source),
                                                        source.payload_hash)
            await scoped.memory_source(scoped.captured(record))
            return CaptureReceipt(self.scope, source, record.sequence, created)

    async def get(self, source_id: str) -> CapturedSource:
        """A captured Source by its source_id (SourceNotFoundError if none)."""
        async with self._scoped.gate.admit():
            return await self._scoped.find(source_id)

    async def journal(self, after: int = 0, limit: int = 100) -> tuple[CapturedSource, ...]:
        """Captured Sources with sequence > ``after``, ascending, at most ``limit``
        (1..MAX_JOURNAL_LIMIT)."""
        after = position(after, "after")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_JOURNAL_LIMIT:
            raise InvalidRuntimeRequestError(f"limit must be an integer in 1..{MAX_JOURNAL_LIMIT}, got {shown(limit)}")
        async with self._scoped.gate.admit():
            records = await self._scoped.store.records(after, after + limit)
            return tuple(self._scoped.captured(r) for r in records)

    async def resolve_evidence(self, reference: str | bytes | Mapping[str, Any]) -> CapturedSource:
        """The canonical captured Source an evidence reference names (JSON text or a
        mapping ``{"scope", "source_type": "content", "source_id"}``, strictly
        validated). A reference to something never captured here raises."""
        async with self._scoped.gate.admit():
            return await self._scoped.captured_for(reference)
