"""A commit that lands between a search's head read and its channel queries must not
produce silently empty hits: SQLite reads one WAL snapshot (hits stay consistent with
the requested head); OceanBase reads each statement at READ COMMITTED, so the search
sees the head move, retries, and reports a conflict."""

import asyncio
import threading

import pytest

import powercontext as pc


async def test_commit_during_search_never_yields_silently_empty_hits(open_service, backend_name, monkeypatch):
    svc = await open_service()
    rev = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "the build cache lives in ~/.cache/atlas"),))
    (entry,) = await svc.entries(rev)
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    other = await pc.open(target)  # a second connection, as another process would have
    loop = asyncio.get_running_loop()
    real_query = svc.backend._fts_query
    fired = []

    def query_after_concurrent_forget(tx, ids, terms, k):
        if not fired:
            fired.append(True)
            asyncio.run_coroutine_threadsafe(other.forget(rev, entries=(entry,)), loop).result(timeout=30)
        return real_query(tx, ids, terms, k)

    monkeypatch.setattr(svc.backend, "_fts_query", query_after_concurrent_forget)
    try:
        if backend_name == "sqlite":
            res = await svc.search("build cache", memories=(rev,), mode="fts")
            assert [h.entry_id for h in res] == [entry.entry_id]  # consistent with Revision 1
        else:
            with pytest.raises(pc.RevisionConflictError, match="no longer the head"):
                await svc.search("build cache", memories=(rev,), mode="fts")
        assert fired and (await svc.head(rev.artifact_id)).revision == 2
    finally:
        await other.close()


async def test_a_commit_during_the_vector_read_is_seen_as_in_a_full_text_read(open_service, backend_name, monkeypatch,
                                                                             minilm):
    """On OceanBase a hybrid search reads its vector channel on a connection of its own,
    beside the full-text statement (oceanbase_search._channel_rows). A commit that lands
    during that read is caught by the same heads re-read as one during the full-text
    statement: a conflict on OceanBase, hits of the requested Revision on SQLite."""
    svc = await open_service(embedding=minilm)
    rev = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "the build cache lives in ~/.cache/atlas"),))
    (entry,) = await svc.entries(rev)
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    other = await pc.open(target, embedding=minilm)
    loop = asyncio.get_running_loop()
    real_query = svc.backend._vector_query
    fired, threads = [], []

    def vector_read_after_concurrent_forget(tx, ids, vector, k):
        threads.append(threading.get_ident())
        if not fired:
            fired.append(True)
            asyncio.run_coroutine_threadsafe(other.forget(rev, entries=(entry,)), loop).result(timeout=30)
        return real_query(tx, ids, vector, k)

    real_fts = svc.backend._fts_query

    def fts_read(tx, ids, terms, k):
        threads.append(("fts", threading.get_ident()))
        return real_fts(tx, ids, terms, k)

    monkeypatch.setattr(svc.backend, "_vector_query", vector_read_after_concurrent_forget)
    monkeypatch.setattr(svc.backend, "_fts_query", fts_read)
    try:
        if backend_name == "sqlite":
            res = await svc.search("build cache", memories=(rev,), mode="hybrid")
            assert [h.entry_id for h in res] == [entry.entry_id]  # consistent with Revision 1
        else:
            with pytest.raises(pc.RevisionConflictError, match="no longer the head"):
                await svc.search("build cache", memories=(rev,), mode="hybrid")
        assert fired and (await svc.head(rev.artifact_id)).revision == 2
        vector_threads = {t for t in threads if not isinstance(t, tuple)}
        fts_threads = {t[1] for t in threads if isinstance(t, tuple)}
        # OceanBase: the two statements on two threads (two connections); SQLite: one
        assert (vector_threads.isdisjoint(fts_threads)) == (backend_name == "oceanbase")
    finally:
        await other.close()
