"""SQLite's search reads (backends/sqlite/search.py) on a real file with the real
MiniLM model: the vector statement's unfiltered first read returns exactly the
selection's top k (ties included) or falls back to the filtered read, and a hybrid
search's two channels read on two connections return what one connection reads."""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from pathlib import Path

import pytest

import powercontext as pc
from powercontext import analyzer
from powercontext.backends import vector_values
from powercontext.backends.plans import RetrievalRequest
from powercontext.memory import arguments

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
FILTERED = "v.rowid IN"  # in the filtered vector statement only


def corpus() -> tuple[list[str], list[str]]:
    texts, questions = [], []
    for name in ("atlas-etl", "harbor-web"):
        texts += [json.loads(line)["text"] for line in (DATASETS / name / "memories.jsonl").read_text().splitlines()]
        questions += [json.loads(line)["text"] for line in (DATASETS / name / "queries.jsonl").read_text().splitlines()]
    return texts, questions[::40]


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm):
    """Three Memories: ``big`` (most texts), ``small`` (a few), ``twin`` (copies of
    some of big's texts: equal vectors, so ties at equal distances across Memories),
    written and closed once for the module: (the folder holding search.db, the three
    Revisions, the questions). Embedding the texts was ~10 s of each test's setup."""
    texts, questions = corpus()
    folder = tmp_path_factory.mktemp("search")

    async def build():
        async with await pc.open(str(folder / "search.db"), embedding=minilm) as svc:
            big = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", t) for t in texts[:-20]))
            small = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", t) for t in texts[-20:]))
            twin = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", t) for t in texts[:30]))
        return big, small, twin
    return folder, asyncio.run(build()), questions


@pytest.fixture
async def loaded(built, tmp_path, minilm):
    """A copy of the module's file, opened: each test reads (or writes) its own."""
    folder, revisions, questions = built
    shutil.copytree(folder, tmp_path / "db")
    svc = await pc.open(str(tmp_path / "db" / "search.db"), embedding=minilm)
    yield svc, revisions, questions
    await svc.close()


def on_worker(backend, fn):
    return backend._executor.submit(fn).result()


def exact_top(backend, ids, vector, k):
    """The selection's top k by (distance, memory, entry), from every one of its rows."""
    def read():
        with backend._transaction(write=False) as tx:
            (count,) = tx.execute("SELECT COUNT(*) FROM memory_entry_heads WHERE memory_artifact_id IN "
                                  f"({','.join('?' * len(ids))})", ids).fetchone()
            rows = tx.execute(
                "SELECT h.memory_artifact_id, h.entry_id, h.entry_version_id, h.entry_content_hash, v.distance, "
                "h.searchable_text FROM memory_entry_search_vector AS v JOIN memory_entry_heads AS h "
                "ON h.projection_id = v.rowid WHERE v.embedding MATCH ? AND k = ? AND v.rowid IN "
                f"(SELECT projection_id FROM memory_entry_heads WHERE memory_artifact_id IN ({','.join('?' * len(ids))}))",
                (vector_values.float32_bytes(vector), count, *ids)).fetchall()
        return sorted(rows, key=lambda r: (r[4], r[0], r[1]))[:k]
    return on_worker(backend, read)


async def test_the_unfiltered_vector_read_is_the_selections_exact_top_k(loaded, minilm):
    svc, (big, small, twin), questions = loaded
    backend = svc.backend
    statements: list[str] = []
    on_worker(backend, lambda: backend._con.set_profile(lambda sql, ns: statements.append(sql)))
    selections = {"all": (big, small, twin), "big+twin": (big, twin), "big": (big,), "small": (small,)}
    answered_unfiltered = {name: 0 for name in selections}
    for question in questions:
        vector = (await minilm.embed([question])).vectors[0]
        for name, refs in selections.items():
            ids = [r.artifact_id for r in refs]
            for k in (1, 8, 32, 40):
                statements.clear()

                def read():
                    with backend._transaction(write=False) as tx:
                        return backend._vector_query(tx, ids, vector, k)
                got = on_worker(backend, read)
                if not any(FILTERED in s for s in statements):
                    answered_unfiltered[name] += 1
                assert got == exact_top(backend, ids, vector, k), (name, k, question)
    # Searching every Memory (or nearly all vectors) never needs the filtered statement;
    # a small Memory among big ones always does.
    total = len(questions) * 4
    assert answered_unfiltered["all"] == total
    assert answered_unfiltered["big+twin"] > 0.9 * total
    assert answered_unfiltered["small"] == 0


def hybrid_request(svc, rev, question, vector):
    terms = arguments.query_terms(question, svc.backend.analyzer)
    return RetrievalRequest(memories=(rev,), terms=terms, channels=("fts", "vector"), pool=svc.policy.pool_size(8),
                            query_vector=vector, query_script=analyzer.script(question))


