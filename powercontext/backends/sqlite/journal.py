"""Putting a SQLite file into WAL mode, shared by the Memory backend and the Runtime
storage (both open the same file, each on its own connection).

When two connections switch one new file into WAL at the same moment, SQLite refuses
one or both at once with ``database is locked`` — within 1 ms, a 10 s busy timeout set
(measured here: 21 of 40 paired plain-apsw opens of a new file; 4 of 20 paired backend
opens, some with neither process opening). Their locks deadlock, and SQLite breaks that
by refusing rather than waiting; a lock another connection simply holds is waited for
(measured: the full timeout). Every other statement waits up to the busy timeout; this
one is retried for as long, so an open fails only when the file stays locked that long.
"""

from __future__ import annotations

import time

import apsw

BUSY_TIMEOUT_MS = 10_000


def enter_wal(con: apsw.Connection, timeout_ms: int = BUSY_TIMEOUT_MS) -> str:
    """Switch ``con``'s file to WAL (a no-op when it already is), waiting up to
    ``timeout_ms`` for other connections' locks; returns the journal mode SQLite reports."""
    deadline = time.monotonic() + timeout_ms / 1000
    pause = 0.002
    while True:
        try:
            ((mode,),) = con.execute("PRAGMA journal_mode=WAL").fetchall()
            return str(mode)
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)  # short first: the other opener holds it for milliseconds
