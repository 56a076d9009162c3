"""Vector and hybrid retrieval with the real embedding model, on every backend."""

import dataclasses
import math

import pytest

import powercontext as pc
from powercontext import analyzer
from powercontext.canonical import SequentialIds
from powercontext.embedding import (
    EmbeddingResult,
    SentenceTransformerEmbedding,
    minilm_path,
)
from powercontext.errors import EmbeddingUnavailableError, InvalidEmbeddingError
from powercontext.memory.admission import AdmissionPolicy
from powercontext.memory.arguments import as_ref

from ..support import counts, sql

E = pc.MemoryEntryInput
DOCS = [
    "Use pnpm, never npm or yarn, to install JavaScript dependencies.",
    "Database migrations must be reviewed by a second engineer before they are merged.",
    "The staging cluster is wiped every Sunday night, so do not keep data there.",
    "Release builds are signed with the team's hardware key.",
    "Write commit messages in the imperative mood with a short summary line.",
]
# Paraphrases that share no analyzer term with their answer (checked below).
PARAPHRASES = [
    ("what package manager do we rely on", 0),
    ("who has to approve schema changes", 1),
    ("can I store files on the pre-production environment long term", 2),
    ("how are shipped binaries authenticated", 3),
    ("how should I phrase my git history", 4),
]
LOW = AdmissionPolicy.floors(fts_min_terms=2, fts_min_coverage=0.25, vector_min_cosine=0.2)  # the RFC's rule, lenient


class OutageEmbedding:
    """Test double for an outage: the real model, except while ``down`` is set."""

    def __init__(self, real):
        self.real, self.down = real, False

    @property
    def profile(self):
        return self.real.profile

    async def embed(self, texts):
        if self.down:
            raise EmbeddingUnavailableError("model server is down (simulated)")
        return await self.real.embed(texts)


class CorruptingEmbedding(OutageEmbedding):
    """Test double returning broken vectors from the real model's output."""

    def __init__(self, real, corrupt):
        super().__init__(real)
        self.corrupt = corrupt

    async def embed(self, texts):
        result = await self.real.embed(texts)
        return EmbeddingResult(tuple(self.corrupt(v) for v in result.vectors))


@pytest.fixture
async def vsvc(open_service, minilm):
    return await open_service(embedding=minilm, ids=SequentialIds())


@pytest.fixture
async def docs(vsvc):
    rev = await vsvc.remember(None, entries=tuple(E("fact", d) for d in DOCS))
    by_text = {e.text: e for e in await vsvc.entries(rev)}
    return rev, [by_text[d].entry_id for d in DOCS]


async def test_paraphrases_are_found_only_through_the_vector_channel(vsvc, docs):
    rev, ids = docs
    for query, answer in PARAPHRASES:
        assert not set(analyzer.query_terms(query)) & set(analyzer.tokens(DOCS[answer]))
        assert (await vsvc.search(query, memories=(rev,), mode="fts")).hits == ()
        res = await vsvc.search(query, memories=(rev,), mode="vector", policy=LOW)
        assert res.mode == "vector" and res[0].entry_id == ids[answer] and res[0].matched_by == ("vector",), query
        hybrid = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)
        assert hybrid[0].entry_id == ids[answer], query


async def test_hybrid_finds_the_lexical_and_the_semantic_answer(vsvc, docs):
    rev, ids = docs
    query = "javascript dependencies, and who has to approve schema changes"
    fts = await vsvc.search(query, memories=(rev,), mode="fts", policy=LOW)
    assert [h.entry_id for h in fts] == [ids[0]]
    hybrid = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)
    found = {h.entry_id: h for h in hybrid}
    assert ids[0] in found and ids[1] in found
    assert "fts" in found[ids[0]].matched_by and found[ids[1]].matched_by == ("vector",)
    auto = await vsvc.search(query, memories=(rev,), mode="auto", policy=LOW)
    assert auto.mode == "hybrid" and auto.hits == hybrid.hits


