"""Manifest storage that costs the change (issue 15), on both databases: Revisions
store content-addressed chunks of the canonical flat-v1 manifest shared with their
base, reads reassemble the exact bytes and verify the hash, any altered chunk is
refused, ``changes()`` reads change lists only, and rows written before chunking are
migrated. Chunk sizes are forced small so a few hundred entries span many chunks."""

from __future__ import annotations

import pytest

import powercontext as pc

from ..support import sql

E = pc.MemoryEntryInput
SMALL = dict(leaf_target=4, leaf_cap=9, index_target=3, index_cap=5)


async def _stored_bytes(svc) -> int:
    rows = await sql(svc, "SELECT SUM(LENGTH(content) + LENGTH(lineage)) FROM artifact_revisions")
    chunks = await sql(svc, "SELECT SUM(LENGTH(content)) FROM artifact_manifest_chunks")
    return int(rows[0][0] or 0) + int(chunks[0][0] or 0)


async def _memory(svc, n=200):
    svc.backend.chunk_sizes = SMALL
    return await svc.remember(None, entries=tuple(E("fact", f"fact number {i} about the build") for i in range(n)))


async def test_a_one_entry_change_stores_a_few_chunks_not_the_manifest(svc):
    r1 = await _memory(svc)
    manifest_bytes = len(r1.content.canonical_text())
    before = await _stored_bytes(svc)
    entry = (await svc.entries(r1))[77]
    r2 = await svc.remember(r1, entries=(E("fact", "fact number 77, revised", entry=entry),))
    r3 = await svc.remember(r2, entries=(E("fact", "a new fact"),))
    added = (await _stored_bytes(svc) - before) / 2
    assert added < manifest_bytes / 8, (added, manifest_bytes)
    # reads reassemble the exact canonical bytes and hash (a fresh service: no cache)
    target = svc.backend.path if svc.backend.name == "sqlite" else svc.backend.url
    async with await pc.open(target) as fresh:
        for rev in (r1, r2, r3):
            again = await fresh.revision(rev.ref)
            assert again.content == rev.content and again.content_hash == rev.content_hash
        assert (await fresh.verify(r3)).ok


@pytest.mark.parametrize("victim", ["group", "head"])
async def test_an_altered_chunk_is_refused_cached_or_not(svc, victim):
    r1 = await _memory(svc, 60)
    entries = await svc.entries(r1)
    good = await svc.cite(r1, entries[30].entry_id, entries[30].entry_version_id)  # caches r1
    if victim == "group":
        key = entries[30].entry_version_id
        await sql(svc, "UPDATE artifact_manifest_chunks SET content = REPLACE(content, '\"active\"', '\"inactive\"') "
                  "WHERE content LIKE ?", (f"%{key}%",))
        with pytest.raises(pc.InvalidCitationError):
            await svc.expand((good,))
    else:
        await sql(svc, "UPDATE artifact_manifest_chunks SET content = REPLACE(content, '\"add\"', '\"revise\"') "
                  "WHERE content LIKE ?", ('{"changes":%',))
        with pytest.raises(pc.InvalidCitationError, match="altered"):
            await svc.changes(r1, since_revision=0)
    with pytest.raises(pc.InvalidCitationError):
        await svc.revision(r1.ref)
    if victim == "group":
        with pytest.raises(pc.InvalidCitationError):
            await svc.entries(r1)
    assert not (await svc.verify(r1)).ok


async def test_changes_reads_the_change_lists(svc):
    r1 = await _memory(svc, 40)
    entries = await svc.entries(r1)
    r2 = await svc.forget(r1, entries=(entries[3],))
    r3 = await svc.remember(r2, entries=(E("fact", "one more"),))
    history = await svc.changes(r3, since_revision=0)
    assert [c.memory_ref.revision for c in history] == [1, 2, 3]
    assert [c.changes for c in history] == [r1.changes, r2.changes, r3.changes]
    assert [len(c.changes) for c in history] == [40, 1, 1]


async def test_rows_written_before_chunking_are_migrated(svc):
    r1 = await _memory(svc, 30)
    r2 = await svc.remember(r1, entries=(E("fact", "later"),))
    for rev in (r1, r2):  # the old layout: the whole canonical text in the row
        await sql(svc, "UPDATE artifact_revisions SET content = ? WHERE artifact_id = ? AND revision = ?",
                  (rev.content.canonical_text(), rev.artifact_id, rev.revision))
    await sql(svc, "DELETE FROM artifact_manifest_chunks")
    target = svc.backend.path if svc.backend.name == "sqlite" else svc.backend.url
    async with await pc.open(target) as reopened:
        stored = await sql(reopened, "SELECT content FROM artifact_revisions ORDER BY revision")
        assert all(row[0].startswith("chunks-v1 ") for row in stored)
        assert (await reopened.revision(r2.ref)).content == r2.content
        assert [len(c.changes) for c in await reopened.changes(r2, since_revision=0)] == [30, 1]
        assert (await reopened.verify(r2)).ok


async def test_the_revision_cache_is_bounded_in_bytes(svc):
    rev = await _memory(svc, 120)
    for i in range(6):
        rev = await svc.remember(rev, entries=(E("fact", f"appended {i}"),))
    cache = svc.backend.revision_cache
    assert cache.max_bytes == 64 * 2**20  # the default budget
    one = cache.get(rev.ref).nbytes
    cache.max_bytes = int(2.5 * one)  # room for two Revisions of this size
    for r in range(1, rev.revision + 1):
        assert (await svc.revision(pc.ArtifactRef(rev.artifact_id, r))).ref.revision == r
        assert cache.nbytes <= cache.max_bytes
    assert len(cache) == 2
