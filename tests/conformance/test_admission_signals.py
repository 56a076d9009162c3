"""What the admission families read, from real databases (issue 12, phase B): c̄ kept
exactly beside the head projection, each candidate's script and the profile's
coverage, and the analyzer version recorded, refused on mismatch and migrated."""

from __future__ import annotations

import math

import pytest

import powercontext as pc
from powercontext import analyzer
from powercontext.backends import centroid
from powercontext.canonical import SequentialIds
from powercontext.memory.admission import NO_ADMISSION

from ..support import sql

E = pc.MemoryEntryInput
DOCS = [
    "Run the documentation build with strict warnings before merging a docs change.",
    "Release builds are signed with the team's hardware key.",
    "数据库迁移必须由第二位工程师审核后才能合并。",
    "Write commit messages in the imperative mood with a short summary line.",
]


async def _stored_sum(svc, artifact_id):
    def run():
        with svc.backend._transaction(write=False) as tx:
            return svc.backend._read_vector_sum(tx, artifact_id)
    return await svc.backend._run(run)


async def _from_scratch(svc, artifact_id):
    """The sum a rebuild would compute: every stored head vector, added in one pass."""
    def run():
        with svc.backend._transaction(write=False) as tx:
            vectors = svc.backend._projection_vectors(tx, artifact_id, None)
        delta = centroid.VectorSumDelta(svc.backend.embedding_profile.dimension)
        for values in vectors.values():
            delta.add(values)
        return delta.count, delta.sums, vectors
    return await svc.backend._run(run)


async def test_the_vector_sum_is_exact_after_every_kind_of_write(open_service, minilm):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in DOCS))
    entries = {e.text: e for e in await svc.entries(rev)}
    rev = await svc.remember(rev, entries=(
        E("fact", "Release builds are signed with the hardware key in the safe.", entry=entries[DOCS[1]]),))
    rev = await svc.forget(rev, [entries[DOCS[3]]])
    rev = await svc.remember(rev, entries=(E("fact", "Staging is wiped every Sunday night."),))
    rev = await svc.reactivate(rev, [entries[DOCS[3]]])
    count, sums = await _stored_sum(svc, rev.artifact_id)
    expected_count, expected_sums, vectors = await _from_scratch(svc, rev.artifact_id)
    assert count == expected_count == len((await svc.entries(rev))) == 5
    assert sums == expected_sums  # integers: exactly, not approximately
    # and it is the mean of the stored vectors
    mean = centroid.mean([(count, sums)], len(sums))
    for d in (0, 17, 383):
        assert math.isclose(mean[d], sum(v[d] for v in vectors.values()) / 5, abs_tol=1e-9)
    # a rebuild re-embeds (batching moves the last float bits) and re-sums what it stored
    await svc.rebuild_projections([rev])
    count, sums = await _stored_sum(svc, rev.artifact_id)
    assert (count, sums) == (await _from_scratch(svc, rev.artifact_id))[:2]


async def test_the_vector_sum_reads_its_vectors_in_parts(open_service, minilm, monkeypatch):
    # A 40k-entry remember() once bound 40k entry ids in the one IN list that read the
    # vectors entering c̄ ("too many SQL variables"). Entering vectors are no longer read
    # back (they are summed as the database will return them: vector_values.py); the
    # vectors leaving c̄ are, and that read is split like every per-entry statement. The
    # part size is forced small so five entries prove it.
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    monkeypatch.setattr(svc.backend, "in_list_size", 2)
    seen = []
    real = svc.backend._projection_vectors

    class Counting:  # the transaction's cursor, counting what each statement binds
        def __init__(self, tx):
            self.tx, self.bound = tx, []

        def execute(self, sql, params=()):
            self.bound.append(len(params))
            return self.tx.execute(sql, params)

        def __getattr__(self, name):
            return getattr(self.tx, name)

    def spying(tx, artifact_id, entry_ids):
        counting = Counting(tx)
        got = real(counting, artifact_id, entry_ids)
        seen.append((None if entry_ids is None else len(entry_ids), len(got), counting.bound))
        return got

    monkeypatch.setattr(svc.backend, "_projection_vectors", spying)
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in DOCS + ["Staging is wiped every Sunday."]))
    assert seen == []  # the five entering vectors were not read back
    count, sums = await _stored_sum(svc, rev.artifact_id)
    assert (count, sums) == (await _from_scratch(svc, rev.artifact_id))[:2]
    seen.clear()  # _from_scratch read every vector through the spy
    rev = await svc.forget(rev, [e for e in await svc.entries(rev) if e.text != DOCS[0]])
    # the four leaving vectors came back, in two statements of ≤ 2 ids (+ the Memory)
    assert seen == [(4, 4, [3, 3])]
    count, sums = await _stored_sum(svc, rev.artifact_id)
    assert (count, sums) == (await _from_scratch(svc, rev.artifact_id))[:2]
    assert count == 1


