"""Search as a user sees it (issue 37): end-to-end latency with the query's embedding
included, per bundled embedding profile, at 1k/10k/100k entries on SQLite and a local
OceanBase (seekdb); the vector channel's recall against exact search; OceanBase's plans.

    .venv/bin/python benchmarks/search_bench.py [--profiles minilm,e5] [--sizes 1000,10000,100000]
        [--backends sqlite,oceanbase] [--queries 60] [--maintain] [--explain]

Entries are perf_bench's corpus: the bundled corpora's memories and seeded
recombinations of them, with the profile's vectors (model_vectors.py: real embeddings
of every bundled text, sums of them for the recombinations). Each size is one
``remember()`` of all its entries with ``SequentialIds`` (the content hash is printed:
the same on both databases). Per database and size, over ``--queries`` questions of the
bundled corpora (limit 8):

* ``e2e``: ``svc.search(question, mode="hybrid")`` with the question embedded by the
  real model on every call (role query), p50/p95;
* ``embed``: the query embedding alone, p50; ``search``: the hybrid search with the
  query vector already made, p50/p95;
* ``recall``: the vector channel's top 32 against the exact top 32 of the searched
  Memory (numpy over the stored vectors), mean over the questions.

On both databases each state is measured twice: as shipped (the two channel statements
at once, on two connections) and with ``concurrent_channels`` off (one after the other).
``--maintain`` runs ``svc.maintain()`` after the load and measures again; ``--explain``
prints OceanBase's plans of the channel statements at each size. Prints figures;
asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import time

import numpy as np

import bench_dirs
import perf_bench as pb
import powercontext as pc
from model_vectors import CorpusVectors
from powercontext.canonical import SequentialIds
from powercontext.embedding import EmbeddingResult
from powercontext.memory import arguments

POOL = 32  # what a limit-8 search asks each channel for


def percentiles(values):
    ordered = sorted(values)
    return statistics.median(ordered), ordered[max(0, int(round(len(ordered) * 0.95)) - 1)]


async def latencies(svc, rev, questions, vectors: CorpusVectors):
    """(e2e p50, p95), embed p50, (search p50, p95) in ms."""
    e2e, embed, search = [], [], []
    for q in questions:  # warm: plans, caches, the model
        await svc.search(q, memories=(rev,), mode="hybrid", limit=8)
    model = svc.embedding
    for q in questions:
        start = time.perf_counter()
        await svc.search(q, memories=(rev,), mode="hybrid", limit=8)
        e2e.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        await vectors.model.embed((q,), role="query")
        embed.append((time.perf_counter() - start) * 1000)
    svc.embedding = PrecomputedQueries(vectors)
    try:
        for q in questions:
            start = time.perf_counter()
            await svc.search(q, memories=(rev,), mode="hybrid", limit=8)
            search.append((time.perf_counter() - start) * 1000)
    finally:
        svc.embedding = model
    return percentiles(e2e), statistics.median(embed), percentiles(search)


class PrecomputedQueries:
    """Documents and questions from the table: a search without the model's time."""

    def __init__(self, vectors: CorpusVectors) -> None:
        self.vectors, self.profile = vectors, vectors.profile

    async def embed(self, texts, role="document"):
        return EmbeddingResult(tuple(self.vectors.vector(t) for t in texts))


async def recall(svc, rev, texts, questions, vectors: CorpusVectors) -> tuple[float, float]:
    """(mean, min) overlap of the vector channel's top POOL with the exact top POOL of
    the Memory (numpy over the vectors its entries were given)."""
    matrix = vectors.matrix(texts).astype(np.float32)
    version_texts = {e.entry_version_id: e.text for e in await svc.entries(rev)}
    backend = svc.backend

    def channel(q):
        with backend._transaction(write=False) as tx:
            return backend._vector_query(tx, [rev.artifact_id], vectors.vector(q), POOL)
    overlaps = []
    for q in questions:
        rows = pb.on_worker(backend, lambda q=q: channel(q))
        exact = np.argsort(-(matrix @ np.asarray(vectors.vector(q), dtype=np.float32)), kind="stable")[:POOL]
        overlaps.append(len({version_texts[r[2]] for r in rows} & {texts[i] for i in exact}) / POOL)
    return statistics.mean(overlaps), min(overlaps)