async def test_concurrent_channels_return_the_candidates_of_one_connection(loaded, minilm):
    svc, (big, small, twin), questions = loaded
    backend = svc.backend
    threads: list[int] = []
    real = backend._vector_query

    def noting(tx, ids, vector, k):
        threads.append(threading.get_ident())
        return real(tx, ids, vector, k)
    backend._vector_query = noting
    worker = on_worker(backend, threading.get_ident)
    for question in questions:
        vector = (await minilm.embed([question])).vectors[0]
        request = hybrid_request(svc, big.ref, question, vector)
        threads.clear()
        backend.concurrent_channels = True
        together = await backend.retrieve(request)
        assert threads and worker not in threads  # read on the channel thread's connection
        backend.concurrent_channels = False
        one_by_one = await backend.retrieve(request)
        assert threads[-1] == worker
        assert together == one_by_one and together.channels["vector"]
    backend.concurrent_channels = True
    await svc.close()
    assert backend._channel_cons == []  # close() closed the second connection too


async def test_a_second_connection_on_another_snapshot_is_not_read(loaded, minilm, tmp_path):
    """A commit between the search's snapshot and the channel connection's: the vector
    statement runs on the search's own connection, so the hits are those of the
    requested Revision, never rows of a newer head checked against an older manifest."""
    svc, (big, small, twin), questions = loaded
    backend = svc.backend
    other = await pc.open(backend.path, embedding=minilm)
    loop = asyncio.get_running_loop()
    entries = await svc.entries(small)
    fired, threads = [], []
    real_read, real_query = backend._vector_read, backend._vector_query

    def commit_first(*args):
        if not fired:  # another handle moves the head before this connection's snapshot
            fired.append(True)
            asyncio.run_coroutine_threadsafe(other.forget(small, entries=entries[:10]), loop).result(timeout=60)
        return real_read(*args)

    def noting(tx, ids, vector, k):
        threads.append(threading.get_ident())
        return real_query(tx, ids, vector, k)
    backend._vector_read, backend._vector_query = commit_first, noting
    try:
        res = await svc.search(questions[0], memories=(small,), mode="hybrid",
                               policy=pc.AdmissionPolicy.floors(fts_min_terms=1, fts_min_coverage=0.0,
                                                                vector_min_cosine=-1.0))
    finally:
        await other.close()
    assert fired and (await svc.head(small.artifact_id)).revision == small.revision + 1
    assert threads == [on_worker(backend, threading.get_ident)]  # read on the search's own connection
    # every entry of Revision 1 competes (no floor): 8 hits, forgotten ones among them
    assert len(res.hits) == 8 and {h.entry_id for h in res.hits} <= {e.entry_id for e in entries}


def exact_fts_top(backend, ids, terms, k):
    """The selection's top k by (FTS5 rank, memory, entry), from every matching row."""
    def read():
        with backend._transaction(write=False) as tx:
            rows = tx.execute(
                "SELECT h.memory_artifact_id, h.entry_id, h.entry_version_id, h.entry_content_hash, h.searchable_text, "
                "f.rank FROM memory_entry_search_fts AS f JOIN memory_entry_heads AS h ON h.projection_id = f.rowid "
                f"WHERE memory_entry_search_fts MATCH ? AND h.memory_artifact_id IN ({','.join('?' * len(ids))})",
                (analyzer.fts5_match_expression(terms), *ids)).fetchall()
        return [r[:5] for r in sorted(rows, key=lambda r: (r[5], r[0], r[1]))[:k]]
    return on_worker(backend, read)


async def test_the_unfiltered_full_text_read_is_the_selections_exact_top_k(loaded):
    svc, (big, small, twin), questions = loaded
    backend = svc.backend
    statements: list[str] = []
    on_worker(backend, lambda: backend._con.set_profile(lambda sql, ns: statements.append(sql)))
    selections = {"all": (big, small, twin), "big": (big,), "small": (small,)}
    answered_unfiltered = {name: 0 for name in selections}
    for question in questions:
        terms = arguments.query_terms(question, backend.analyzer)
        for name, refs in selections.items():
            ids = [r.artifact_id for r in refs]
            for k in (1, 8, 64, 256):
                statements.clear()

                def read():
                    with backend._transaction(write=False) as tx:
                        return backend._fts_query(tx, ids, terms, k)
                got = on_worker(backend, read)
                if not any("h.memory_artifact_id IN" in s for s in statements):
                    answered_unfiltered[name] += 1
                assert got == exact_fts_top(backend, ids, terms, k), (name, k, question)
    assert answered_unfiltered["all"] == len(questions) * 4
    assert answered_unfiltered["small"] < len(questions) * 4  # some reads fall back
