"""Citations, hash integrity and atomicity."""

import asyncio
import dataclasses

import pytest

import powercontext as pc

from ..support import counts, sql
from .scenario import revision_one, user_correction


async def test_citation_refusals(svc):
    sc = await revision_one(svc)
    r2 = await user_correction(svc, sc)
    good = await svc.cite(r2.ref, sc.e02b.entry_id, r2.manifest.get(sc.e02b.entry_id).entry_version_id)
    bad = [
        dataclasses.replace(good, entry_version_id=sc.e02b.entry_version_id),  # version of Revision 1
        dataclasses.replace(good, entry_id=sc.e01a.entry_id),  # version joined across entries
        dataclasses.replace(good, entry_content_hash="0" * 64),
        dataclasses.replace(good, memory_ref=pc.ArtifactRef(r2.artifact_id, 7)),
        dataclasses.replace(good, memory_ref=pc.ArtifactRef("mem_art_other", 1)),
    ]
    for citation in bad:
        with pytest.raises(pc.InvalidCitationError):
            await svc.expand((citation,))
    with pytest.raises(pc.InvalidCitationError):
        await svc.cite(r2.ref, sc.e02b.entry_id, sc.e02b.entry_version_id)
    with pytest.raises(pc.InvalidCitationError):
        await svc.expand(("not a citation",))
    # Revision 1's citation of the old version stays valid
    old = await svc.cite(sc.r1.ref, sc.e02b.entry_id, sc.e02b.entry_version_id)
    assert (await svc.expand((old,)))[0] == sc.e02b


async def test_altered_entry_row_is_refused_by_expand_and_cite(svc):
    sc = await revision_one(svc)
    citation = await svc.cite(sc.r1.ref, sc.e03c.entry_id, sc.e03c.entry_version_id)
    await sql(svc, "UPDATE memory_entry_versions SET text = ? WHERE entry_version_id = ?",
              ("site/ may be edited freely.", sc.e03c.entry_version_id))
    with pytest.raises(pc.InvalidCitationError, match="altered"):
        await svc.expand((citation,))
    with pytest.raises(pc.InvalidCitationError):
        await svc.cite(sc.r1.ref, sc.e03c.entry_id, sc.e03c.entry_version_id)
    # search drops the altered entry instead of serving unverified text
    assert (await svc.search("site generated output", memories=(sc.r1,))).hits == ()


async def test_altered_revision_row_is_refused(svc):
    sc = await revision_one(svc)
    citation = await svc.cite(sc.r1.ref, sc.e01a.entry_id, sc.e01a.entry_version_id)
    # the manifest's bytes live in content-addressed chunks (manifest_chunks.py) …
    await sql(svc, "UPDATE artifact_manifest_chunks SET content = REPLACE(content, '\"active\"', '\"inactive\"')")
    with pytest.raises(pc.InvalidCitationError):
        await svc.expand((citation,))
    # … and the row keeps the list of them: reordering it is an alteration too
    await sql(svc, "UPDATE artifact_revisions SET content = REPLACE(content, 'chunks-v1 ', 'chunks-v1  ')")
    with pytest.raises(pc.InvalidCitationError):
        await svc.revision(sc.r1.ref)


async def test_failure_after_revision_insert_leaves_nothing(svc, monkeypatch):
    sc = await revision_one(svc)
    before = await counts(svc)

    def broken_projection(*args, **kwargs):
        raise RuntimeError("injected index failure")

    monkeypatch.setattr(svc.backend, "_put_projections", broken_projection)
    with pytest.raises(RuntimeError, match="injected"):
        await svc.remember(sc.r1, entries=(pc.MemoryEntryInput("fact", "never committed"),))
    assert await counts(svc) == before
    assert (await svc.head(sc.r1.artifact_id)).ref == sc.r1.ref
    # and a first creation that fails leaves no Memory behind
    with pytest.raises(RuntimeError):
        await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "never"),))
    assert await counts(svc) == before
    monkeypatch.undo()
    r2 = await svc.remember(sc.r1, entries=(pc.MemoryEntryInput("fact", "now committed"),))
    assert r2.revision == 2


async def test_concurrent_writers_on_one_base(open_service):
    svc = await open_service()
    r1 = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "seed"),))

    async def writer(i):
        return await svc.remember(r1, entries=(pc.MemoryEntryInput("fact", f"writer {i}"),))

    results = await asyncio.gather(*(writer(i) for i in range(8)), return_exceptions=True)
    ok = [r for r in results if isinstance(r, pc.MemoryRevision)]
    assert len(ok) == 1 and ok[0].revision == 2
    assert all(isinstance(r, pc.RevisionConflictError) for r in results if r not in ok)

    async def retrying_writer(i):
        while True:
            head = await svc.head(r1.artifact_id)
            try:
                return await svc.remember(head, entries=(pc.MemoryEntryInput("fact", f"retried {i}"),))
            except pc.RevisionConflictError:
                await asyncio.sleep(0)

    landed = await asyncio.gather(*(retrying_writer(i) for i in range(8)))
    head = await svc.head(r1.artifact_id)
    assert sorted(r.revision for r in landed) == list(range(3, 11)) and head.revision == 10
    history = await svc.changes(head, since_revision=0)
    assert [c.memory_ref.revision for c in history] == list(range(1, 11))
    texts = sorted(e.text for e in await svc.entries(head))
    assert texts == sorted(["seed", ok[0].changes and (await svc.entry(head, ok[0].changes[0].entry_id)).text]
                           + [f"retried {i}" for i in range(8)])
    assert (await counts(svc))["memory_entry_versions"] == 10


async def test_concurrent_first_creation_is_a_conflict(svc):
    """Two writers minting the same Memory id: one wins, the other gets a typed conflict."""
    svc.ids.artifact_id = lambda: "mem_art_same"
    results = await asyncio.gather(
        *(svc.remember(None, entries=(pc.MemoryEntryInput("fact", f"first {i}"),)) for i in range(4)),
        return_exceptions=True,
    )
    assert sum(isinstance(r, pc.MemoryRevision) for r in results) == 1
    assert all(isinstance(r, (pc.MemoryRevision, pc.RevisionConflictError)) for r in results)