async def test_a_warm_hybrid_search_is_one_round_trip(vsvc, docs, minilm, backend_name, monkeypatch):
    # Planning reads what open() found and the per-head completeness already known, so
    # a warm hybrid search hops to the worker thread once: its query transaction (which
    # re-confirms the projection itself). Each hop costs milliseconds on a busy machine.
    rev, _ = docs
    query = "javascript dependencies, and who has to approve schema changes"
    first = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)
    hops = []
    real = vsvc.backend._run

    async def counting(fn, *args):
        hops.append(fn.__name__)
        return await real(fn, *args)

    monkeypatch.setattr(vsvc.backend, "_run", counting)
    again = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)
    assert hops == ["_retrieve_sync"] and again.hits == first.hits
    # a head this handle committed on a known-complete head, with a vector for every
    # row it wrote, is known complete: the first search on it is one hop too (the full
    # check reads and hashes every head row: 0.3 s at 10k entries, seconds at 100k)
    rev2 = await vsvc.remember(rev, entries=(E("fact", "Schema changes need a second reviewer."),))
    hops.clear()
    await vsvc.search(query, memories=(rev2,), mode="hybrid", policy=LOW)
    assert hops == ["_retrieve_sync"]
    # a head another handle committed is not known here: planning asks the database
    other = await pc.open(vsvc.backend.path if backend_name == "sqlite" else vsvc.backend.url, embedding=minilm)
    try:
        rev3 = await other.remember(rev2, entries=(E("fact", "Hotfixes skip the release train."),))
    finally:
        await other.close()
    hops.clear()
    await vsvc.search(query, memories=(rev3,), mode="hybrid", policy=LOW)
    assert hops == ["_vector_complete_sync", "_retrieve_sync"]


async def test_a_warm_search_reads_c_bar_once_per_head_and_projection_generation(vsvc, docs, minilm, backend_name,
                                                                                  monkeypatch):
    # Issue 15: every statement is a round trip on OceanBase. A warm hybrid search reads
    # the heads with the schema values it checks in one statement, the heads again with
    # the head Revisions' rows in one statement after the channel queries, and the
    # vector sums behind c̄ once per (heads, projection generation). A rebuild in
    # another handle that rewrites rows bumps the generation, so the sums are read
    # again there; one that finds nothing to rewrite leaves it.
    rev, _ = docs
    query = "javascript dependencies, and who has to approve schema changes"
    first = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW, explain=True)
    reads = []
    for name in ("_read_vector_sum", "_read_schema_value", "_projection_generation", "_read_revision",
                 "_read_head", "_search_state", "_heads_and_revisions"):
        real = getattr(vsvc.backend, name)
        monkeypatch.setattr(vsvc.backend, name, lambda *a, _n=name, _r=real: reads.append(_n) or _r(*a))
    again = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW, explain=True)
    assert again.hits == first.hits and again.decisions == first.decisions
    # no separate Revision row read; SQLite reads the vector channel on a second
    # connection and checks there that it reads the same heads (sqlite/search.py)
    assert reads == ["_search_state"] * (2 if backend_name == "sqlite" else 1) + ["_heads_and_revisions"]
    other = await pc.open(vsvc.backend.path if backend_name == "sqlite" else vsvc.backend.url, embedding=minilm)
    try:
        await other.rebuild_projections((rev,))  # nothing to rewrite
        reads.clear()
        assert (await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)).hits == first.hits
        assert reads.count("_read_vector_sum") == 0
        await sql(other, "UPDATE memory_entry_heads SET searchable_text = 'stale' WHERE entry_id = ?", (docs[1][0],))
        await other.rebuild_projections((rev,))  # rewrites that row
    finally:
        await other.close()
    reads.clear()
    rebuilt = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW, explain=True)
    assert reads.count("_read_vector_sum") == 1 and rebuilt.hits == first.hits