async def test_candidates_carry_the_centred_cosine_and_scripts(open_service, minilm):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    r1 = await svc.remember(None, entries=tuple(E("fact", t) for t in DOCS))
    r2 = await svc.remember(None, entries=(E("fact", "Deploys happen on Tuesdays only."),))
    query = "how are release binaries signed"
    retrieval, used, _ = await svc.retrieve(query, (r1, r2), mode="hybrid")
    assert used == "hybrid"
    (qvec,) = (await minilm.embed((query,))).vectors
    _, _, v1 = await _from_scratch(svc, r1.artifact_id)
    _, _, v2 = await _from_scratch(svc, r2.artifact_id)
    allv = [*v1.values(), *v2.values()]
    cbar = [sum(v[d] for v in allv) / len(allv) for d in range(len(qvec))]
    qc = sum(a * b for a, b in zip(qvec, cbar))
    vector = retrieval.channels["vector"]
    assert len(vector) == 5
    for cand in vector:
        assert cand.centred == pytest.approx(cand.cosine - qc, abs=1e-6)
        assert cand.query_script == "latin"
        assert cand.script == ("cjk" if cand.text == DOCS[2] else "latin")
        # MiniLM declares Latin only: the Chinese entry is outside its coverage
        assert cand.covered is (cand.script == "latin")
    assert {c.script for c in retrieval.channels["fts"]} <= {"latin", "cjk"}
    assert all(c.centred is None and c.query_script == "latin" for c in retrieval.channels["fts"])


async def test_a_new_database_records_the_analyzer_it_was_opened_with(open_service, backend_name):
    svc = await open_service(analyzer="v2", ids=SequentialIds())
    assert svc.backend.analyzer.version == "v2"
    key = "key" if backend_name == "sqlite" else "`key`"
    assert await sql(svc, f"SELECT value FROM powercontext_schema WHERE {key} = 'analyzer'") == [("v2",)]
    rev = await svc.remember(None, entries=(E("fact", "Keep the validation convention for docs."),))
    res = await svc.search("which conventions apply", (rev,), mode="fts", policy=NO_ADMISSION)
    assert [h.text for h in res] == ["Keep the validation convention for docs."]
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    with pytest.raises(pc.AnalyzerMismatchError, match="indexed with analyzer v2, not v1.*rebuild_projections"):
        await pc.open(target, analyzer="v1")
    again = await pc.open(target)  # no analyzer named: the database's own
    try:
        assert again.backend.analyzer.version == "v2"
    finally:
        await again.close()
    with pytest.raises(pc.InvalidMemoryRequestError, match="unknown analyzer 'v9'"):
        await pc.open(target, analyzer="v9")


