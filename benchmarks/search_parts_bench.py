"""Where a hybrid search's time goes (issue 15): the search split into its parts, each
timed alone, on SQLite and a local OceanBase (seekdb).

    .venv/bin/python benchmarks/search_parts_bench.py [--size 1000] [--backends sqlite,oceanbase]
        [--queries 40] [--repeat 7]

A Memory of ``--size`` entries is loaded as in ``perf_bench.py`` (seeded vectors, not a
model). For every query each part runs ``--repeat`` times and keeps its fastest run
(what the code costs, not the machine's noise); the table prints the median of those
over the queries, in ms:

- ``search``: ``svc.search(mode="hybrid")`` with the query vector precomputed.
- ``backend.retrieve``: the awaited call, so the hop to the worker thread and back.
- ``_retrieve_sync``: the same request run on the worker thread, no hop.
- ``raw SQL``: the FTS and vector statements it issues, in one read transaction
  (``perf_bench.raw_search_ms``, the ratio's denominator).
- ``fts_pool``: choosing the full-text pool from the rows read, with each pooled row's
  matched query terms (pure Python).
- ``fuse``: admission and RRF over the retrieved channels (pure Python).
- ``empty hop``: awaiting a job that does nothing on the worker.

Then the hop for jobs that hold the GIL on the worker for 0–8 ms (a search's Python
does), as await time minus job time. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dirs  # noqa: E402
import perf_bench as pb  # noqa: E402  (the bench's corpus, vectors and raw statements)

from powercontext import analyzer  # noqa: E402
from powercontext.backends.plans import RetrievalRequest  # noqa: E402
from powercontext.backends.retrieval import fts_fetch_size, fts_pool  # noqa: E402
from powercontext.memory import admission, arguments  # noqa: E402

PARTS = ("search", "backend.retrieve", "_retrieve_sync", "raw SQL", "fts_pool", "fuse", "empty hop")


def fastest(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return min(runs) * 1000


async def fastest_async(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        runs.append(time.perf_counter() - start)
    return min(runs) * 1000


def spin(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


async def parts(svc, rev, queries, model, repeat: int) -> dict[str, float]:
    backend = svc.backend
    pool = svc.policy.pool_size(8)
    timed: dict[str, list[float]] = {name: [] for name in PARTS}
    for q in queries:
        terms = arguments.query_terms(q, backend.analyzer)
        vector = model.vector(q)
        request = RetrievalRequest(memories=(rev.ref,), terms=terms, channels=("fts", "vector"), pool=pool,
                                   query_vector=vector, query_script=analyzer.script(q))
        await svc.search(q, memories=(rev,), mode="hybrid", limit=8)  # caches warm, statements prepared
        retrieval = await backend.retrieve(request)

        def read_rows():
            with backend._transaction(write=False) as tx:
                return backend._fts_query(tx, [rev.artifact_id], terms, fts_fetch_size(pool))
        rows = pb.on_worker(backend, read_rows) if terms else []

        timed["search"].append(await fastest_async(
            lambda: svc.search(q, memories=(rev,), mode="hybrid", limit=8), repeat))
        timed["backend.retrieve"].append(await fastest_async(lambda: backend.retrieve(request), repeat))
        timed["_retrieve_sync"].append(pb.on_worker(
            backend, lambda: fastest(lambda: backend._retrieve_sync(request), repeat)))
        timed["raw SQL"].append(min(pb.raw_search_ms(backend, rev.artifact_id, terms, vector, pool, ("fts", "vector"))
                                    for _ in range(repeat)))
        timed["fts_pool"].append(fastest(lambda: fts_pool(rows, terms, pool), repeat))
        timed["fuse"].append(fastest(lambda: admission.fuse(retrieval.channels, svc.policy, 8), repeat))
        timed["empty hop"].append(await fastest_async(lambda: backend._run(lambda: None), repeat))
    return {name: statistics.median(values) for name, values in timed.items()}


async def hop_by_job(backend, jobs=(0, 1, 2, 4, 8), runs=200) -> dict[float, float]:
    out = {}
    for ms in jobs:
        extra = []
        for _ in range(runs):
            start = time.perf_counter()
            await backend._run(spin, ms)
            extra.append((time.perf_counter() - start) * 1000 - ms)
        out[ms] = statistics.median(extra)
    return out


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--backends", default="sqlite,oceanbase")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    base, all_queries = pb.corpus_texts()
    queries = random.Random(1).sample(all_queries, args.queries)  # the queries perf_bench uses
    texts = pb.synthesize(base, args.size)
    model = pb.SeededVectors()
    print(f"machine: {pb.machine()}")
    print(f"{args.size:,} entries, {args.queries} queries, fastest of {args.repeat} per query, median over queries (ms)\n")
    backends = args.backends.split(",")
    with bench_dirs.workspace("pc-parts-", with_oceanbase="oceanbase" in backends) as (work, url):
        results, hops = {}, {}
        for backend in backends:
            with pb.bench_target(backend, url, work, f"parts_{args.size}") as target:
                svc, rev, _ = await pb.load(target, texts, model)
                results[backend] = await parts(svc, rev, queries, model, args.repeat)
                hops[backend] = await hop_by_job(svc.backend)
                await svc.close()
    print("| part | " + " | ".join(backends) + " |")
    print("|---|" + "---:|" * len(backends))
    for name in PARTS:
        print(f"| {name} | " + " | ".join(f"{results[b][name]:.2f}" for b in backends) + " |")
    derived = {
        "worker beyond the raw SQL": lambda r: r["_retrieve_sync"] - r["raw SQL"],
        "hop + service (search − _retrieve_sync)": lambda r: r["search"] - r["_retrieve_sync"],
        "search / raw SQL": lambda r: r["search"] / r["raw SQL"],
    }
    for name, rule in derived.items():
        print(f"| {name} | " + " | ".join(f"{rule(results[b]):.2f}" for b in backends) + " |")
    print("\nhop (await minus job) for a job holding the GIL on the worker, p50 of 200, ms:")
    for backend in backends:
        print(f"  {backend}: " + ", ".join(f"{ms} ms job → {extra:.2f}" for ms, extra in hops[backend].items()))


if __name__ == "__main__":
    asyncio.run(main())
