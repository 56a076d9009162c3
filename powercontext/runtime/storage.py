"""The Runtime's storage contract (RFC 001 "RuntimeStorage", "Source journal").

Runtime orchestration depends on these two protocols only; a storage profile (the
built-in SQLite and OceanBase ones, or any other) implements them. Runtime storage owns
three kinds of scoped state — the scope → Memory binding, the Source journal and the
Trigger cursors — plus a log of processed windows for inspection. Records are plain
data: the journal payload stays the encoded text the Runtime wrote, and the Runtime
decodes it through its pydantic boundary, so a storage profile never interprets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

from .trigger import ProcessSourceWindow

WINDOW_OUTCOMES = ("committed", "no_change", "failed", "unavailable", "started")
#: Outcomes that moved the cursor: the cursor is the ``through`` of the last of them.
COMPLETED_OUTCOMES = ("committed", "no_change")


@dataclass(frozen=True, slots=True)
class MemoryBinding:
    """A scope's globally unique Memory Artifact id. ``created`` is True only for the
    caller whose bind() created it: a concurrent loser gets the winner's id and False."""

    scope: str
    memory_artifact_id: str
    created_at: str
    created: bool = False


@dataclass(frozen=True, slots=True)
class JournalRecord:
    scope: str
    sequence: int
    source_type: str
    source_id: str
    memory_source_name: str
    payload: str
    payload_hash: str
    captured_at: str


@dataclass(frozen=True, slots=True)
class ScopeProgress:
    """How far a scope's journal and its Trigger cursor are."""

    scope: str
    high_watermark: int
    cursor: int
    #: Why the stored cursor cannot be trusted (a hand-edited row), or None.
    problem: str | None = None

    @property
    def pending(self) -> int:
        return max(0, self.high_watermark - self.cursor)


@dataclass(frozen=True, slots=True)
class WindowRecord:
    """One processed (or attempted) Source window and what came of it."""

    window_id: int
    scope: str
    trigger_name: str
    after: int
    through: int
    outcome: str
    memory_artifact_id: str | None
    revision: int | None
    detail: str | None
    started_at: str
    finished_at: str


@runtime_checkable
class RuntimeScopeStorage(Protocol):
    """The state of one scope."""

    scope: str

    async def bind(self, new_memory_artifact_id: str) -> MemoryBinding:
        """The scope's binding; created with ``new_memory_artifact_id`` if it has none."""

    async def binding(self) -> MemoryBinding | None: ...

    async def append(self, source_type: str, source_id: str, memory_source_name: str, payload: str,
                     payload_hash: str) -> tuple[JournalRecord, bool]:
        """Journal a Source at the next sequence, or return its existing record (False)
        when the same identity holds the same payload hash; a different payload raises
        SourceConflictError and writes nothing."""

    async def get(self, source_type: str, source_id: str) -> JournalRecord | None: ...

    async def by_memory_source_names(self, names: Sequence[str]) -> list[JournalRecord]: ...

    async def records(self, after: int, through: int) -> list[JournalRecord]:
        """Journal records with after < sequence <= through, ascending."""

    async def high_watermark(self) -> int: ...

    async def cursor(self, trigger_name: str) -> int: ...

    async def cursor_problem(self, trigger_name: str) -> str | None:
        """Why the stored cursor disagrees with the journal (past its high watermark) or
        with the window log (not the ``through`` of the last completed window), or None."""

    async def start_window(self, trigger_name: str, window: ProcessSourceWindow, memory_artifact_id: str,
                           base_revision: int, started_at: str) -> None:
        """Log, before the Memory commit, that ``window`` is being committed on Revision
        ``base_revision`` (0: none yet) of the bound Memory; complete_window removes it.
        A replay after a crash between the commit and the cursor save finds it."""

    async def started_window(self, trigger_name: str, after: int) -> WindowRecord | None:
        """The latest ``started`` log of a window beginning at ``after``, or None."""

    async def complete_window(self, trigger_name: str, window: ProcessSourceWindow, outcome: str,
                              memory_artifact_id: str | None, revision: int | None, detail: str | None,
                              started_at: str) -> int:
        """Atomically log the window and advance the cursor to ``window.through``
        (monotonic: never backwards, never past the high watermark); returns the cursor."""

    async def record_window(self, trigger_name: str, window: ProcessSourceWindow, outcome: str,
                            detail: str | None, started_at: str) -> None:
        """Log a window that did not complete; the cursor stays."""

    async def windows(self, trigger_name: str, limit: int = 100) -> list[WindowRecord]:
        """The latest windows, newest first."""


@runtime_checkable
class RuntimeStorage(Protocol):
    """A Runtime database's journals, bindings and cursors."""

    profile: str
    key: str  # the normalized database key: stable across restarts, no credentials

    def open_scope(self, scope: str) -> RuntimeScopeStorage: ...

    async def pending_scopes(self, trigger_name: str) -> list[ScopeProgress]:
        """Scopes whose journal high watermark is past their cursor."""

    async def progress(self, trigger_name: str) -> list[ScopeProgress]:
        """Every scope that has a binding or a journal, with its progress."""

    async def bindings(self) -> list[MemoryBinding]: ...

    async def probe(self) -> dict[str, str]:
        """Re-check the schema; what was checked and the result."""

    async def close(self) -> None: ...
