"""SQLite under a second writer (issue 13, defect 2): a lock held past the busy
timeout is a typed, retryable DatabaseBusyError naming the wait, and a commit holds
the write lock for its SQL alone (hashing and analyzing happen before BEGIN)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import powercontext as pc
import powercontext.backends.sqlite.backend as sqlite_backend
from powercontext import analyzer
from tests.support import counts

E = pc.MemoryEntryInput

HOLD_LOCK = """
import sys, time, apsw
con = apsw.Connection(sys.argv[1])
con.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
"""


async def test_a_held_lock_is_a_typed_retryable_error(tmp_path, monkeypatch):
    monkeypatch.setattr(sqlite_backend, "BUSY_TIMEOUT_MS", 300)
    path = tmp_path / "busy.db"
    svc = await pc.open(path)
    rev = await svc.remember(None, entries=(E("fact", "before the lock"),))
    before = await counts(svc)
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(pc.DatabaseBusyError, match=r"waited 0\.3 s") as info:
            await svc.remember(rev, entries=(E("fact", "while another process writes"),))
        assert info.value.retryable and len(str(info.value).splitlines()) == 1
        with pytest.raises(pc.DatabaseBusyError):
            await svc.sources.persist(pc.ContentSource("src_busy", "x"))
    finally:
        holder.communicate("\n", timeout=10)
    assert await counts(svc) == before
    rev2 = await svc.remember(rev, entries=(E("fact", "after the lock"),))  # the retry succeeds
    assert rev2.revision == 2
    await svc.close()


async def test_the_write_lock_is_held_for_the_sql_alone(tmp_path, monkeypatch):
    svc = await pc.open(tmp_path / "lock.db")
    backend = svc.backend
    real_transaction = backend._transaction
    writing = []
    analyzed_inside = []

    import contextlib

    @contextlib.contextmanager
    def tracked(write):
        writing.append(write)
        try:
            with real_transaction(write) as tx:
                yield tx
        finally:
            writing.pop()

    real_searchable = analyzer.Analyzer.searchable_text  # what the backend analyzes with (its database's version)

    def spy(self, text):
        analyzed_inside.append(any(writing))
        return real_searchable(self, text)

    monkeypatch.setattr(backend, "_transaction", tracked)
    monkeypatch.setattr(analyzer.Analyzer, "searchable_text", spy)
    checked_inside = []
    real_check = backend._check_plan
    monkeypatch.setattr(backend, "_check_plan",
                        lambda plan, *diff: (checked_inside.append(any(writing)), real_check(plan, *diff)))
    await svc.remember(None, entries=tuple(E("fact", f"entry {i} " + "word " * 400) for i in range(50)))
    assert len(analyzed_inside) == 50 and not any(analyzed_inside)
    assert checked_inside == [False]
    await svc.close()
