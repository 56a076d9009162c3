"""Search benchmark: embedding throughput, HNSW recall@32 vs exact search, and search
latency per mode on 1k and 10k entries, on SQLite and a local OceanBase (seekdb).

    .venv/bin/python benchmarks/search_bench.py [--sizes 1000,10000] [--queries 60]

Entries are the bundled corpora's texts plus seeded recombinations of their sentences
(real language, so the real model's vectors behave like real memories). Everything is
embedded once and reused on both databases. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from pathlib import Path

import bench_dirs
import powercontext as pc
from powercontext.embedding import EmbeddingResult, SentenceTransformerEmbedding

ROOT = Path(__file__).resolve().parents[1]


def corpus_texts() -> tuple[list[str], list[str]]:
    entries, queries = [], []
    for folder in sorted((ROOT / "datasets").iterdir()):
        if (folder / "memories.jsonl").exists():
            entries += [json.loads(line)["text"] for line in (folder / "memories.jsonl").open()]
            queries += [json.loads(line)["text"] for line in (folder / "queries.jsonl").open()]
    return entries, queries


def synthesize(base: list[str], n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    texts = list(dict.fromkeys(base))[:n]
    while len(texts) < n:
        a, b = rng.sample(base, 2)
        texts.append(f"{a.rstrip('.。')}; also, {b[0].lower()}{b[1:]}")
    return texts


class Precomputed:
    """Serves vectors computed up front by the real model (so both databases get the
    same vectors and write time is not embedding time)."""

    def __init__(self, model, table):
        self.model, self.table = model, table

    @property
    def profile(self):
        return self.model.profile

    async def embed(self, texts):
        return EmbeddingResult(tuple(self.table[t] for t in texts))


async def load(target, model, texts, batch=1000):
    svc = await pc.open(target, embedding=model)
    rev = None
    start = time.perf_counter()
    for i in range(0, len(texts), batch):
        rev = await svc.remember(rev, entries=tuple(pc.MemoryEntryInput("fact", t) for t in texts[i:i + batch]))
    return svc, rev, time.perf_counter() - start


async def latencies(svc, rev, queries, mode):
    times = []
    for q in queries:
        start = time.perf_counter()
        await svc.search(q, memories=(rev,), mode=mode, limit=8)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), sorted(times)[int(len(times) * 0.95) - 1]


def hnsw_recall(backend, rev, qvectors, ef, k=32):
    hits = total = 0
    for v in qvectors:
        def approx():
            with backend._transaction(write=False) as tx:
                tx.execute(f"SET ob_hnsw_ef_search = {ef}")
                try:
                    return backend._vector_query(tx, [rev.artifact_id], v, k)
                finally:
                    tx.execute("SET ob_hnsw_ef_search = 200")
        a = {r[2] for r in backend._executor.submit(approx).result()}
        e = {r[2] for r in backend.exact_vector_query([rev.artifact_id], v, k)}
        hits += len(a & e)
        total += len(e)
    return hits / total


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--queries", type=int, default=60)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base, all_queries = corpus_texts()
    queries = random.Random(1).sample(all_queries, args.queries)
    texts = synthesize(base, max(sizes))

    model = SentenceTransformerEmbedding()
    model.encode(["warm up"])
    start = time.perf_counter()
    vectors = model.encode(texts + queries)
    seconds = time.perf_counter() - start
    print(f"embedding: {len(texts) + len(queries)} texts in {seconds:.1f} s = {(len(texts) + len(queries)) / seconds:.0f} texts/s (batch 32, CPU)")
    table = {t: tuple(v) for t, v in zip(texts + queries, vectors)}
    fast = Precomputed(model, table)
    qvectors = [table[q] for q in queries]

    with bench_dirs.workspace("pc-search-") as (work, url):
        print(f"\n{'backend':<10} {'entries':>7} {'load s':>7} {'fts p50/p95 ms':>16} {'vector p50/p95':>16} {'hybrid p50/p95':>16}")
        for n in sizes:
            for backend in ("sqlite", "oceanbase"):
                target = str(work / f"bench_{n}.db") if backend == "sqlite" else url.rstrip("/") + f"/bench_{n}"
                svc, rev, load_s = await load(target, fast, texts[:n])
                row = [await latencies(svc, rev, queries, m) for m in ("fts", "vector", "hybrid")]
                cells = " ".join(f"{p50:7.1f}/{p95:<8.1f}" for p50, p95 in row)
                print(f"{backend:<10} {n:>7} {load_s:>7.1f} {cells}")
                if backend == "oceanbase":
                    for ef in (64, 100, 200):
                        recall = hnsw_recall(svc.backend, rev, qvectors, ef)
                        print(f"           HNSW recall@32 vs exact, {n} entries, ef_search={ef}: {recall:.3f}")
                    con = svc.backend._raw_connect(None)
                    con.cursor().execute(f"DROP DATABASE bench_{n}")
                    con.close()
                await svc.close()


if __name__ == "__main__":
    asyncio.run(main())
