"""What one scope's applications share (RFC 001 "Runtime composition").

``PowerContextRuntime`` owns process-level resources and hands each scope a
``ScopedRuntime``: the scope's ``RuntimeScopeStorage`` (binding, journal, cursor), the
MemoryService, the lifecycle gate, the scope's lock, the Trigger and the Runtime's
fixed settings. The scoped Sources and Memory applications (``capture.py``,
``memory.py``) are built on it by ``composition.py``; this module knows neither them
nor the Runtime, so the arrows point one way: runtime → composition → applications →
scoped. Every mutation of a scope's Memory runs under the scope's lock.
"""

from __future__ import annotations

import asyncio
from typing import Any, Iterable, Mapping

from .. import canonical, model
from ..canonical import mint_id
from ..errors import ArtifactNotFoundError, InvalidRuntimeRequestError, SourceConflictError, SourceNotFoundError, shown
from ..model import MemoryRevision, Source
from .errors import InvalidSourcePayloadError
from .ids import reserved_artifact_id
from .lifecycle import LifecycleGate
from .scopes import SOURCE_TYPE, validate_scope
from .sources import CapturedSource, CaptureReceipt, ContentSource, decode_evidence, decode_source
from .storage import JournalRecord, MemoryBinding, RuntimeScopeStorage
from .trigger import SourceWindowTrigger


class ScopedRuntime:
    """One scope's state and the Runtime resources its applications use."""

    def __init__(self, scope: str, *, store: RuntimeScopeStorage, service: Any, gate: LifecycleGate,
                 lock: asyncio.Lock, trigger: SourceWindowTrigger, candidate_pipeline: Any,
                 source_window_limit: int) -> None:
        self.scope = validate_scope(scope)
        self.store = store
        self.service = service
        self.gate = gate
        self.lock = lock
        self.trigger = trigger
        self.candidate_pipeline = candidate_pipeline
        self.source_window_limit = source_window_limit

    # ------------------------------------------------------------------ Memory identity

    async def bind(self) -> MemoryBinding:
        """The scope's binding, reserving a new globally unique Memory id if needed."""
        return await self.store.bind(mint_id("mem_art_"))

    async def head(self, binding: MemoryBinding | None = None) -> MemoryRevision | None:
        binding = binding or await self.store.binding()
        if binding is None:
            return None
        try:
            return await self.service.head(binding.memory_artifact_id)
        except ArtifactNotFoundError:
            return None  # bound, but Revision 1 does not exist yet

    async def remember(self, binding: MemoryBinding, head: MemoryRevision | None, **kwargs: Any) -> MemoryRevision | None:
        """``MemoryService.remember`` on the scope's head; the first Revision takes the
        bound id. Any other id coming back would break the binding: refuse it loudly."""
        with reserved_artifact_id(binding.memory_artifact_id):
            revision = await self.service.remember(head, **kwargs)
        if revision is not None and revision.artifact_id != binding.memory_artifact_id:
            raise InvalidRuntimeRequestError(
                f"the MemoryService created {revision.artifact_id!r}, not the bound {binding.memory_artifact_id!r}: "
                "build the Runtime with PowerContextRuntime.open() or assemble()"
            )
        return revision

    # ------------------------------------------------------------------ Sources

    def captured(self, record: JournalRecord) -> CapturedSource:
        """Decode a journal record through the pydantic boundary (hash-checked)."""
        source = decode_source(record.payload, record.payload_hash)
        if source.name != record.source_id:
            raise InvalidSourcePayloadError(
                f"journal record {record.sequence} of scope {self.scope!r} names {record.source_id!r} but holds {source.name!r}"
            )
        return CapturedSource(record.scope, record.sequence, source, record.memory_source_name, record.captured_at)

    async def memory_source(self, captured: CapturedSource) -> Source:
        """The captured Source as Memory evidence (persisting is idempotent, and refuses
        a Memory-layer row that no longer matches the journal)."""
        src = captured.source
        return await self.service.sources.persist(
            model.ContentSource(captured.memory_source_name, src.content, src.description, dict(src.metadata))
        )

    async def refuse_orphan_copy(self, name: str, source: ContentSource) -> None:
        """Before journaling a new Source: a Memory-layer Source under its name with
        another payload is the copy of a capture that was interrupted before its journal
        record existed (written by versions that persisted the copy first). It cannot
        be replaced (Sources are immutable), so the capture is refused, with nothing
        written and the way out named."""
        try:
            existing = await self.service.sources.get(name)
        except SourceNotFoundError:
            return
        expected = canonical.source_content_hash(
            model.source_payload(name, source.content, source.description, dict(source.metadata)))
        if existing.content_hash != expected:
            raise SourceConflictError(
                f"scope {self.scope!r} has no captured Source {source.name!r}, but an interrupted earlier capture "
                f"left Memory-layer evidence {name!r} with another payload; nothing was written: capture this "
                "payload under a new source_id"
            )

    async def find(self, source_id: str) -> CapturedSource:
        record = await self.store.get(SOURCE_TYPE, source_id)
        if record is None:
            raise SourceNotFoundError(f"scope {self.scope!r} has no captured Source {source_id!r}")
        return self.captured(record)

    async def captured_for(self, value: Any) -> CapturedSource:
        """The captured Source a receipt, a CapturedSource, a ContentSource (its payload
        must equal the captured one) or an evidence reference names. Only Sources
        captured in this scope resolve: nothing uncaptured can be injected as evidence."""
        if isinstance(value, (CaptureReceipt, CapturedSource)):
            scope, source_id, expected = value.scope, value.source.name, value.source.payload_hash
        elif isinstance(value, ContentSource):
            scope, source_id, expected = self.scope, value.name, value.payload_hash
        elif isinstance(value, (str, bytes, Mapping)):
            (scope, source_id), expected = decode_evidence(value), None
        else:
            raise InvalidRuntimeRequestError(
                "Runtime evidence is a CaptureReceipt, a captured ContentSource or an evidence reference "
                f"{{'scope', 'source_type', 'source_id'}}; got {type(value).__name__}. Capture the material first"
            )
        if scope != self.scope:
            raise InvalidRuntimeRequestError(
                f"Source {source_id!r} belongs to scope {scope!r}, not {self.scope!r}: scopes do not share evidence"
            )
        captured = await self.find(source_id)
        if expected is not None and captured.source.payload_hash != expected:
            raise SourceConflictError(f"Source {source_id!r} differs from what scope {self.scope!r} captured")
        return captured

    async def resolve_evidence(self, values: Iterable[Any]) -> tuple[Source, ...]:
        """Memory evidence (persisted Memory-layer Sources) for captured Sources."""
        if not isinstance(values, (list, tuple)):
            raise InvalidRuntimeRequestError(f"sources must be a list or tuple of captured Sources, got {shown(values)}")
        return tuple([await self.memory_source(await self.captured_for(v)) for v in values])
