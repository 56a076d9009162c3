"""A handle opened with ``embedding=None`` on a database that keeps vectors (issue 43,
item 10). It used to commit head rows without vectors, after which every handle's
vector and hybrid search on that Memory refused until ``rebuild_projections()``. Now
the write is refused with EmbeddingRequiredError, nothing is written, and a model-less
handle may still forget (which writes no vector) and search full text."""

import pytest

import powercontext as pc
from powercontext.canonical import SequentialIds

from ..support import counts
from .test_vectors import DOCS, LOW

E = pc.MemoryEntryInput


async def test_a_handle_without_a_model_cannot_write_entries_into_a_vector_database(open_service, minilm, backend_name):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    rev = await svc.remember(None, entries=tuple(E("fact", d) for d in DOCS))
    plain = await pc.open(str(svc.backend.path) if backend_name == "sqlite" else svc.backend.url)  # embedding=None
    try:
        before = await counts(svc)
        for write in (lambda: plain.remember(rev, entries=(E("fact", "Schema changes need a second reviewer."),)),
                      lambda: plain.remember(None, entries=(E("fact", "A new Memory, no vector."),))):
            with pytest.raises(pc.EmbeddingRequiredError, match=r"opened with embedding=None.*Reopen it with pc\.open"):
                await write()
        assert await counts(svc) == before  # nothing half-written
        assert isinstance(pc.EmbeddingRequiredError("x"), pc.PowerContextError)
        # What writes no vector stays allowed: forgetting an entry.
        first = (await plain.entries(rev))[0]
        rev2 = await plain.forget(rev, entries=(first,), reason="user_requested")
        assert (await plain.search("pnpm dependencies", memories=(rev2,), mode="fts")).mode == "fts"
    finally:
        await plain.close()
    # Every handle with the model still searches by vector: no row lost its vector.
    res = await svc.search("who has to approve schema changes", memories=(rev2,), mode="vector", policy=LOW)
    assert res.hits and res.hits[0].text == DOCS[1]
    assert (await svc.verify(rev2.artifact_id)).ok


async def test_a_handle_without_a_model_cannot_rebuild_the_projections_of_a_vector_database(open_service, minilm,
                                                                                            backend_name):
    """A rebuild through such a handle rewrote every head row without its vector (noticed
    in issue 43's closing note): vector and hybrid search then refused for every handle
    until a rebuild with the model. Refused before anything is written; the analyzer
    migration, which leaves vectors alone, stays allowed."""
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    rev = await svc.remember(None, entries=tuple(E("fact", d) for d in DOCS))
    plain = await pc.open(str(svc.backend.path) if backend_name == "sqlite" else svc.backend.url)  # embedding=None
    try:
        before = await counts(svc)
        for rebuild in (lambda: plain.rebuild_projections(), lambda: plain.rebuild_projections((rev,))):
            with pytest.raises(pc.EmbeddingRequiredError, match=r"cannot rebuild the projections.*Reopen it with"):
                await rebuild()
        assert await counts(svc) == before
    finally:
        await plain.close()
    res = await svc.search("who has to approve schema changes", memories=(rev,), mode="vector", policy=LOW)
    assert res.hits and res.hits[0].text == DOCS[1]
