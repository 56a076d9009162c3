"""Cross-backend parity: the same operations give byte-identical authoritative state
on SQLite and OceanBase, and the same admitted FTS sets.

Known, documented difference: the FTS engines rank differently (FTS5 bm25 vs
OceanBase's BM25-like MATCH score), so the ORDER of admitted hits — and therefore RRF
scores — may differ; the admitted SETS may not, nor the pool of full-text candidates
when more rows match than it holds (backends/retrieval.fts_pool). Stop words cannot cause a difference
because Analyzer v1 drops OceanBase's built-in stop list on both databases.
"""

import itertools
import uuid

import pytest

import powercontext as pc
from powercontext.canonical import SequentialIds

from powercontext.backends.seekdb.urls import database_url, drop_database
from .scenario import revision_one, user_correction

QUERIES = [
    "site generated output",
    "make docs-test documentation",
    "uv Hatchling build",
    "run make check before review",
    "数据库 连接 超时",
    "what is the port of the api",
    "nothing here matches at all",
]


@pytest.fixture
async def both(tmp_path, oceanbase_url):
    database = "pc_parity_" + uuid.uuid4().hex[:12]
    sqlite = await pc.open(str(tmp_path / "parity.db"), ids=SequentialIds())
    ocean = await pc.open(database_url(oceanbase_url, database), ids=SequentialIds())
    yield sqlite, ocean
    await sqlite.close()
    await ocean.close()
    drop_database(oceanbase_url, database)


async def run_operations(svc):
    sc = await revision_one(svc)
    r2 = await user_correction(svc, sc)
    r3 = await svc.forget(r2, entries=(sc.e03c,), reason="user_requested")
    r4 = await svc.remember(r3, entries=(
        pc.MemoryEntryInput("fact", "数据库连接超时设置为 30 秒。"),
        pc.MemoryEntryInput("fact", "The API listens on port 8080; the admin UI on port 8081."),
    ))
    r5 = await svc.reactivate(r4, entries=(sc.e03c,), reason="user_restored")
    return sc, [sc.r1, r2, r3, r4, r5]


async def test_same_operations_same_authoritative_state(both):
    sqlite, ocean = both
    (sc_a, revs_a), (sc_b, revs_b) = await run_operations(sqlite), await run_operations(ocean)
    for a, b in zip(revs_a, revs_b):
        assert (a.ref, a.content, a.content_hash, a.lineage) == (b.ref, b.content, b.content_hash, b.lineage)
        assert await sqlite.revision(a.ref) == await ocean.revision(b.ref)
    head_a, head_b = revs_a[-1], revs_b[-1]
    assert await sqlite.changes(head_a, since_revision=0) == await ocean.changes(head_b, since_revision=0)
    assert await sqlite.entries(head_a, "all") == await ocean.entries(head_b, "all")
    cite_a = await sqlite.cite(revs_a[1].ref, sc_a.e02b.entry_id, revs_a[1].manifest.get(sc_a.e02b.entry_id).entry_version_id)
    cite_b = await ocean.cite(revs_b[1].ref, sc_b.e02b.entry_id, revs_b[1].manifest.get(sc_b.e02b.entry_id).entry_version_id)
    assert cite_a == cite_b
    assert await sqlite.expand((cite_a,)) == await ocean.expand((cite_b,))


async def test_same_admitted_fts_sets(both):
    sqlite, ocean = both
    (_, revs_a), (_, revs_b) = await run_operations(sqlite), await run_operations(ocean)
    for query in QUERIES:
        a = await sqlite.search(query, memories=(revs_a[-1],), mode="fts", explain=True)
        b = await ocean.search(query, memories=(revs_b[-1],), mode="fts", explain=True)
        assert {h.entry_id for h in a} == {h.entry_id for h in b}, query
        signals = lambda res: {(d.candidate.entry_id, d.candidate.matched_terms, d.admitted) for d in res.decisions}  # noqa: E731
        assert signals(a) == signals(b), query
        if len(a) == 1:
            assert a.hits == b.hits


async def test_same_admitted_vector_and_hybrid_sets_with_each_real_model(tmp_path, oceanbase_url, profile_model):
    """Per embedding profile: LOW (a lenient raw-cosine floor) and the profile's own default."""
    from .test_vectors import DOCS, LOW, PARAPHRASES

    database = "pc_vparity_" + uuid.uuid4().hex[:12]
    sqlite = await pc.open(str(tmp_path / "vparity.db"), embedding=profile_model, ids=SequentialIds())
    ocean = await pc.open(database_url(oceanbase_url, database), embedding=profile_model, ids=SequentialIds())
    try:
        heads = []
        for svc in (sqlite, ocean):
            heads.append(await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", d) for d in DOCS)))
        assert heads[0].content_hash == heads[1].content_hash
        queries = [q for q, _ in PARAPHRASES] + ["install javascript dependencies", "Sunday staging data",
                                                 "周日 预发布 环境 数据"]
        for query, mode, policy in itertools.product(queries, ("vector", "hybrid"), (LOW, sqlite.policy)):
            a = await sqlite.search(query, memories=(heads[0],), mode=mode, policy=policy, explain=True)
            b = await ocean.search(query, memories=(heads[1],), mode=mode, policy=policy, explain=True)
            assert {h.entry_id for h in a} == {h.entry_id for h in b}, (query, mode)
            cos = lambda r: {d.candidate.entry_id: d.candidate.cosine for d in r.decisions if d.candidate.channel == "vector"}  # noqa: E731
            ca, cb = cos(a), cos(b)
            assert ca.keys() == cb.keys() and all(abs(ca[k] - cb[k]) < 1e-4 for k in ca), (query, mode)
    finally:
        await sqlite.close()
        await ocean.close()
        drop_database(oceanbase_url, database)


def _bundled_memories(corpus: str) -> dict[str, list[pc.MemoryEntryInput]]:
    """The active entries of a bundled corpus, per memory, as they stand at the end."""
    import json
    from pathlib import Path

    memories: dict[str, list[pc.MemoryEntryInput]] = {}
    path = Path(__file__).parents[2] / "datasets" / corpus / "memories.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["state"] == "active":
            memories.setdefault(record["memory"], []).append(pc.MemoryEntryInput(record["kind"], record["text"]))
    return memories


async def test_a_query_matching_more_rows_than_the_pool_has_the_same_fts_pool_on_both_databases(both):
    """bm25 and OceanBase's MATCH score cut a pool of 32 at different rows once more rows
    match (these two queries of the bundled harbor-web corpus: 38 and 135 matching
    entries; under a pool of the engines' top 32 their admitted sets differed). The
    pool is chosen from a deeper read by a rule both databases compute alike."""
    sqlite, ocean = both
    heads = []
    for svc in (sqlite, ocean):
        made = {}
        for memory, entries in sorted(_bundled_memories("harbor-web").items()):
            made[memory] = await svc.remember(None, entries=tuple(entries))
        heads.append(made)
    assert heads[0]["repo"].content_hash == heads[1]["repo"].content_hash
    for query in ("How long is the tRPC client request timeout in the browser?",
                  "Does pnpm dev:all start both the web app and the BFF?"):
        for mode in ("fts",):
            results = [await svc.search(query, memories=(h["repo"],), mode=mode, explain=True)
                       for svc, h in zip((sqlite, ocean), heads)]
            pools = [{d.candidate.entry_id for d in r.decisions} for r in results]
            admitted = [{d.candidate.entry_id for d in r.decisions if d.admitted} for r in results]
            assert len(pools[0]) == sqlite.policy.pool_size(8), query
            assert pools[0] == pools[1], query
            assert admitted[0] == admitted[1], query