async def test_a_carried_completeness_does_not_outlive_a_rebuild_without_vectors(vsvc, docs, backend_name):
    """A head this handle committed is known complete without a full check (c434de8),
    per projection generation. Another handle's rebuild without a model leaves rows with
    no vector and moves the generation: the search must see that, not the carried
    answer."""
    rev, _ = docs
    query = "who has to approve schema changes"
    assert (await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)).hits
    rev2 = await vsvc.remember(rev, entries=(E("fact", "Schema changes need a second reviewer."),))
    assert (await vsvc.search(query, memories=(rev2,), mode="hybrid", policy=LOW)).hits  # carried
    other = await pc.open(vsvc.backend.path if backend_name == "sqlite" else vsvc.backend.url)  # no model
    try:
        # the backend's rebuild given no vectors: what a model-less handle's rebuild_projections
        # wrote before it was refused (test_embedding_required.py)
        assert await other.backend.rebuild(as_ref(rev2), {}) == len(DOCS) + 1
    finally:
        await other.close()
    with pytest.raises(pc.CapabilityNotSupportedError, match="rebuild_projections"):
        await vsvc.search(query, memories=(rev2,), mode="hybrid", policy=LOW)


async def test_a_head_this_handle_rebuilt_with_every_vector_is_known_complete(vsvc, docs, minilm, backend_name,
                                                                              monkeypatch):
    """The first search after a rebuild by this handle does not re-check the projection
    it has just written with a validated vector on every row (at 10k entries that
    check took 29 ms on SQLite, 116 ms on OceanBase). A rebuild that wrote rows without a vector (model
    down) leaves the next search to check, and it finds the projection incomplete."""
    rev, _ = docs
    query = "who has to approve schema changes"
    first = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)
    checks = []
    for name in ("_projection_complete", "_missing_vectors"):
        real = getattr(vsvc.backend, name)
        monkeypatch.setattr(vsvc.backend, name, lambda *a, _n=name, _r=real: checks.append(_n) or _r(*a))
    assert await vsvc.rebuild_projections((rev,)) == {rev.artifact_id: len(DOCS)}
    rebuilt = await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)
    assert checks == [] and rebuilt.hits == first.hits
    # rows rewritten without vectors by the same handle's backend (what its rebuild did without
    # its model before that was refused): the search checks
    assert await vsvc.backend.rebuild(as_ref(rev), {}) == len(DOCS)
    with pytest.raises(pc.CapabilityNotSupportedError, match="rebuild_projections"):
        await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)
    assert checks  # judged by a check, not by what the earlier rebuild left known
    # and a rebuild with the model back makes it complete and known again
    await vsvc.rebuild_projections((rev,))
    checks.clear()
    assert (await vsvc.search(query, memories=(rev,), mode="hybrid", policy=LOW)).hits == first.hits
    assert checks == []


async def test_cosine_threshold_is_applied(vsvc, docs):
    rev, ids = docs
    res = await vsvc.search("who has to approve schema changes", memories=(rev,), mode="vector", explain=True,
                            policy=AdmissionPolicy.floors(vector_min_cosine=0.99))
    assert res.hits == () and res.decisions and all(not d.admitted for d in res.decisions)
    cosines = [d.candidate.cosine for d in res.decisions]
    assert cosines == sorted(cosines, reverse=True) and all(-1.0 <= c <= 1.0 for c in cosines)


async def test_revising_an_entry_re_embeds_it(vsvc, docs, minilm):
    """The FTS channel would find the new text even without re-embedding, so check the
    stored vector itself (decision record 004)."""
    rev, ids = docs
    old = await vsvc.entry(rev, ids[3])
    before = vsvc.backend.stored_vector(old.entry_version_id)
    new_text = "Release builds are notarized by the platform vendor, not signed locally."
    rev2 = await vsvc.remember(rev, entries=(E("fact", new_text, entry=old),))
    new = await vsvc.entry(rev2, ids[3])
    after = vsvc.backend.stored_vector(new.entry_version_id)
    assert before is not None and after is not None
    assert vsvc.backend.stored_vector(old.entry_version_id) is None  # no stale vector survives
    expected = minilm.encode([new_text])[0]
    assert max(abs(a - b) for a, b in zip(after, expected)) < 1e-5
    assert sum(a * b for a, b in zip(after, before)) < 0.99


