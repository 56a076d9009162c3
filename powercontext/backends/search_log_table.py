"""The search log's own table (issue 44): one row per logged search, the record as JSON.

It sits beside the Memory tables and never among them: no Revision, hash, manifest,
projection or ``verify`` reads it, so logging (or clearing the log) changes nothing a
Memory is checked against. The table is created by the first append; reading or
clearing a log that was never written creates nothing. Every call runs on the
backend's worker thread(s) through ``_run``, so a raw driver error never leaves it.

Only SQL and its per-database wrinkles live here; what a record holds, the cap and
the best-effort policy are ``memory/search_log.py``'s business.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

TABLE = "powercontext_search_log"

_DDL = {
    "sqlite": (
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        "id INTEGER PRIMARY KEY AUTOINCREMENT, logged_at_us INTEGER NOT NULL, record TEXT NOT NULL)",
        f"CREATE INDEX IF NOT EXISTS idx_{TABLE}_at ON {TABLE} (logged_at_us)",
    ),
    "oceanbase": (
        f"CREATE TABLE IF NOT EXISTS {TABLE} ("
        "id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, logged_at_us BIGINT NOT NULL, "
        f"record LONGTEXT NOT NULL, INDEX idx_{TABLE}_at (logged_at_us))",
    ),
}
# Whether the table exists: reading or clearing a log nobody has written creates nothing.
_EXISTS = {
    "sqlite": "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
    "oceanbase": "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?",
}
_NO_SUCH_TABLE = 1146  # MySQL's ER_NO_SUCH_TABLE, as OceanBase answers it

# Rows are ordered by when the search was asked (taken before the append was queued),
# then by id: appends run on several worker threads on OceanBase and may land out of
# order, so the id alone is not the order of the searches.
_NEWEST_FIRST = "ORDER BY logged_at_us DESC, id DESC"


class SearchLogTable:
    """Append, trim, read and clear the rows of one backend's search log."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self._ready = False
        self._create_lock = threading.Lock()

    # ------------------------------------------------------------------ async API

    async def append(self, make_rows: Callable[[], list[tuple[int, str]]], cap: int | None) -> None:
        """Insert the rows ``make_rows()`` returns ((logged_at_us, json) each), built on
        the worker thread so the caller's event loop does not pay for them, as one
        multi-row insert; then, when ``cap`` is given, drop the oldest rows beyond it —
        in the same transaction, so a kill leaves either both or neither."""
        await self._backend._run(self._append_sync, make_rows, cap)

    async def read(self, since_us: int | None, limit: int) -> list[tuple[int, str]]:
        """(id, json) of the newest ``limit`` rows logged at or after ``since_us``,
        oldest first."""
        return await self._backend._run(self._read_sync, since_us, limit)

    async def clear(self, before_us: int | None) -> int:
        """Delete every row (or those logged before ``before_us``); returns how many."""
        return await self._backend._run(self._clear_sync, before_us)

    # ------------------------------------------------------------------ worker side

    def _ensure(self) -> None:
        if self._ready:
            return
        # One creator at a time: on OceanBase (4 workers) a second CREATE TABLE IF NOT
        # EXISTS returned while the first was still creating, and its insert then found
        # no table (measured: one append lost in the 10k bench).
        with self._create_lock:
            if self._ready:
                return
            with self._backend._transaction(write=True) as tx:
                for statement in _DDL[self._backend.name]:
                    tx.execute(statement)
            self._ready = True

    @contextlib.contextmanager
    def _log_transaction(self) -> Iterator[Any]:
        """A write transaction for log rows. On SQLite the commit skips the fsync
        (``synchronous=NORMAL`` for this transaction only): WAL stays consistent through
        a crash, and the next Memory commit's fsync makes the log durable with it, so
        the log adds no fsync of its own. Other databases commit as usual."""
        con = getattr(self._backend, "_con", None) if self._backend.name == "sqlite" else None
        if con is None:
            with self._backend._transaction(write=True) as tx:
                yield tx
            return
        con.execute("PRAGMA synchronous=NORMAL")
        try:
            with self._backend._transaction(write=True) as tx:
                yield tx
        finally:
            con.execute("PRAGMA synchronous=FULL")

    def _append_sync(self, make_rows: Callable[[], list[tuple[int, str]]], cap: int | None) -> None:
        self._ensure()
        rows = make_rows()
        with self._log_transaction() as tx:
            # one statement for the batch: on OceanBase each statement is a round trip
            self._backend._insert_many(tx, f"INSERT INTO {TABLE} (logged_at_us, record) VALUES (?, ?)", rows)
            if cap is not None:
                self._trim(tx, cap)

    def _trim(self, tx: Any, cap: int) -> None:
        # Two statements, not DELETE … (SELECT … FROM the same table): MySQL mode refuses
        # a subquery on the table being deleted from. The boundary is the newest row
        # beyond the cap, so the cap holds whatever gaps the ids have.
        rows = self._backend._rows(tx, f"SELECT logged_at_us, id FROM {TABLE} {_NEWEST_FIRST} "
                                       f"LIMIT 1 OFFSET {int(cap)}")
        if rows:
            at, row_id = (int(v) for v in rows[0])
            self._backend._count(
                tx, f"DELETE FROM {TABLE} WHERE logged_at_us < ? OR (logged_at_us = ? AND id <= ?)",
                (at, at, row_id))

    def _not_creating(self) -> contextlib.AbstractContextManager[Any]:
        """Until the table is known to exist, a read or clear holds the creator's lock:
        without it a read on OceanBase found the table in the catalogue while another
        worker thread was still creating it, and its SELECT then "doesn't exist" (seen
        in CI). Once created, reads take no lock."""
        return contextlib.nullcontext() if self._ready else self._create_lock

    def _exists(self, tx: Any) -> bool:
        return self._ready or bool(self._backend._rows(tx, _EXISTS[self._backend.name], (TABLE,)))

    def _on_table(self, tx: Any, statement, empty):
        """``statement()`` when the log's table is there to read, else ``empty``: a log
        nobody has written creates nothing. On OceanBase the catalogue lists a table
        another PROCESS is still creating (the lock above serialises this one's threads
        only), or was SIGKILLed creating, before a statement can use it: that statement's
        "doesn't exist" (ER_NO_SUCH_TABLE) is the same empty log — make test's crash loop
        once got BackendUnavailableError from it."""
        if not self._exists(tx):
            return empty
        try:
            return statement()
        except Exception as exc:  # noqa: BLE001 - only ER_NO_SUCH_TABLE is an empty log
            if exc.args and exc.args[0] == _NO_SUCH_TABLE:
                return empty
            raise

    def _read_sync(self, since_us: int | None, limit: int) -> list[tuple[int, str]]:
        where, params = ("WHERE logged_at_us >= ?", (since_us,)) if since_us is not None else ("", ())
        with self._not_creating(), self._backend._transaction(write=False) as tx:
            rows = self._on_table(tx, lambda: self._backend._rows(
                tx, f"SELECT id, record FROM {TABLE} {where} {_NEWEST_FIRST} LIMIT {int(limit)}", params), [])
        return [(int(i), str(r)) for i, r in reversed(rows)]

    def _clear_sync(self, before_us: int | None) -> int:
        where, params = ("WHERE logged_at_us < ?", (before_us,)) if before_us is not None else ("", ())
        with self._not_creating(), self._log_transaction() as tx:
            return self._on_table(tx, lambda: self._backend._count(tx, f"DELETE FROM {TABLE} {where}", params), 0)
