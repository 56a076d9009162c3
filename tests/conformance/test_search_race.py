"""A commit that lands between a search's head read and its channel queries must not
produce silently empty hits: SQLite reads one WAL snapshot (hits stay consistent with
the requested head); OceanBase reads each statement at READ COMMITTED, so the search
sees the head move, retries, and reports a conflict."""

import asyncio
import threading

import pytest

import powercontext as pc


def forgets_once_then_reads(read, forget, loop, threads):
    """``read`` (a channel statement) that first lets ``forget`` (another service's commit
    moving the head) land, once; each call notes its thread in ``threads``."""
    fired = []

    def wrapped(tx, ids, query, k):
        threads.append(threading.get_ident())
        if not fired:
            fired.append(True)
            asyncio.run_coroutine_threadsafe(forget(), loop).result(timeout=30)
        return read(tx, ids, query, k)
    return wrapped, fired


async def search_while_the_head_moves(open_service, backend_name, monkeypatch, mode, statement, **options):
    """Search one entry by ``mode`` while another service forgets it during the search's
    ``statement`` (``_fts_query`` or ``_vector_query``). Returns the threads each channel
    statement ran on: {"_fts_query": [...], "_vector_query": [...]}."""
    svc = await open_service(**options)
    rev = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "the build cache lives in ~/.cache/atlas"),))
    (entry,) = await svc.entries(rev)
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    other = await pc.open(target, **options)  # a second connection, as another process would have
    threads = {"_fts_query": [], "_vector_query": []}
    fired = []
    for name in threads:
        real = getattr(svc.backend, name)
        if name == statement:
            wrapped, fired = forgets_once_then_reads(real, lambda: other.forget(rev, entries=(entry,)),
                                                     asyncio.get_running_loop(), threads[name])
        else:
            def wrapped(tx, ids, query, k, real=real, seen=threads[name]):
                seen.append(threading.get_ident())
                return real(tx, ids, query, k)
        monkeypatch.setattr(svc.backend, name, wrapped)
    try:
        if backend_name == "sqlite":
            res = await svc.search("build cache", memories=(rev,), mode=mode)
            assert [h.entry_id for h in res] == [entry.entry_id]  # consistent with Revision 1
        else:
            with pytest.raises(pc.RevisionConflictError, match="no longer the head"):
                await svc.search("build cache", memories=(rev,), mode=mode)
        assert fired and (await svc.head(rev.artifact_id)).revision == 2
    finally:
        await other.close()
    return threads


async def test_commit_during_search_never_yields_silently_empty_hits(open_service, backend_name, monkeypatch):
    await search_while_the_head_moves(open_service, backend_name, monkeypatch, "fts", "_fts_query")


async def test_a_commit_during_the_vector_read_is_seen_as_in_a_full_text_read(open_service, backend_name, monkeypatch,
                                                                             minilm):
    """A hybrid search reads its vector channel on a connection of its own, beside the
    full-text statement (oceanbase/search.py and sqlite/search.py, _channel_rows).
    A commit that lands during that read is caught by the same heads re-read as one
    during the full-text statement: a conflict on OceanBase, hits of the requested
    Revision on SQLite (the second connection reads only a snapshot with the same heads)."""
    threads = await search_while_the_head_moves(open_service, backend_name, monkeypatch, "hybrid", "_vector_query",
                                                embedding=minilm)
    # the two statements on two threads (two connections), on both databases
    assert threads["_fts_query"] and threads["_vector_query"]
    assert set(threads["_fts_query"]).isdisjoint(threads["_vector_query"])


async def test_a_closed_backend_opens_no_connection_for_a_late_vector_read(open_service, backend_name, minilm):
    """A search that races close() must not open a connection for its vector read after
    every connection was closed (on OceanBase it would stay open until the process ends);
    a search after close() is refused with the library's error on both databases."""
    svc = await open_service(embedding=minilm)
    rev = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "the build cache lives in ~/.cache/atlas"),))
    assert len(await svc.search("build cache", memories=(rev,), mode="hybrid")) == 1
    backend = svc.backend
    await svc.close()
    with pytest.raises(pc.ServiceClosedError):
        await svc.search("build cache", memories=(rev,), mode="hybrid")
    if backend_name == "oceanbase":
        assert backend._connections == []
        with pytest.raises(pc.ServiceClosedError):
            backend._channel_executor()  # what a search that passed the open check before close() reaches
        assert backend._connections == []