async def test_model_outage_commits_fts_only_until_rebuild(open_service, minilm):
    model = OutageEmbedding(minilm)
    svc = await open_service(embedding=model, ids=SequentialIds())
    rev = await svc.remember(None, entries=tuple(E("fact", d) for d in DOCS[:3]))
    # the handle knows rev's projection complete; a commit that writes a row without a
    # vector must not carry that to its head
    assert (await svc.search("who signs release builds", memories=(rev,), mode="auto")).mode == "hybrid"
    model.down = True
    rev2 = await svc.remember(rev, entries=(E("fact", DOCS[3]),))
    added = rev2.changes[0].entry_id
    assert svc.backend.stored_vector(rev2.manifest.get(added).entry_version_id) is None
    res = await svc.search("release builds signed", memories=(rev2,), mode="auto")
    assert res.mode == "fts" and "rebuild" in res.fallback_reason and len(res) == 1
    for mode in ("vector", "hybrid"):
        with pytest.raises(pc.CapabilityNotSupportedError):
            await svc.search("release builds signed", memories=(rev2,), mode=mode)
    # a revision while down must not keep the old vector either
    (first,) = [e for e in await svc.entries(rev2) if e.text == DOCS[0]]
    rev3 = await svc.remember(rev2, entries=(E("fact", DOCS[0] + " Lockfiles are committed.", entry=first),))
    assert svc.backend.stored_vector(rev3.manifest.get(first.entry_id).entry_version_id) is None
    model.down = False
    assert (await svc.search("who has to approve schema changes", memories=(rev3,), mode="auto")).mode == "fts"
    assert await svc.rebuild_projections() == {rev3.artifact_id: 4}
    res = await svc.search("who has to approve schema changes", memories=(rev3,), mode="auto", policy=LOW)
    assert res.mode == "hybrid" and res[0].text == DOCS[1]


async def test_deactivation_removes_the_whole_projection_and_reactivation_restores_it(vsvc, docs):
    rev, ids = docs
    entry = await vsvc.entry(rev, ids[2])
    rev2 = await vsvc.forget(rev, entries=(entry,))
    assert vsvc.backend.stored_vector(entry.entry_version_id) is None
    assert (await sql(vsvc, "SELECT COUNT(*) FROM memory_entry_heads WHERE entry_id = ?", (ids[2],)))[0][0] == 0
    rev3 = await vsvc.reactivate(rev2, entries=(entry,))
    assert vsvc.backend.stored_vector(entry.entry_version_id) is not None
    res = await vsvc.search("can I store files on the pre-production environment long term", memories=(rev3,), mode="vector", policy=LOW)
    assert res[0].entry_id == ids[2]


@pytest.mark.parametrize(
    "corrupt",
    [lambda v: v[:-1], lambda v: (math.nan,) + v[1:], lambda v: (), lambda v: tuple(x * 2 for x in v),
     lambda v: ("0.1",) + v[1:], lambda v: (None,) + v[1:]],
    ids=["wrong-dimension", "nan", "empty", "not-unit", "not-a-number", "none"],
)
async def test_bad_vectors_are_refused_and_nothing_is_written(open_service, minilm, corrupt):
    svc = await open_service(embedding=minilm, ids=SequentialIds())
    rev = await svc.remember(None, entries=(E("fact", DOCS[0]),))
    svc.embedding = CorruptingEmbedding(minilm, corrupt)
    before = await counts(svc)
    with pytest.raises(InvalidEmbeddingError):
        await svc.remember(rev, entries=(E("fact", DOCS[1]),))
    assert await counts(svc) == before


async def test_a_forged_embedding_hash_is_refused_inside_the_transaction(vsvc, docs, monkeypatch):
    rev, _ = docs
    real = vsvc._vectors_for

    async def forged(*args):
        vectors = await real(*args)
        return {k: ("0" * 64, v) for k, (h, v) in vectors.items()}

    monkeypatch.setattr(vsvc, "_vectors_for", forged)
    before = await counts(vsvc)
    with pytest.raises(InvalidEmbeddingError):
        await vsvc.remember(rev, entries=(E("fact", "a new fact"),))
    assert await counts(vsvc) == before


