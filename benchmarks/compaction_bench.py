"""OceanBase search on a freshly loaded Memory, then after the server compacts it
(powercontext/backends/oceanbase/OCEANBASE_NOTES.md, "Compaction").

    .venv/bin/python benchmarks/compaction_bench.py [--size 10000] [--queries 20] [--settle 90]

A Memory of ``--size`` entries is loaded as in ``perf_bench.py`` (seeded vectors, not a
model) into a seekdb started on a store of its own. The full-text and vector statements
a hybrid search issues (each alone, in its read transaction) and ``svc.search(mode=
"hybrid")`` are timed three times per query, p50 over all: right after the load, then
after ``ALTER SYSTEM MINOR FREEZE``, ``--dump-wait`` seconds, ``ALTER SYSTEM MAJOR
FREEZE`` and ``--settle`` seconds. The adapter never freezes by itself (ALTER SYSTEM acts on every database of the
server); this only shows what a compaction is worth. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dirs  # noqa: E402
import perf_bench as pb  # noqa: E402  (the bench's corpus, vectors, load and raw statements)

from powercontext.memory import arguments  # noqa: E402


def _statement(backend, sql: str) -> None:
    def run():
        with backend._transaction(write=True) as tx:
            tx.execute(sql)
    pb.on_worker(backend, run)


async def timings(svc, rev, model, queries) -> tuple[float, float, float]:
    """p50 ms of (full-text statement, vector statement, hybrid search)."""
    backend = svc.backend
    pool = svc.policy.pool_size(8)  # what a limit-8 search asks each channel for
    fts, vector, hybrid = [], [], []
    for query in queries:
        terms = arguments.query_terms(query, backend.analyzer)
        values = model.vector(query)
        for _ in range(3):
            fts.append(pb.raw_search_ms(backend, rev.artifact_id, terms, values, pool, ("fts",)))
            vector.append(pb.raw_search_ms(backend, rev.artifact_id, terms, values, pool, ("vector",)))
            start = time.perf_counter()
            await svc.search(query, memories=(rev,), mode="hybrid", limit=8)
            hybrid.append((time.perf_counter() - start) * 1000)
    return statistics.median(fts), statistics.median(vector), statistics.median(hybrid)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10_000)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--dump-wait", type=float, default=30.0, help="seconds between the minor and the major freeze")
    ap.add_argument("--settle", type=float, default=90.0, help="seconds to wait after the major freeze")
    args = ap.parse_args()
    base, queries = pb.corpus_texts()
    texts = pb.synthesize(base, args.size)
    model = pb.SeededVectors()
    queries = queries[: args.queries]
    print(f"machine: {pb.machine()}")
    with bench_dirs.workspace("pc-compaction-") as (work, url):
        with pb.bench_target("oceanbase", url, work, "compaction") as target:
            svc, rev, load_s = await pb.load(target, texts, model)
            try:
                print(f"oceanbase, {args.size:,} entries loaded in {load_s:.1f} s; p50 ms over "
                      f"{len(queries)} queries x 3")
                print("| state | full-text statement | vector statement | hybrid search |")
                print("|---|---:|---:|---:|")
                fresh = await timings(svc, rev, model, queries)
                print("| right after the load | {:.1f} | {:.1f} | {:.1f} |".format(*fresh), flush=True)
                _statement(svc.backend, "ALTER SYSTEM MINOR FREEZE")
                await asyncio.sleep(args.dump_wait)  # the major one right after did nothing (OCEANBASE_NOTES)
                _statement(svc.backend, "ALTER SYSTEM MAJOR FREEZE")
                await asyncio.sleep(args.settle)
                compacted = await timings(svc, rev, model, queries)
                print(f"| minor freeze, {args.dump_wait:.0f} s, major freeze, {args.settle:.0f} s | " + " | ".join(
                    f"{c:.1f} ({f / c:.1f}x)" for f, c in zip(fresh, compacted)) + " |")
            finally:
                await svc.close()


if __name__ == "__main__":
    asyncio.run(main())