async def measure(svc, rev, texts, questions, vectors, backend_name, n, explain):
    (e2e, e2e95), embed, (search, search95) = await latencies(svc, rev, questions, vectors)
    mean_recall, min_recall = await recall(svc, rev, texts, questions, vectors)
    if explain and backend_name == "oceanbase":
        terms = arguments.query_terms(questions[0], svc.backend.analyzer)
        print(f"EXPLAIN, {n:,} entries, terms {terms}:")
        print(pb.explain_channels(svc.backend, rev.artifact_id, terms, vectors.vector(questions[0]), POOL))
    return dict(e2e=e2e, e2e95=e2e95, embed=embed, search=search, search95=search95,
                recall=mean_recall, recall_min=min_recall)


async def serially(svc, state: str, measured) -> list:
    """Both databases read a hybrid search's two channels at once (channel_pool.py): the
    same measurement with them read one after the other, for the difference."""
    if not hasattr(svc.backend, "concurrent_channels"):
        return []
    svc.backend.concurrent_channels = False
    try:
        return [(state + ", channels serial", await measured())]
    finally:
        svc.backend.concurrent_channels = True


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", default="minilm,e5")
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--backends", default="sqlite,oceanbase")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--maintain", action="store_true", help="svc.maintain() after each load, then measure again")
    ap.add_argument("--explain", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base, all_questions = pb.corpus_texts()
    questions = random.Random(1).sample(all_questions, args.queries)
    texts, parts = pb.synthesize_pairs(base, max(sizes))
    print(f"machine: {pb.machine()}; load average at start {os.getloadavg()}")
    rows = []
    with bench_dirs.workspace("pc-search-", with_oceanbase="oceanbase" in args.backends) as (work, url):
        for profile in args.profiles.split(","):
            vectors = CorpusVectors(profile, base, texts, parts, all_questions)
            print(f"\n{profile}: {vectors.profile.profile_id}, {vectors.profile.dimension}-d; embedding the "
                  f"bundled texts and questions took {vectors.embed_seconds:.0f} s (cached afterwards)", flush=True)
            await vectors.model.embed(("warm up",), role="query")
            for n in sizes:
                for backend in args.backends.split(","):
                    with pb.bench_target(backend, url, work, f"search_{profile}_{n}") as target:
                        svc = await pc.open(target, embedding=vectors, ids=SequentialIds())
                        try:
                            start = time.perf_counter()
                            rev = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", t)
                                                                         for t in texts[:n]))
                            load_s = time.perf_counter() - start
                            states = [("fresh", await measure(svc, rev, texts[:n], questions, vectors, backend, n,
                                                              args.explain))]
                            states += await serially(svc, "fresh", lambda: measure(svc, rev, texts[:n], questions,
                                                                                    vectors, backend, n, False))
                            if args.maintain:
                                report = await svc.maintain()
                                print(f"  {backend} {n:,}: {' '.join(str(report).split())}", flush=True)
                                states.append(("maintained", await measure(svc, rev, texts[:n], questions, vectors,
                                                                           backend, n, False)))
                                states += await serially(svc, "maintained", lambda: measure(
                                    svc, rev, texts[:n], questions, vectors, backend, n, False))
                        finally:
                            await svc.close()
                    for state, m in states:
                        rows.append((profile, backend, n, state, load_s, rev.content_hash, m))
                        print(f"  {profile:<7} {backend:<9} {n:>7,} {state:<10} load {load_s:7.1f} s | e2e "
                              f"{m['e2e']:6.1f}/{m['e2e95']:6.1f} ms (embed {m['embed']:5.1f}) | search "
                              f"{m['search']:6.1f}/{m['search95']:6.1f} ms | recall@{POOL} {m['recall']:.3f} "
                              f"(min {m['recall_min']:.2f}) | load avg {os.getloadavg()[0]:.1f}", flush=True)
    print(f"\nload average at end {os.getloadavg()}")
    print("\n| profile | database | entries | state | e2e p50 / p95 ms | query embedding p50 ms | hybrid search "
          "p50 / p95 ms (vector given) | vector recall@32 | load s | content hash |")
    print("|---|---|---:|---|---:|---:|---:|---:|---:|---|")
    for profile, backend, n, state, load_s, content_hash, m in rows:
        print(f"| {profile} | {backend} | {n:,} | {state} | {m['e2e']:.1f} / {m['e2e95']:.1f} | {m['embed']:.1f} | "
              f"{m['search']:.1f} / {m['search95']:.1f} | {m['recall']:.3f} | {load_s:.1f} | {content_hash[:12]} |")


if __name__ == "__main__":
    asyncio.run(main())
