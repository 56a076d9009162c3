"""Loading a corpus through the public service (both databases), and the embedding
cache that lets both databases share one embedding of every text."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from powercontext.eval.corpora.datasets import DatasetError, MemoryRecord, load
from powercontext.eval.running.embedcache import CachingEmbedding, profile_key
from powercontext.eval.running.loader import LoadError, load_corpus

from powercontext.canonical import SequentialIds
from powercontext.model import EmbeddingProfile

from .fakes import ENTRIES, QRELS, QUERIES, HashEmbedding, write_corpus


@pytest.fixture
def tiny(tmp_path):
    return load(write_corpus(tmp_path / "tiny"))


async def test_load_writes_history_forgets_inactive_and_maps_ids(open_service, tiny):
    svc = await open_service(ids=SequentialIds("tny"))
    loaded = await load_corpus(svc, tiny)
    assert set(loaded.entry_ids) == {e["id"] for e in ENTRIES}
    # batched: repo = create + 2 history depths + forget, user = create + forget
    assert loaded.writes == 6
    assert loaded.heads["repo"].revision == 4 and loaded.heads["user"].revision == 2
    memory, entry_id = loaded.entry_ids["tny-0004"]
    lineage = await svc.lineage(loaded.heads[memory], entry_id)
    record = tiny.entry("tny-0004")
    assert [v.text for v in lineage] == [*record.history, record.text]
    inactive = {v.entry_id for m, ref in loaded.heads.items() for v in await svc.entries(ref, state="inactive")}
    assert inactive == {loaded.entry_ids[e["id"]][1] for e in ENTRIES if e["state"] == "inactive"}
    assert loaded.corpus_id(loaded.heads["repo"].artifact_id, entry_id) == "tny-0004"
    hits = (await svc.search("pnpm JavaScript dependencies", loaded.refs(["repo"]), mode="fts")).hits
    assert loaded.corpus_id(hits[0].memory_ref.artifact_id, hits[0].entry_id) == "tny-0004"
    version = await svc.entry(loaded.heads["repo"], loaded.entry_ids["tny-0001"][1])
    assert [s.name for s in version.sources] == ["src_env"]


async def test_identical_first_texts_are_refused_not_silently_merged(open_service, tmp_path):
    twin = dict(ENTRIES[2], id="tny-0099")
    folder = write_corpus(tmp_path / "twin", entries=[*ENTRIES, twin], queries=QUERIES, qrels=QRELS)
    with pytest.raises(DatasetError, match="entry 'tny-0099' starts with the same kind, text and sources as 'tny-0003'"):
        load(folder)  # validation refuses it before any database is touched
    # and the loader still checks what the database holds, for a corpus that bypassed validation
    corpus = load(write_corpus(tmp_path / "ok"))
    corpus = dataclasses.replace(corpus, memories=(*corpus.memories, MemoryRecord(**{**twin, "history": ()})))
    svc = await open_service(ids=SequentialIds("tny"))
    with pytest.raises(LoadError, match="tny-0003 and tny-0099"):
        await load_corpus(svc, corpus)


class CountingModel(HashEmbedding):
    pass


async def test_cache_embeds_each_text_once_and_persists_exact_vectors(tmp_path):
    model = CountingModel()
    cache = CachingEmbedding(model, tmp_path)
    first = await cache.embed(("alpha beta", "gamma", "alpha beta"))
    assert model.texts == 2  # the repeated text is embedded once
    assert first.vectors[0] == first.vectors[2] == HashEmbedding.vector("alpha beta")
    again = await cache.embed(("gamma", "alpha beta"))
    assert model.texts == 2 and cache.hits == 1 + 2
    cache.save()
    reopened = CachingEmbedding(CountingModel(), tmp_path)
    assert len(reopened) == 2
    assert (await reopened.embed(("gamma",))).vectors[0] == HashEmbedding.vector("gamma") == again.vectors[0]
    assert reopened.model.texts == 0
    n = await reopened.prefetch(["gamma", "delta", "epsilon"])
    assert n == 2 and reopened.model.texts == 2
    assert np.array_equal(reopened.vector("delta"), np.array(HashEmbedding.vector("delta")))


def test_cache_files_are_keyed_by_the_whole_profile(tmp_path):
    a = EmbeddingProfile("p", "model-a", 64)
    b = EmbeddingProfile("p", "model-b", 64)
    assert profile_key(a) != profile_key(b) and profile_key(a).startswith("p-")


async def test_a_service_on_the_cache_embeds_nothing_twice_across_backends(open_service, tiny, tmp_path):
    model = CountingModel()
    cache = CachingEmbedding(model, tmp_path)
    from powercontext.eval.running.collect import corpus_queries, corpus_texts

    await cache.prefetch(corpus_texts([tiny]), queries=corpus_queries([tiny]))
    embedded = model.texts
    for _ in range(2):  # the same corpus into two fresh databases
        svc = await open_service(embedding=cache, ids=SequentialIds("tny"))
        loaded = await load_corpus(svc, tiny)
        for q in tiny.queries:
            await svc.search(q.text, loaded.refs(q.memories), mode="hybrid")
    assert model.texts == embedded  # every entry text and query was served from the cache
    assert embedded == len(corpus_texts([tiny])) + len(corpus_queries([tiny]))
