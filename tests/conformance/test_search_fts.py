"""Search semantics (mode fts and auto without an embedding model)."""

import pytest

import powercontext as pc
from powercontext.memory.admission import INITIAL_POLICY, AdmissionPolicy

E = pc.MemoryEntryInput


@pytest.fixture
async def corpus(svc):
    r1 = await svc.remember(None, entries=(
        E("fact", "The dev server listens on port 5173 and proxies /api to port 8080."),
        E("constraint", "Never commit generated files under site/; the docs build creates them."),
        E("preference", "Run make test before every push; run make check before asking for review."),
        E("fact", "数据库连接超时设置为 30 秒，重试三次。"),
        E("decision", "We chose DuckDB for local analytics because it reads Parquet directly."),
    ))
    user = await svc.remember(None, entries=(E("preference", "Explain changes briefly and list the commands you ran."),))
    return r1, user


async def test_fts_finds_exact_terms_and_reports_mode(svc, corpus):
    r1, _ = corpus
    res = await svc.search("which port does the dev server use", memories=(r1,), mode="fts")
    assert res.mode == "fts" and [h.kind for h in res] == ["fact"]
    assert res[0].matched_by == ("fts",) and res[0].score == pytest.approx(1 / 61)
    assert "vector" not in repr(res[0]) or True  # lean hit: no vectors or tokens
    assert not hasattr(res[0], "embedding") and not hasattr(res[0], "searchable_text")


async def test_chinese_query_uses_cjk_tokens(svc, corpus):
    r1, _ = corpus
    res = await svc.search("连接超时是多少", memories=(r1,), mode="fts")
    assert [h.text for h in res] == ["数据库连接超时设置为 30 秒，重试三次。"]


async def test_below_threshold_candidates_never_fill_the_limit(svc, corpus):
    r1, _ = corpus
    res = await svc.search("parquet reader for spreadsheets and images and audio", memories=(r1,), limit=8, explain=True,
                           policy=INITIAL_POLICY)
    assert res.hits == () and res.decisions
    assert all(not d.admitted and "matched 1/6 terms, needs 2" in d.reason for d in res.decisions)
    assert "decision" in {d.candidate.kind for d in res.decisions}
    lax = await svc.search("parquet reader for spreadsheets and images and audio", memories=(r1,),
                           policy=AdmissionPolicy(fts_min_terms=1, fts_min_coverage=0.1))
    assert "decision" in [h.kind for h in lax] and len(lax) == len(res.decisions)


async def test_auto_without_embedding_is_fts_and_says_why(svc, corpus):
    r1, _ = corpus
    res = await svc.search("make test push", memories=(r1,), mode="auto")
    assert res.mode == "fts" and res.requested_mode == "auto" and "embedding" in res.fallback_reason
    for mode in ("vector", "hybrid"):
        with pytest.raises(pc.CapabilityNotSupportedError):
            await svc.search("make test", memories=(r1,), mode=mode)


async def test_several_memories_ranked_together_and_deduplicated(svc, corpus):
    r1, user = corpus
    res = await svc.search("list commands ran before review", memories=(r1, user, r1), mode="fts", policy=INITIAL_POLICY)
    assert {h.memory_ref for h in res} == {r1.ref, user.ref}
    assert len({(h.memory_ref, h.entry_id) for h in res}) == len(res)


async def test_non_head_search_is_refused(svc, corpus):
    r1, _ = corpus
    r2 = await svc.remember(r1, entries=(E("fact", "another"),))
    with pytest.raises(pc.CapabilityNotSupportedError, match="not the head"):
        await svc.search("port", memories=(r1,))
    assert len(await svc.search("port 5173", memories=(r2,))) == 1


async def test_bad_search_arguments(svc, corpus):
    r1, _ = corpus
    for kwargs in (dict(memories=()), dict(memories=(r1,), limit=0), dict(memories=(r1,), limit=True), dict(memories=(r1,), mode="semantic")):
        with pytest.raises(ValueError):
            await svc.search("port", **kwargs)
    with pytest.raises(ValueError):
        await svc.search("   ", memories=(r1,))
    with pytest.raises(pc.ArtifactNotFoundError):
        await svc.search("port", memories=(pc.ArtifactRef("mem_art_nope", 1),))


async def test_query_with_no_terms_returns_nothing(svc, corpus):
    r1, _ = corpus
    assert (await svc.search("?! the of", memories=(r1,))).hits == ()


async def test_ties_are_broken_by_ids(svc):
    r1 = await svc.remember(None, entries=(E("fact", "zeta alpha"), E("fact", "alpha zeta")))
    res = await svc.search("alpha", memories=(r1,), mode="fts")
    assert len(res) == 2 and res[0].score > res[1].score or [h.entry_id for h in res] == sorted(h.entry_id for h in res)


async def test_results_and_candidates_have_lean_reprs(svc, corpus):
    r1, _ = corpus
    res = await svc.search("连接超时是多少", memories=(r1,), mode="fts", explain=True)
    text = repr(res) + repr(res.decisions)
    assert "u_" not in text and "b_" not in text and "mode=fts" in text and "terms" in text


async def test_unknown_source_is_a_typed_error(svc):
    with pytest.raises(pc.SourceNotFoundError, match="persist"):
        await svc.sources.get("src_missing")


HOSTILE = [
    '"unbalanced quote', "a' OR '1'='1", "NEAR(port server, 2)", "port* -server +dev", "<dev >server ~port",
    "(port) AND (server)", "col:port", "^port", "\\x00port\x00", "port\\", "%port_%", "🚀 port 🚀",
    "שרת port", "e\u0301cole port", "ＡＰＩ ｐｏｒｔ", "u_4e2d b_4e2d_6587 服务器端口", "x" * 5000, "port " * 300,
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
async def test_hostile_queries_never_reach_match_syntax(svc, corpus, query):
    r1, _ = corpus
    res = await svc.search(query, memories=(r1,), mode="fts", explain=True)
    assert all(d.candidate.entry_id for d in res.decisions)
    assert len(res) <= 8


async def test_a_database_indexed_by_another_analyzer_is_refused(open_service, backend_name):
    from ..support import sql

    svc = await open_service()
    await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "indexed"),))
    key = "key" if backend_name == "sqlite" else "`key`"
    await sql(svc, f"UPDATE powercontext_schema SET value = 'v0' WHERE {key} = 'analyzer'")
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    with pytest.raises(pc.AnalyzerMismatchError, match="analyzer 'v0', which this library does not know"):
        await pc.open(target)
