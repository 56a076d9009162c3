"""The SQLite database file: created private, switched into WAL mode, and removed
after a refused open only while nothing was committed to it. The WAL switch is shared by
the Memory backend and the Runtime storage (both open the same file, each on its own
connection).

When two connections switch one new file into WAL at the same moment, SQLite refuses
one or both at once with ``database is locked`` — within 1 ms, a 10 s busy timeout set
(measured here: 21 of 40 paired plain-apsw opens of a new file; 4 of 20 paired backend
opens, some with neither process opening). Their locks deadlock, and SQLite breaks that
by refusing rather than waiting; a lock another connection simply holds is waited for
(measured: the full timeout). Every other statement waits up to the busy timeout; this
one is retried for as long, so an open fails only when the file stays locked that long.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import apsw

from ...errors import BackendUnavailableError

BUSY_TIMEOUT_MS = 10_000


def enter_wal(con: apsw.Connection, timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    """Switch ``con``'s file to WAL (a no-op when it already is), waiting up to
    ``timeout_ms`` for other connections' locks."""
    deadline = time.monotonic() + timeout_ms / 1000
    pause = 0.002
    while True:
        try:
            con.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except apsw.BusyError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.05)  # short first: the other opener holds it for milliseconds


def create_private(path: str) -> bool:
    """Create the database file 0600 if it does not exist (SQLite gives its -wal and
    -shm files the same mode); True when this call created it (``O_EXCL``: of two
    processes opening one new path, exactly one). A missing parent directory is refused,
    not created: a typo in a path must not silently make a new tree."""
    parent = Path(path).parent
    if not parent.is_dir():
        raise BackendUnavailableError(
            f"cannot create SQLite database {path!r}: directory {str(parent)!r} does not exist; create it first"
        )
    try:
        try:
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
            return True
        except FileExistsError:  # there already, or a symlink (opened through, as before, but not ours)
            os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
            return False
    except OSError as exc:
        raise BackendUnavailableError(f"cannot create SQLite database {path!r}: {exc.strerror}") from None


def _holds_no_table(path: str) -> bool:
    """No connection has committed a table to the file (its size does not tell: the switch
    into WAL writes a header page before any table exists). Unreadable counts as holding
    one: the file is then left alone."""
    try:
        con = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READWRITE)
    except apsw.Error:
        return False
    try:
        con.set_busy_timeout(BUSY_TIMEOUT_MS)
        ((tables,),) = con.execute("SELECT count(*) FROM sqlite_schema").fetchall()
        return tables == 0
    except apsw.Error:
        return False
    finally:
        con.close()


def remove_if_unwritten(path: str) -> None:
    """Remove a file a refused open created, with its -wal, -shm and -journal: a refused
    open leaves nothing behind. Not once it holds a table: then another process opening
    the same new path won the race (this one was refused, e.g. for another profile) and
    is using the file."""
    if not _holds_no_table(path):
        return
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(OSError):
            os.unlink(path + suffix)
