"""rebuild_projections() at scale (issue 15). A 100k-entry rebuild on OceanBase ran one
statement past the server's 60 s ob_query_timeout; the server's error 4012 was taken
for a lost connection and the whole rebuild was run twice. Here: a statement that
times out is a typed error naming the limit, tried once, and rolls back; and no
statement of a rebuild grows with the Memory (the slice size is forced small, so a
few hundred entries show what 100k would do)."""

from __future__ import annotations

import contextlib
import math
import uuid

import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.canonical import SequentialIds

from ..support import RecordingCursor, sql

E = pc.MemoryEntryInput


def record(monkeypatch, backend, log, after=None, only_in=None):
    """Record the statements of every transaction (or only of those run inside the
    backend method ``only_in``)."""
    real = backend._transaction
    inside = [only_in is None]

    @contextlib.contextmanager
    def recording(write):
        with real(write) as tx:
            yield RecordingCursor(tx, log, after) if inside[0] else tx

    monkeypatch.setattr(backend, "_transaction", recording)
    if only_in is not None:
        method = getattr(backend, only_in)

        def wrapped(*args):
            inside[0] = True
            try:
                return method(*args)
            finally:
                inside[0] = False

        wrapped.__name__ = only_in
        monkeypatch.setattr(backend, only_in, wrapped)


async def test_a_statement_past_ob_query_timeout_is_typed_names_the_limit_and_is_tried_once(oceanbase_url, monkeypatch):
    database = "pc_" + uuid.uuid4().hex[:16]
    url = database_url(oceanbase_url, database)
    svc = await pc.open(url, ids=SequentialIds())
    try:
        rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the build cache") for i in range(40)))
        query = dict(query="build cache", memories=(rev,), mode="fts")
        before = [(h.entry_id, h.entry_version_id) for h in (await svc.search(**query)).hits]
        backend = svc.backend
        attempts = []
        real_rebuild = backend._rebuild_sync

        def counted(ref, vectors):
            attempts.append(ref)
            return real_rebuild(ref, vectors)

        monkeypatch.setattr(backend, "_rebuild_sync", counted)

        def lower_the_timeout(cursor, statement):
            # once the projection is read, the session lets a statement run 1 µs: the
            # next one is stopped by the server, as a 100k-row one was at 60 s
            if "FROM memory_entry_heads" in statement:
                cursor.execute("SET ob_query_timeout = 1")

        record(monkeypatch, backend, [], after=lower_the_timeout)
        with pytest.raises(pc.QueryTimeoutError, match="ob_query_timeout") as info:
            await svc.rebuild_projections(rev)
        error = info.value
        assert isinstance(error, pc.BackendUnavailableError) and not isinstance(error, pc.ConnectionLostError)
        assert error.limit == "ob_query_timeout" and error.value == 1 and not error.retryable
        assert len(str(error).splitlines()) == 1 and "nothing was written" in str(error)
        assert "POWERCONTEXT_OB_QUERY_TIMEOUT_S" in str(error)  # the setting a user can raise
        assert backend._params["password"] not in str(error) or not backend._params["password"]
        assert len(attempts) == 1  # not retried as a lost connection
    finally:
        await svc.close()  # its sessions keep the 1 µs timeout: a fresh service checks the rollback
    try:
        async with await pc.open(url) as fresh:
            assert (await fresh.head(rev.artifact_id)).ref == rev.ref
            assert [(h.entry_id, h.entry_version_id) for h in (await fresh.search(**query)).hits] == before
            assert (await sql(fresh, "SELECT COUNT(*) FROM memory_entry_heads"))[0][0] == 40
            assert await fresh.rebuild_projections(rev) == {rev.artifact_id: 40}
            assert [(h.entry_id, h.entry_version_id) for h in (await fresh.search(**query)).hits] == before
    finally:
        drop_database(oceanbase_url, database)