async def test_profile_is_fixed_when_the_database_is_created(open_service, minilm, tmp_path, backend_name, request):
    svc = await open_service(embedding=minilm)
    await svc.remember(None, entries=(E("fact", DOCS[0]),))
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    before = await counts(svc)
    other = SentenceTransformerEmbedding(minilm_path(), profile=dataclasses.replace(minilm.profile, profile_id="minilm-other"))
    with pytest.raises(pc.BackendUnavailableError, match="cannot be opened with"):
        await pc.open(target, embedding=other)
    assert await counts(svc) == before
    # opened without a model: full-text only, and auto says why
    plain = await pc.open(target)
    try:
        head = (await plain.memories())[0]
        res = await plain.search("pnpm dependencies", memories=(head,), mode="auto")
        assert res.mode == "fts" and len(res) == 1 and "embedding" in res.fallback_reason
    finally:
        await plain.close()


def _reopen_target(svc, backend_name):
    return svc.backend.path if backend_name == "sqlite" else svc.backend.url


async def test_after_a_reopen_a_complete_projection_is_proven_once(vsvc, docs, minilm, backend_name, monkeypatch):
    """A handle that did not write the head checks every row's embedding hash once. On
    OceanBase the server hashes them (no row comes back to Python); on SQLite they are
    read and hashed here."""
    rev, _ = docs
    fresh = await pc.open(_reopen_target(vsvc, backend_name), embedding=minilm)
    try:
        reads = []
        real = fresh.backend._vector_rows
        monkeypatch.setattr(fresh.backend, "_vector_rows", lambda tx, a: reads.append(a) or real(tx, a))
        for query, _ in PARAPHRASES[:2]:
            assert (await fresh.search(query, memories=(rev,), mode="hybrid", policy=LOW)).hits
        assert reads == ([] if backend_name == "oceanbase" else [rev.artifact_id])
    finally:
        await fresh.close()


@pytest.mark.parametrize("tamper", ["another hash", "the hash in upper case", "no vector"])
async def test_after_a_reopen_one_stale_vector_makes_the_projection_incomplete(vsvc, docs, minilm, backend_name, tamper):
    """The completeness check of a handle that did not write the head (server-side on
    OceanBase) finds one altered row among five: a hybrid search refuses, auto falls
    back to full-text. The upper-case hash is the same hex number: only an exact
    comparison tells it apart."""
    rev, _ = docs
    (entry, *_) = await vsvc.entries(rev)
    version = entry.entry_version_id
    if backend_name == "sqlite":
        table, where = "memory_entry_vector_metadata", "entry_version_id = ?"
    else:
        table, where = "memory_entry_heads", "entry_version_id = ?"
    ((stored,),) = await sql(vsvc, f"SELECT embedding_content_hash FROM {table} WHERE {where}", (version,))
    if tamper == "another hash":
        await sql(vsvc, f"UPDATE {table} SET embedding_content_hash = ? WHERE {where}", ("0" * 64, version))
    elif tamper == "the hash in upper case":
        await sql(vsvc, f"UPDATE {table} SET embedding_content_hash = ? WHERE {where}", (stored.upper(), version))
    elif backend_name == "sqlite":
        await sql(vsvc, "DELETE FROM memory_entry_search_vector WHERE rowid = "
                        "(SELECT projection_id FROM memory_entry_heads WHERE entry_version_id = ?)", (version,))
    else:
        await sql(vsvc, "UPDATE memory_entry_heads SET embedding = NULL WHERE entry_version_id = ?", (version,))
    fresh = await pc.open(_reopen_target(vsvc, backend_name), embedding=minilm)
    try:
        with pytest.raises(pc.CapabilityNotSupportedError, match="rebuild_projections"):
            await fresh.search(PARAPHRASES[0][0], memories=(rev,), mode="hybrid", policy=LOW)
        assert (await fresh.search(DOCS[0], memories=(rev,), mode="auto", policy=LOW)).mode == "fts"
    finally:
        await fresh.close()
