"""Runtime storage over SQL, written once (RFC 001 "Source journal").

``SQLRuntimeStorage`` implements the ``RuntimeStorage`` contract with portable
statements (``?`` placeholders) run on one worker thread that owns one connection; a
profile (``sqlite_storage``, ``oceanbase_storage``) supplies only its DDL, its
connection and transaction handling, and how its driver reports a unique violation.
The rules live here: idempotent journal appends, per-scope monotonic sequences, a
cursor that only moves forward and never past the high watermark, windows logged in
the same transaction that advances the cursor.
"""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from ..errors import BackendUnavailableError, PowerContextError, SourceConflictError
from .errors import RuntimeClosedError, RuntimeStateError
from .storage import COMPLETED_OUTCOMES, JournalRecord, MemoryBinding, ScopeProgress, WindowRecord, WINDOW_OUTCOMES
from .trigger import ProcessSourceWindow

SCHEMA_KEY = "runtime_schema"
SCHEMA_VERSION = "powercontext.runtime.v1"
APPEND_ATTEMPTS = 5
MAX_DETAIL_CHARS = 2000
JOURNAL_COLUMNS = "scope, sequence, source_type, source_id, memory_source_name, payload, payload_hash, captured_at"
WINDOW_COLUMNS = (
    "window_id, scope, trigger_name, after_sequence, through_sequence, outcome, memory_artifact_id, revision, "
    "detail, started_at, finished_at"
)
#: Every table and the columns the Runtime reads: the startup probe selects them all.
EXPECTED_COLUMNS = {
    "runtime_schema": "name, value",
    "runtime_memory_bindings": "scope, memory_artifact_id, created_at",
    "runtime_source_journal": JOURNAL_COLUMNS,
    "runtime_trigger_cursors": "scope, trigger_name, sequence, updated_at",
    "runtime_source_windows": WINDOW_COLUMNS,
}


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def marks(n: int) -> str:
    return ",".join("?" * n)


