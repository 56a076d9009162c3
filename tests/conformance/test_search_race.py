"""A commit that lands between a search's head read and its channel queries must not
produce silently empty hits: SQLite reads one WAL snapshot (hits stay consistent with
the requested head); OceanBase reads each statement at READ COMMITTED, so the search
sees the head move, retries, and reports a conflict."""

import asyncio

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
