"""Value objects of the scoped Memory application: requests, anchors, results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRuntimeRequestError, shown
from ..model import ArtifactRef, MemoryEntryInput, MemoryRevision
from .trigger import ProcessSourceWindow

FLUSH_STATUSES = ("idle", "committed", "no_change", "unavailable", "failed")


@dataclass(frozen=True, slots=True)
class RememberMemoryRequest:
    """An explicit Memory write: ``entries`` go to ``MemoryService.remember(mode=
    "append")`` as they are; no Source is created and no pipeline runs.

    ``expected_revision``: None writes on whatever the head is; ``0`` expects the scope
    to have no Revision yet; ``N`` or an ``ArtifactRef``/``MemoryRevision`` expects
    exactly that head (``RevisionConflictError`` otherwise). ``sources`` are extra
    operation evidence: captured Sources of this scope (receipts, ``ContentSource`` or
    evidence references), like the ``sources`` of each entry."""

    entries: tuple[MemoryEntryInput, ...]
    expected_revision: int | ArtifactRef | MemoryRevision | None = None
    sources: tuple[Any, ...] = ()

    def __post_init__(self) -> None:
        entries = self.entries
        if isinstance(entries, MemoryEntryInput):
            entries = (entries,)
        if not isinstance(entries, (tuple, list)) or not entries:
            raise InvalidRuntimeRequestError("RememberMemoryRequest needs at least one MemoryEntryInput in entries=(…)")
        for entry in entries:
            if not isinstance(entry, MemoryEntryInput):
                raise InvalidRuntimeRequestError(f"entries must be MemoryEntryInput objects, got {type(entry).__name__}")
        object.__setattr__(self, "entries", tuple(entries))
        expected = self.expected_revision
        if isinstance(expected, MemoryRevision):
            object.__setattr__(self, "expected_revision", expected.ref)
        elif not (expected is None or isinstance(expected, ArtifactRef)
                  or (isinstance(expected, int) and not isinstance(expected, bool) and expected >= 0)):
            raise InvalidRuntimeRequestError(
                f"expected_revision is None, a Revision number ≥ 0 or an ArtifactRef, got {shown(expected)}"
            )
        if not isinstance(self.sources, (tuple, list)):
            raise InvalidRuntimeRequestError("sources must be a tuple of captured Sources")
        object.__setattr__(self, "sources", tuple(self.sources))


@dataclass(frozen=True, slots=True)
class EntryAnchor:
    """An exact entry anchor: the Revision it was read from and the entry id. A
    ``MemoryHit`` or a ``MemoryCitation`` serves as an anchor too."""

    memory_ref: ArtifactRef
    entry_id: str


def as_anchor(value: Any) -> EntryAnchor:
    if isinstance(value, EntryAnchor):
        return value
    ref, entry_id = getattr(value, "memory_ref", None), getattr(value, "entry_id", None)
    if ref is None and isinstance(value, tuple) and len(value) == 2:
        ref, entry_id = value
    if isinstance(ref, MemoryRevision):
        ref = ref.ref
    if not isinstance(ref, ArtifactRef) or not isinstance(entry_id, str):
        raise InvalidRuntimeRequestError(
            "an entry anchor is an EntryAnchor(memory_ref, entry_id), a MemoryHit, a MemoryCitation or "
            f"(ArtifactRef, entry_id); got {type(value).__name__}"
        )
    return EntryAnchor(ref, entry_id)


@dataclass(frozen=True, slots=True)
class MemoryFlushResult:
    """What one ``flush()`` did.

    ``status``: ``idle`` (nothing after the cursor), ``committed`` (a new Revision),
    ``no_change`` (the window was inspected and the Memory stayed — no candidates, or a
    replay the Memory already holds), ``unavailable`` (no candidate pipeline) or
    ``failed`` (decoding, extraction or the commit failed; ``error`` says why). The
    cursor moved only for ``committed`` and ``no_change``."""

    scope: str
    status: str
    window: ProcessSourceWindow | None
    cursor_before: int
    cursor: int
    high_watermark: int
    revision: MemoryRevision | None = None
    source_ids: tuple[str, ...] = ()
    error: str | None = None
    errors: tuple[BaseException, ...] = field(default=(), repr=False, compare=False)

    @property
    def advanced(self) -> bool:
        return self.cursor > self.cursor_before

    @property
    def ok(self) -> bool:
        return self.status in ("idle", "committed", "no_change")

    @property
    def pending(self) -> int:
        return self.high_watermark - self.cursor

    def __str__(self) -> str:
        window = f" window {self.window}" if self.window else ""
        rev = f" → {self.revision.ref}" if self.revision is not None else ""
        why = f" ({self.error})" if self.error else ""
        return f"{self.scope}: {self.status}{window}{rev}; cursor {self.cursor_before} → {self.cursor} of {self.high_watermark}{why}"
