"""Server limits (issue 15): statements that bind per-entry values are chunked under
the database's variable limit, and a statement larger than OceanBase's
``max_allowed_packet`` is refused with a typed error naming the limit, before anything
is written. The chunk size and the packet limit are forced small here so a few entries
prove what 100k entries would hit."""

from __future__ import annotations

import uuid

import pytest

import powercontext as pc
from powercontext.backends.seekdb import database_url, drop_database

E = pc.MemoryEntryInput


async def test_per_entry_statements_are_chunked(svc, monkeypatch):
    backend = svc.backend
    monkeypatch.setattr(backend, "in_list_size", 3)
    bound = []
    real = backend._rows

    def counting(tx, statement, params=()):
        bound.append(len(params))
        return real(tx, statement, params)

    monkeypatch.setattr(backend, "_rows", counting)
    rev = await svc.remember(None, entries=tuple(E("fact", f"fact {i} about the build cache") for i in range(20)))
    rev = await svc.remember(rev, entries=tuple(E("fact", f"later fact {i} about the cache") for i in range(7)))
    assert len(await svc.entries(rev)) == 27
    retrieval, used, _ = await svc.retrieve("build cache", memories=(rev,), limit=8, mode="fts")
    assert len(retrieval.channels["fts"]) == min(27, svc.policy.pool_size(8))
    assert bound and max(bound) <= 4, max(bound)  # 3 values, plus at most one other parameter


async def test_a_statement_over_max_allowed_packet_is_refused_naming_it(oceanbase_url):
    database = "pc_" + uuid.uuid4().hex[:16]
    svc = await pc.open(database_url(oceanbase_url, database))
    try:
        server_limit = svc.backend.max_allowed_packet
        assert server_limit >= 1 << 20  # read from the server
        svc.backend.max_allowed_packet = 40_000
        with pytest.raises(pc.ServerLimitError, match="max_allowed_packet") as info:
            await svc.sources.persist(pc.ContentSource("src_big", "x" * 50_000))
        assert info.value.limit == "max_allowed_packet" and info.value.value == 40_000
        assert len(str(info.value).splitlines()) == 1
        with pytest.raises(pc.SourceNotFoundError):
            await svc.sources.get("src_big")
        svc.backend.max_allowed_packet = 12_000  # the row of one 8 KB entry is over it
        with pytest.raises(pc.ServerLimitError, match="max_allowed_packet"):
            await svc.remember(None, entries=(E("fact", "short"), E("fact", "y " * 4000)))
        svc.backend.max_allowed_packet = server_limit
        assert await svc.memories() == ()  # the whole commit rolled back
    finally:
        await svc.close()
        drop_database(oceanbase_url, database)