class SQLRuntimeStorage(ABC):
    """Async RuntimeStorage over synchronous, portable SQL on one worker thread."""

    profile = "sql"

    def __init__(self, key: str, location: str) -> None:
        self.key = key
        self.location = location  # for display: a path or a URL without credentials
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"pc-runtime-{self.profile}")
        self._closed = False

    # ------------------------------------------------------------------ dialect

    @abstractmethod
    def _connect_sync(self) -> None:
        """Open the connection (on the worker thread) and create the schema."""

    @abstractmethod
    def _transaction(self, write: bool) -> contextlib.AbstractContextManager[Any]: ...

    @abstractmethod
    def _rows(self, tx: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...

    @abstractmethod
    def _count(self, tx: Any, sql: str, params: Sequence[Any] = ()) -> int: ...

    @abstractmethod
    def _is_unique_violation(self, exc: BaseException) -> bool: ...

    @abstractmethod
    def _driver_errors(self) -> tuple[type[BaseException], ...]: ...

    @abstractmethod
    def _close_sync(self) -> None: ...

    # ------------------------------------------------------------------ async facade

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self._closed:
            raise RuntimeClosedError(f"the Runtime storage of {self.location} is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, fn, args)

    def _guarded(self, fn: Callable[..., Any], args: tuple) -> Any:
        """A raw driver error never reaches a caller: it becomes BackendUnavailableError;
        a stored value that does not decode (text in an integer column) becomes
        RuntimeStateError."""
        try:
            return fn(*args)
        except PowerContextError:
            raise
        except self._driver_errors() as exc:
            raise BackendUnavailableError(f"Runtime storage at {self.location}: {type(exc).__name__}: {exc}") from exc
        except (ValueError, TypeError, OverflowError) as exc:
            raise RuntimeStateError(
                f"Runtime storage at {self.location} holds a value this version never writes ({exc}): "
                "a hand-edited or foreign row; restore the row or the database from a backup"
            ) from exc

    def start(self) -> None:
        """Open and verify the schema (blocking; the open() factories call it)."""
        try:
            self._executor.submit(self._guarded, self._setup_sync, ()).result()
            self._executor.submit(self._guarded, self._probe_sync, ()).result()
        except BaseException:
            self._executor.submit(self._close_quietly).result()
            self._executor.shutdown(wait=True)
            self._closed = True
            raise

    def _setup_sync(self) -> None:
        try:
            self._connect_sync()
        except self._driver_errors() as exc:
            raise BackendUnavailableError(
                f"the Runtime schema at {self.location} cannot be set up ({type(exc).__name__}: {exc}); a Runtime "
                "table exists with columns this version does not write"
            ) from exc

    def _close_quietly(self) -> None:
        with contextlib.suppress(Exception):
            self._close_sync()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await asyncio.get_running_loop().run_in_executor(self._executor, self._close_quietly)
        self._executor.shutdown(wait=True)

    def open_scope(self, scope: str) -> "SQLScopeStorage":
        return SQLScopeStorage(self, scope)

    async def pending_scopes(self, trigger_name: str) -> list[ScopeProgress]:
        return [p for p in await self.progress(trigger_name) if p.pending > 0]

    async def progress(self, trigger_name: str) -> list[ScopeProgress]:
        return await self._run(self._progress_sync, trigger_name)

    async def bindings(self) -> list[MemoryBinding]:
        return await self._run(self._bindings_sync)

    async def probe(self) -> dict[str, str]:
        return await self._run(self._probe_sync)

    # ------------------------------------------------------------------ schema

    def _check_schema_version(self, tx: Any) -> None:
        """Record the schema version in a new database; refuse any other version."""
        rows = self._rows(tx, "SELECT value FROM runtime_schema WHERE name = ?", (SCHEMA_KEY,))
        if not rows:
            self._count(tx, "INSERT INTO runtime_schema (name, value) VALUES (?, ?)", (SCHEMA_KEY, SCHEMA_VERSION))
        elif rows[0][0] != SCHEMA_VERSION:
            raise BackendUnavailableError(
                f"{self.location} holds Runtime schema {rows[0][0]!r}; this version reads {SCHEMA_VERSION!r} only"
            )

    def _probe_sync(self) -> dict[str, str]:
        """Every table answers a select of every column the Runtime reads."""
        with self._transaction(write=False) as tx:
            for table, columns in EXPECTED_COLUMNS.items():
                try:
                    self._rows(tx, f"SELECT {columns} FROM {table} WHERE 1 = 0")
                except self._driver_errors() as exc:
                    raise BackendUnavailableError(
                        f"Runtime table {table} at {self.location} is not usable ({exc}); it was not created by "
                        "this version of PowerContext"
                    ) from exc
            version = self._rows(tx, "SELECT value FROM runtime_schema WHERE name = ?", (SCHEMA_KEY,))
        if not version or version[0][0] != SCHEMA_VERSION:
            raise BackendUnavailableError(f"{self.location} has no {SCHEMA_VERSION} Runtime schema record")
        return {"runtime_schema": SCHEMA_VERSION, "runtime_tables": ", ".join(EXPECTED_COLUMNS)}

    # ------------------------------------------------------------------ bindings

    @staticmethod
    def _binding(row, created: bool = False) -> MemoryBinding:
        return MemoryBinding(scope=row[0], memory_artifact_id=row[1], created_at=row[2], created=created)

    def _binding_sync(self, scope: str) -> MemoryBinding | None:
        with self._transaction(write=False) as tx:
            rows = self._rows(tx, "SELECT scope, memory_artifact_id, created_at FROM runtime_memory_bindings WHERE scope = ?", (scope,))
        return self._binding(rows[0]) if rows else None

    def _bind_sync(self, scope: str, new_id: str) -> MemoryBinding:
        existing = self._binding_sync(scope)
        if existing is not None:
            return existing
        created_at = utc_now()
        try:
            with self._transaction(write=True) as tx:
                rows = self._rows(tx, "SELECT scope, memory_artifact_id, created_at FROM runtime_memory_bindings WHERE scope = ?", (scope,))
                if rows:
                    return self._binding(rows[0])
                self._count(tx, "INSERT INTO runtime_memory_bindings (scope, memory_artifact_id, created_at) VALUES (?, ?, ?)",
                            (scope, new_id, created_at))
        except self._driver_errors() as exc:
            if not self._is_unique_violation(exc):
                raise
            # A concurrent first binding won: the loser reads and returns the winner's.
            winner = self._binding_sync(scope)
            if winner is None:
                raise BackendUnavailableError(
                    f"binding scope {scope!r} collided with Memory id {new_id!r}, which another scope holds"
                ) from exc
            return winner
        return MemoryBinding(scope, new_id, created_at, created=True)

    def _bindings_sync(self) -> list[MemoryBinding]:
        with self._transaction(write=False) as tx:
            rows = self._rows(tx, "SELECT scope, memory_artifact_id, created_at FROM runtime_memory_bindings ORDER BY created_at, scope")
        return [self._binding(r) for r in rows]

    # ------------------------------------------------------------------ journal

    @staticmethod
    def _record(row) -> JournalRecord:
        scope, sequence, source_type, source_id, name, payload, payload_hash, captured_at = row
        return JournalRecord(scope, int(sequence), source_type, source_id, name, payload, payload_hash, captured_at)

    def _append_sync(self, scope, source_type, source_id, name, payload, payload_hash) -> tuple[JournalRecord, bool]:
        for _ in range(APPEND_ATTEMPTS):
            try:
                return self._append_once(scope, source_type, source_id, name, payload, payload_hash)
            except self._driver_errors() as exc:
                if not self._is_unique_violation(exc):
                    raise
                # Another connection appended concurrently (same identity or same
                # sequence): re-read and decide again.
        raise BackendUnavailableError(f"could not allocate a journal sequence for scope {scope!r}: too much contention")

    def _append_once(self, scope, source_type, source_id, name, payload, payload_hash) -> tuple[JournalRecord, bool]:
        with self._transaction(write=True) as tx:
            rows = self._rows(
                tx, f"SELECT {JOURNAL_COLUMNS} FROM runtime_source_journal WHERE scope = ? AND source_type = ? AND source_id = ?",
                (scope, source_type, source_id),
            )
            if rows:
                record = self._record(rows[0])
                if record.payload_hash != payload_hash:
                    raise SourceConflictError(
                        f"scope {scope!r} already holds Source {source_id!r} ({source_type}) with a different payload "
                        f"(journal sequence {record.sequence}); Sources are immutable: capture the new payload under a new source_id"
                    )
                return record, False
            high = self._rows(tx, "SELECT COALESCE(MAX(sequence), 0) FROM runtime_source_journal WHERE scope = ?", (scope,))
            record = JournalRecord(scope, int(high[0][0]) + 1, source_type, source_id, name, payload, payload_hash, utc_now())
            self._count(tx, f"INSERT INTO runtime_source_journal ({JOURNAL_COLUMNS}) VALUES ({marks(8)})",
                        (record.scope, record.sequence, record.source_type, record.source_id, record.memory_source_name,
                         record.payload, record.payload_hash, record.captured_at))
        return record, True

    def _get_sync(self, scope, source_type, source_id) -> JournalRecord | None:
        with self._transaction(write=False) as tx:
            rows = self._rows(
                tx, f"SELECT {JOURNAL_COLUMNS} FROM runtime_source_journal WHERE scope = ? AND source_type = ? AND source_id = ?",
                (scope, source_type, source_id),
            )
        return self._record(rows[0]) if rows else None

    def _by_names_sync(self, scope, names) -> list[JournalRecord]:
        if not names:
            return []
        with self._transaction(write=False) as tx:
            rows = self._rows(
                tx, f"SELECT {JOURNAL_COLUMNS} FROM runtime_source_journal WHERE scope = ? AND memory_source_name IN "
                f"({marks(len(names))}) ORDER BY sequence", (scope, *names),
            )
        return [self._record(r) for r in rows]

    def _records_sync(self, scope, after, through) -> list[JournalRecord]:
        with self._transaction(write=False) as tx:
            rows = self._rows(
                tx, f"SELECT {JOURNAL_COLUMNS} FROM runtime_source_journal WHERE scope = ? AND sequence > ? AND sequence <= ? "
                "ORDER BY sequence", (scope, after, through),
            )
        return [self._record(r) for r in rows]

    def _high_watermark(self, tx, scope) -> int:
        return int(self._rows(tx, "SELECT COALESCE(MAX(sequence), 0) FROM runtime_source_journal WHERE scope = ?", (scope,))[0][0])

    def _cursor(self, tx, scope, trigger_name) -> int | None:
        rows = self._rows(tx, "SELECT sequence FROM runtime_trigger_cursors WHERE scope = ? AND trigger_name = ?", (scope, trigger_name))
        return int(rows[0][0]) if rows else None

    def _high_watermark_sync(self, scope) -> int:
        with self._transaction(write=False) as tx:
            return self._high_watermark(tx, scope)

    def _cursor_sync(self, scope, trigger_name) -> int:
        with self._transaction(write=False) as tx:
            return self._cursor(tx, scope, trigger_name) or 0

    def _last_completed(self, tx, scope, trigger_name) -> int:
        rows = self._rows(
            tx, f"SELECT MAX(through_sequence) FROM runtime_source_windows WHERE scope = ? AND trigger_name = ? "
            f"AND outcome IN ({marks(len(COMPLETED_OUTCOMES))})", (scope, trigger_name, *COMPLETED_OUTCOMES),
        )
        return int(rows[0][0] or 0)

    @staticmethod
    def _problem(scope: str, cursor: int, high: int, completed: int) -> str | None:
        """The cursor moves only with a logged, completed window, never past the journal:
        any other value was written by hand, and trusting it would skip captures."""
        if cursor > high:
            return (f"the cursor of scope {scope!r} ({cursor}) is past its journal's high watermark ({high}): "
                    f"later captures would be skipped; set it back to {completed}, the end of its last completed window")
        if cursor != completed:
            return (f"the cursor of scope {scope!r} ({cursor}) is not where its last completed window ended "
                    f"({completed}): the cursor row was altered; set it back to {completed}")
        return None

    def _cursor_problem_sync(self, scope, trigger_name) -> str | None:
        with self._transaction(write=False) as tx:
            cursor = self._cursor(tx, scope, trigger_name) or 0
            return self._problem(scope, cursor, self._high_watermark(tx, scope), self._last_completed(tx, scope, trigger_name))

    def _progress_sync(self, trigger_name) -> list[ScopeProgress]:
        with self._transaction(write=False) as tx:
            highs = dict(self._rows(tx, "SELECT scope, MAX(sequence) FROM runtime_source_journal GROUP BY scope"))
            cursors = dict(self._rows(tx, "SELECT scope, sequence FROM runtime_trigger_cursors WHERE trigger_name = ?", (trigger_name,)))
            completed = dict(self._rows(
                tx, f"SELECT scope, MAX(through_sequence) FROM runtime_source_windows WHERE trigger_name = ? "
                f"AND outcome IN ({marks(len(COMPLETED_OUTCOMES))}) GROUP BY scope", (trigger_name, *COMPLETED_OUTCOMES),
            ))
            bound = [r[0] for r in self._rows(tx, "SELECT scope FROM runtime_memory_bindings")]
        scopes = sorted(set(highs) | set(cursors) | set(bound))
        out = []
        for s in scopes:
            high, cursor = int(highs.get(s) or 0), int(cursors.get(s) or 0)
            out.append(ScopeProgress(s, high, cursor, self._problem(s, cursor, high, int(completed.get(s) or 0))))
        return out

    # ------------------------------------------------------------------ windows and cursor

    def _insert_window(self, tx, scope, trigger_name, window, outcome, artifact_id, revision, detail, started_at,
                       finished_at: str | None = None) -> None:
        if outcome not in WINDOW_OUTCOMES:
            raise ValueError(f"unknown window outcome {outcome!r}")
        self._count(
            tx, "INSERT INTO runtime_source_windows (scope, trigger_name, after_sequence, through_sequence, outcome, "
            "memory_artifact_id, revision, detail, started_at, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (scope, trigger_name, window.after, window.through, outcome, artifact_id, revision,
             None if detail is None else detail[:MAX_DETAIL_CHARS], started_at, finished_at or utc_now()),
        )

    def _complete_window_sync(self, scope, trigger_name, window: ProcessSourceWindow, outcome, artifact_id, revision,
                              detail, started_at) -> int:
        with self._transaction(write=True) as tx:
            high = self._high_watermark(tx, scope)
            if window.through > high:
                raise BackendUnavailableError(
                    f"refusing to move the cursor of scope {scope!r} to {window.through}: the journal ends at {high}"
                )
            current = self._cursor(tx, scope, trigger_name)
            if current is None:
                self._count(tx, "INSERT INTO runtime_trigger_cursors (scope, trigger_name, sequence, updated_at) VALUES (?, ?, ?, ?)",
                            (scope, trigger_name, window.through, utc_now()))
            else:
                # Monotonic in the database itself, whatever connection got here first.
                self._count(tx, "UPDATE runtime_trigger_cursors SET sequence = ?, updated_at = ? "
                            "WHERE scope = ? AND trigger_name = ? AND sequence < ?",
                            (window.through, utc_now(), scope, trigger_name, window.through))
            self._insert_window(tx, scope, trigger_name, window, outcome, artifact_id, revision, detail, started_at)
            # The start logs of this window and of every earlier one are settled now.
            self._count(tx, "DELETE FROM runtime_source_windows WHERE scope = ? AND trigger_name = ? AND outcome = ? "
                        "AND after_sequence < ?", (scope, trigger_name, "started", window.through))
            return self._cursor(tx, scope, trigger_name)

    def _start_window_sync(self, scope, trigger_name, window, artifact_id, base_revision, started_at) -> None:
        with self._transaction(write=True) as tx:
            self._insert_window(tx, scope, trigger_name, window, "started", artifact_id, base_revision,
                                f"committing on Revision {base_revision}", started_at, finished_at=started_at)

    def _started_window_sync(self, scope, trigger_name, after) -> WindowRecord | None:
        with self._transaction(write=False) as tx:
            rows = self._rows(
                tx, f"SELECT {WINDOW_COLUMNS} FROM runtime_source_windows WHERE scope = ? AND trigger_name = ? "
                "AND outcome = ? AND after_sequence = ? ORDER BY window_id DESC LIMIT 1", (scope, trigger_name, "started", after),
            )
        return self._window(rows[0]) if rows else None

    def _record_window_sync(self, scope, trigger_name, window, outcome, detail, started_at) -> None:
        with self._transaction(write=True) as tx:
            self._insert_window(tx, scope, trigger_name, window, outcome, None, None, detail, started_at)

    def _windows_sync(self, scope, trigger_name, limit) -> list[WindowRecord]:
        with self._transaction(write=False) as tx:
            rows = self._rows(
                tx, f"SELECT {WINDOW_COLUMNS} FROM runtime_source_windows WHERE scope = ? AND trigger_name = ? "
                "ORDER BY window_id DESC LIMIT ?", (scope, trigger_name, limit),
            )
        return [self._window(r) for r in rows]

    @staticmethod
    def _window(row) -> WindowRecord:
        w, s, t, a, th, o, m, r, d, st, f = row
        return WindowRecord(int(w), s, t, int(a), int(th), o, m, None if r is None else int(r), d, st, f)


class SQLScopeStorage:
    """``RuntimeScopeStorage`` of one scope on a ``SQLRuntimeStorage``."""

    def __init__(self, storage: SQLRuntimeStorage, scope: str) -> None:
        self._storage = storage
        self.scope = scope

    async def bind(self, new_memory_artifact_id: str) -> MemoryBinding:
        return await self._storage._run(self._storage._bind_sync, self.scope, new_memory_artifact_id)

    async def binding(self) -> MemoryBinding | None:
        return await self._storage._run(self._storage._binding_sync, self.scope)

    async def append(self, source_type, source_id, memory_source_name, payload, payload_hash):
        return await self._storage._run(self._storage._append_sync, self.scope, source_type, source_id,
                                        memory_source_name, payload, payload_hash)

    async def get(self, source_type, source_id):
        return await self._storage._run(self._storage._get_sync, self.scope, source_type, source_id)

    async def by_memory_source_names(self, names):
        return await self._storage._run(self._storage._by_names_sync, self.scope, tuple(names))

    async def records(self, after, through):
        return await self._storage._run(self._storage._records_sync, self.scope, after, through)

    async def high_watermark(self):
        return await self._storage._run(self._storage._high_watermark_sync, self.scope)

    async def cursor(self, trigger_name):
        return await self._storage._run(self._storage._cursor_sync, self.scope, trigger_name)

    async def cursor_problem(self, trigger_name):
        return await self._storage._run(self._storage._cursor_problem_sync, self.scope, trigger_name)

    async def start_window(self, trigger_name, window, memory_artifact_id, base_revision, started_at):
        return await self._storage._run(self._storage._start_window_sync, self.scope, trigger_name, window,
                                        memory_artifact_id, base_revision, started_at)

    async def started_window(self, trigger_name, after):
        return await self._storage._run(self._storage._started_window_sync, self.scope, trigger_name, after)

    async def complete_window(self, trigger_name, window, outcome, memory_artifact_id, revision, detail, started_at):
        return await self._storage._run(self._storage._complete_window_sync, self.scope, trigger_name, window, outcome,
                                        memory_artifact_id, revision, detail, started_at)

    async def record_window(self, trigger_name, window, outcome, detail, started_at):
        return await self._storage._run(self._storage._record_window_sync, self.scope, trigger_name, window, outcome,
                                        detail, started_at)

    async def windows(self, trigger_name, limit=100):
        return await self._storage._run(self._storage._windows_sync, self.scope, trigger_name, limit)
