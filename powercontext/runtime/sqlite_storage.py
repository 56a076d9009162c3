"""The SQLite profile of RuntimeStorage: the journal, bindings and cursors are tables in
the Runtime database file itself, next to the Memory tables (RFC 001 "SQLite profile").

The storage owns its own apsw connection (WAL, busy timeout, ``BEGIN IMMEDIATE`` for
writes) on its own worker thread; the Memory backend keeps its own connection to the
same file, so both may overlap without sharing a transaction.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator

import apsw

from ..backends.sqlite.database_file import BUSY_TIMEOUT_MS, enter_wal
from ..errors import InvalidRuntimeRequestError, shown
from .sql_storage import SQLRuntimeStorage

MEMORY = ":memory:"

_DDL = """
CREATE TABLE IF NOT EXISTS runtime_schema (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runtime_memory_bindings (
    scope TEXT PRIMARY KEY,
    memory_artifact_id TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runtime_source_journal (
    scope TEXT NOT NULL,
    sequence INTEGER NOT NULL CHECK (sequence > 0),
    source_type TEXT NOT NULL,
    source_id TEXT NOT NULL,
    memory_source_name TEXT NOT NULL,
    payload TEXT NOT NULL,
    payload_hash TEXT NOT NULL,
    captured_at TEXT NOT NULL,
    PRIMARY KEY (scope, sequence),
    UNIQUE (scope, source_type, source_id)
);
CREATE INDEX IF NOT EXISTS idx_runtime_source_journal_memory_name
    ON runtime_source_journal (scope, memory_source_name);
CREATE TABLE IF NOT EXISTS runtime_trigger_cursors (
    scope TEXT NOT NULL,
    trigger_name TEXT NOT NULL,
    sequence INTEGER NOT NULL CHECK (sequence >= 0),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (scope, trigger_name)
);
CREATE TABLE IF NOT EXISTS runtime_source_windows (
    window_id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,
    trigger_name TEXT NOT NULL,
    after_sequence INTEGER NOT NULL,
    through_sequence INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    memory_artifact_id TEXT,
    revision INTEGER,
    detail TEXT,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_runtime_source_windows_scope
    ON runtime_source_windows (scope, trigger_name, window_id);
"""


def runtime_target(target: Any) -> str:
    """What ``PowerContextRuntime.open`` accepts as its database: a non-empty string (or
    path) that has a UTF-8 form: a lone surrogate reaches no file system or server, and
    would otherwise surface as a raw UnicodeEncodeError from deep in ``realpath``."""
    if isinstance(target, os.PathLike):
        target = os.fspath(target)
    if not isinstance(target, str) or not target:
        raise InvalidRuntimeRequestError(f"a Runtime database is a SQLite path or an oceanbase:// URL, got {shown(target)}")
    try:
        target.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRuntimeRequestError(
            f"a Runtime database path or URL must be valid Unicode text: it holds a lone surrogate "
            f"({exc.object[exc.start:exc.end]!r} at {exc.start})") from None
    if "\x00" in target:
        raise InvalidRuntimeRequestError("a Runtime database path or URL must not contain NUL characters")
    return target


def sqlite_database_path(target: Any) -> str:
    """The absolute, symlink-resolved path of a SQLite Runtime database (or
    ``:memory:``): a relative path is resolved against the working directory once, at
    open, so a later ``chdir`` never opens a second file."""
    target = runtime_target(target)
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///"):] or MEMORY
    elif "://" in target:
        raise InvalidRuntimeRequestError(f"{target!r} is not a SQLite path (use sqlite:///path.db or a plain path)")
    if target == MEMORY:
        return MEMORY
    return os.path.realpath(os.path.abspath(os.path.expanduser(target)))


class SQLiteRuntimeStorage(SQLRuntimeStorage):
    profile = "sqlite"

    def __init__(self, target: Any) -> None:
        self.path = sqlite_database_path(target)
        super().__init__(key=f"sqlite:{self.path}", location=self.path)
        self._con: apsw.Connection | None = None

    @classmethod
    async def open(cls, target: Any) -> "SQLiteRuntimeStorage":
        import asyncio

        storage = cls(target)
        await asyncio.get_running_loop().run_in_executor(None, storage.start)
        return storage

    def _connect_sync(self) -> None:
        if self.path != MEMORY:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        con = apsw.Connection(self.path)
        con.set_busy_timeout(BUSY_TIMEOUT_MS)
        self._con = con
        if self.path != MEMORY:
            enter_wal(con, BUSY_TIMEOUT_MS)
        with self._transaction(write=True) as tx:
            tx.execute(_DDL)
            self._check_schema_version(tx)

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        cur = self._con.cursor()
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        else:
            cur.execute("COMMIT")

    def _rows(self, tx, sql, params=()):
        return [tuple(r) for r in tx.execute(sql, tuple(params))]

    def _count(self, tx, sql, params=()):
        tx.execute(sql, tuple(params))
        return self._con.changes()

    def _is_unique_violation(self, exc: BaseException) -> bool:
        message = str(exc).upper()
        return isinstance(exc, apsw.ConstraintError) and ("UNIQUE" in message or "PRIMARY KEY" in message)

    def _driver_errors(self):
        return (apsw.Error,)

    def _close_sync(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