async def test_a_rebuild_runs_in_slices_and_rewrites_only_the_rows_that_differ(open_service, minilm, monkeypatch):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    topics = ("the build cache", "the release checklist", "flaky integration tests", "database migrations")
    rev = await svc.remember(None, entries=tuple(
        E("fact", f"note {i}: {topics[i % 4]} needs care on day {i % 17}") for i in range(300)))
    backend = svc.backend
    key = (rev.artifact_id,)

    async def state():
        searches = [[(h.entry_id, h.entry_version_id) for h in (await svc.search(
            "build cache", memories=(rev,), mode=mode, limit=20)).hits] for mode in ("fts", "vector", "hybrid")]
        sums = await sql(svc, "SELECT vector_count, vector_sum FROM memory_vector_sums WHERE memory_artifact_id = ?", key)
        rows = await sql(svc, "SELECT entry_id, entry_version_id, entry_content_hash, searchable_text "
                         "FROM memory_entry_heads WHERE memory_artifact_id = ? ORDER BY entry_id", key)
        return searches, [(c, bytes(s)) for c, s in sums], rows

    before = await state()
    assert before[1][0][0] == 300 and all(before[0])
    slice_size = 64
    monkeypatch.setattr(backend, "in_list_size", slice_size)
    log = []
    record(monkeypatch, backend, log, only_in="_rebuild_sync")
    slices = math.ceil(300 / slice_size)

    def statements(prefix, mentions=""):
        return [(s, p, n) for s, p, n in log if s.lstrip().upper().startswith(prefix) and mentions in s]

    def writes():  # FTS5's integrity-check is spelled as an INSERT but writes nothing
        return [s for s, _, _ in log if s.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE", "REPLACE"))
                and "'integrity-check'" not in s]

    # nothing changed: nothing is written, and the head rows are read one slice at a time
    assert await svc.rebuild_projections(rev) == {rev.artifact_id: 300}
    assert writes() == [] and backend.last_rebuild_writes == 0
    reads = statements("SELECT", "searchable_text")
    assert len(reads) == slices and all(len(p) <= slice_size + 1 for _, p, _ in reads), reads
    assert await state() == before
    # 130 rows whose stored text differs from the analyzer's (three slices): exactly those are rewritten
    stale = [row[0] for row in before[2][::2][:130]]
    for part in (stale[:70], stale[70:]):
        await sql(svc, f"UPDATE memory_entry_heads SET searchable_text = 'stale text' WHERE memory_artifact_id = ? "
                  f"AND entry_id IN ({','.join('?' * len(part))})", (*key, *part))
    log.clear()
    assert await svc.rebuild_projections(rev) == {rev.artifact_id: 300}
    assert backend.last_rebuild_writes == 130
    rewrites = statements("UPDATE MEMORY_ENTRY_HEADS")
    assert len(rewrites) == 130 and statements("DELETE FROM MEMORY_ENTRY_HEADS") == []
    assert statements("INSERT INTO MEMORY_ENTRY_HEADS") == []
    assert await state() == before  # the same rows, the same hits, the very same c̄ sum
    assert (await svc.verify(rev)).ok


@pytest.mark.parametrize("raw", ["soon", "-5", "0", "nan", "inf"])
async def test_a_bad_query_timeout_setting_is_refused_before_anything_is_created(oceanbase_url, monkeypatch, raw):
    from powercontext.backends.oceanbase.backend import QUERY_TIMEOUT_ENV

    database = "pc_" + uuid.uuid4().hex[:16]
    monkeypatch.setenv(QUERY_TIMEOUT_ENV, raw)
    with pytest.raises(pc.InvalidMemoryRequestError, match=QUERY_TIMEOUT_ENV):
        await pc.open(database_url(oceanbase_url, database))
    monkeypatch.delenv(QUERY_TIMEOUT_ENV)
    async with await pc.open(oceanbase_url) as other:  # the server's default database
        names = [row[0] for row in await sql(other, "SHOW DATABASES")]
    assert database not in names


async def test_the_query_timeout_setting_is_each_session_s_ob_query_timeout(oceanbase_url, monkeypatch):
    """What the QueryTimeoutError tells a user to raise is a setting they can reach."""
    from powercontext.backends.oceanbase.backend import QUERY_TIMEOUT_ENV, QUERY_TIMEOUT_US

    database = "pc_" + uuid.uuid4().hex[:16]
    url = database_url(oceanbase_url, database)
    try:
        async with await pc.open(url) as svc:
            assert (await sql(svc, "SELECT @@ob_query_timeout"))[0][0] == QUERY_TIMEOUT_US
        monkeypatch.setenv(QUERY_TIMEOUT_ENV, "300")
        async with await pc.open(url) as svc:
            assert (await sql(svc, "SELECT @@ob_query_timeout"))[0][0] == 300_000_000
    finally:
        drop_database(oceanbase_url, database)
