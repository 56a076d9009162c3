"""The per-scope composition (RFC 001 "Runtime composition").

``PowerContextRuntime`` owns process-level resources and caches one ``ScopedRuntime``
per scope. Its ``context`` is the actual composition root of that scope: the scoped
Sources, the Memory Artifact Family and the Source-window Trigger. The scope's state —
binding, journal, cursor — comes from the ``RuntimeScopeStorage`` of that scope, and
every mutation of its Memory runs under the scope's lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from .. import model
from ..canonical import mint_id
from ..errors import ArtifactNotFoundError, InvalidRuntimeRequestError, SourceConflictError, SourceNotFoundError
from ..model import MemoryRevision, Source
from .capture import ScopedSourceApplication
from .errors import InvalidSourcePayloadError
from .ids import reserved_artifact_id
from .memory import ScopedMemoryApplication
from .scopes import SOURCE_TYPE, validate_scope
from .sources import CapturedSource, CaptureReceipt, ContentSource, decode_evidence, decode_source
from .storage import JournalRecord, MemoryBinding
from .trigger import SourceWindowTrigger

if TYPE_CHECKING:
    from .runtime import PowerContextRuntime


@dataclass(frozen=True, slots=True)
class BuiltinArtifacts:
    memory: ScopedMemoryApplication


@dataclass(frozen=True, slots=True)
class BuiltinTriggers:
    source_window: SourceWindowTrigger


@dataclass(frozen=True, slots=True)
class PowerContext:
    """The composition root of one scope: ``sources``, ``artifacts.memory``,
    ``triggers.source_window``."""

    sources: ScopedSourceApplication
    artifacts: BuiltinArtifacts
    triggers: BuiltinTriggers


class ScopedRuntime:
    def __init__(self, runtime: "PowerContextRuntime", scope: str) -> None:
        self.runtime = runtime
        self.scope = validate_scope(scope)
        self.store = runtime.storage.open_scope(self.scope)
        self.lock = runtime._scope_locks(self.scope)
        self.context = PowerContext(
            sources=ScopedSourceApplication(self),
            artifacts=BuiltinArtifacts(memory=ScopedMemoryApplication(self)),
            triggers=BuiltinTriggers(source_window=runtime.trigger),
        )

    @property
    def service(self):
        return self.runtime.memory_service

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
        return tuple([await self.memory_source(await self.captured_for(v)) for v in values])
