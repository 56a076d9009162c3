"""A commit adds its vectors to the Memory's vector sum (c̄) in slices (issue 48: one
numpy pass over a 50k-vector batch paid ~150 MB temporaries per step). Integer sums are
order-free, so a sliced commit must leave exactly the sum a rebuild computes vector by
vector — on both databases, each with its own returned values."""

from __future__ import annotations

import powercontext as pc
from powercontext.backends import projections
from powercontext.canonical import SequentialIds

from ..support import sql


async def test_a_commit_sliced_into_uneven_parts_keeps_the_exact_vector_sum(open_service, minilm, monkeypatch):
    monkeypatch.setattr(projections, "VECTOR_SLICE", 7)  # 40 vectors: slices of 7, …, 5
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    rev = await svc.remember(None, entries=tuple(
        pc.MemoryEntryInput("fact", f"note {i}: the cache of stage {i % 5} is kept for {i} days") for i in range(40)))
    key = (rev.artifact_id,)
    committed = await sql(svc, "SELECT vector_count, vector_sum FROM memory_vector_sums WHERE memory_artifact_id = ?", key)
    assert committed[0][0] == 40
    # the rebuild recomputes the sum from the stored vectors one by one and writes only what differs
    assert await svc.rebuild_projections(rev) == {rev.artifact_id: 40}
    assert svc.backend.last_rebuild_writes == 0
    assert await sql(svc, "SELECT vector_count, vector_sum FROM memory_vector_sums WHERE memory_artifact_id = ?",
                     key) == committed