async def test_the_analyzer_migration_rebuilds_the_full_text_projection(open_service, backend_name, minilm):
    svc = await open_service(embedding=minilm, analyzer="v1", ids=SequentialIds())  # a database made before v2
    assert svc.backend.analyzer.version == "v1" and analyzer.ANALYZER_VERSION == "v2"
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in DOCS))
    rev2 = await svc.remember(None, entries=(E("fact", "Keep the validation convention for docs."),))
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    # A second handle, opened before the migration, with the model: a model-less one is
    # refused any write into this vector database anyway (EmbeddingRequiredError).
    other = await pc.open(target, embedding=minilm)
    try:
        assert not await svc.search("conventions", (rev2,), mode="fts", policy=NO_ADMISSION)
        before = await _stored_sum(svc, rev.artifact_id)
        texts = [e.text for e in [*await svc.entries(rev), *await svc.entries(rev2)]]
        differ = sum(analyzer.get("v1").searchable_text(t) != analyzer.get("v2").searchable_text(t) for t in texts)
        assert 0 < differ < len(texts)  # stemming changes some rows, not all
        rebuilt = await svc.rebuild_projections(analyzer="v2")
        assert rebuilt == {rev.artifact_id: 4, rev2.artifact_id: 1}
        assert svc.backend.analyzer.version == "v2"
        assert svc.backend.last_rebuild_writes == differ  # only rows whose text changes are rewritten
        hits = await svc.search("conventions", (rev2,), mode="fts", policy=NO_ADMISSION)
        assert [h.text for h in hits] == ["Keep the validation convention for docs."]
        stored = dict(await sql(svc, "SELECT entry_version_id, searchable_text FROM memory_entry_heads"))
        for e in [*await svc.entries(rev), *await svc.entries(rev2)]:
            assert stored[e.entry_version_id] == analyzer.get("v2").searchable_text(e.text)
        # vectors do not depend on the analyzer: hybrid still works, c̄ unchanged
        assert await _stored_sum(svc, rev.artifact_id) == before
        assert (await svc.search("hardware key", (rev,), mode="hybrid")).mode == "hybrid"
        # the older handle would mix analyzers: it is refused, nothing written
        with pytest.raises(pc.AnalyzerMismatchError, match="migrated to analyzer v2.*reopen"):
            await other.search("conventions", (rev2,), mode="fts")
        with pytest.raises(pc.AnalyzerMismatchError, match="migrated to analyzer v2"):
            await other.remember(rev2, entries=(E("fact", "never written"),))
        assert (await svc.head(rev2.artifact_id)).revision == 1
        with pytest.raises(pc.InvalidMemoryRequestError, match="every Memory"):
            await svc.rebuild_projections([rev], analyzer="v1")
        assert await svc.rebuild_projections(analyzer="v2") == rebuilt  # again: nothing to rewrite
        assert svc.backend.last_rebuild_writes == 0
    finally:
        await other.close()


async def test_support_weighs_the_query_terms_by_the_memorys_own_document_frequencies(open_service, minilm):
    """Issue 34: each candidate (both channels, hybrid) carries the IDF-weighted share of
    the query's terms its stored text holds, the frequencies counted over the searched
    Memory's active entries: a near miss holding only the common topic word scores low,
    the answer holding the rare specific word high. A search reading no full-text rows
    (vector mode) has no support signal."""
    from powercontext.backends.specificity import support

    svc = await open_service(embedding=minilm, ids=SequentialIds())
    texts = ["The metrics exporter is configured in deploy/prom.yaml and scrapes every 30 s.",
             "The metrics exporter listens on port 9464.",
             "The metrics dashboard lives in Grafana.",
             "Alerts about metrics go to the on-call channel.",
             "Deploy with make release."]
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in texts))
    gone = [e for e in await svc.entries(rev) if e.text == texts[4]]
    rev = await svc.forget(rev, gone)  # inactive entries count for nothing
    question = "Which port does the metrics exporter listen on?"
    res = await svc.search(question, memories=(rev,), mode="hybrid", policy=NO_ADMISSION, explain=True)
    an = svc.backend.analyzer
    terms = an.query_terms(question)
    active = [an.tokens(t) for t in texts[:4]]
    df = {t: sum(t in set(tokens) for tokens in active) for t in terms}
    assert df[an.query_terms("which")[0]] == 0  # not in any entry: left out of the weights
    by_text = {}
    for d in res.decisions:
        held = set(an.tokens(d.candidate.text)) & set(terms)
        assert d.candidate.support == pytest.approx(support(held, terms, df, 4), abs=1e-12)
        by_text[d.candidate.text] = d.candidate.support
    assert by_text[texts[1]] > 0.8 > by_text[texts[0]] > by_text[texts[2]] > 0.0
    vector_only = await svc.search(question, memories=(rev,), mode="vector", policy=NO_ADMISSION, explain=True)
    assert vector_only.decisions and all(d.candidate.support is None for d in vector_only.decisions)
    # the near-miss rule: holding the topic but little of the specific weight refuses a vector candidate
    strict = pc.AdmissionPolicy.floors(vector_min_cosine=-1.0, vector_min_support=0.5)
    kept = await svc.search(question, memories=(rev,), mode="vector", policy=strict)  # no signal: not refused
    assert {h.text for h in kept} >= {texts[0], texts[1]}
    hybrid = await svc.search(question, memories=(rev,), mode="hybrid", policy=strict, explain=True)
    refused = [d for d in hybrid.decisions if d.candidate.channel == "vector" and not d.admitted]
    assert {d.candidate.text for d in refused} >= {texts[0], texts[2]}
    assert all("not the question's specific terms" in d.reason for d in refused)
    assert texts[1] in {h.text for h in hybrid}
