"""What the opt-in search log (issue 44) costs a search, on SQLite and a local OceanBase
(seekdb), at 1k and 10k entries.

    .venv/bin/python benchmarks/search_log_bench.py [--sizes 1000,10000]
        [--backends sqlite,oceanbase] [--queries 40] [--rounds 5]

A Memory of each size is loaded as in ``perf_bench.py`` (seeded vectors, not a model),
then searched in hybrid mode through two services on the same database: one opened
without the log, one with ``search_log=True``. Rounds alternate which goes first; each
figure is the median over rounds of a round's p50 over the queries, in ms:

- ``search off`` / ``search on``: the awaited ``svc.search`` (the log's append runs in
  the background after the search returned: what the caller waits for).
- ``latency overhead``: on − off.
- ``throughput overhead``: the queries searched back to back and the log drained
  (every append written), per search, on − off: the whole cost, the append's worker
  time included.
- ``caller cpu overhead`` / ``process cpu overhead``: the same back-to-back run's CPU
  time per search, on − off, of the caller's thread and of the whole process (worker
  threads included). CPU time is far less disturbed than wall time when other
  processes share the cores, so these resolve sub-millisecond costs on a loaded
  machine; a seekdb server's own CPU is not in them.
- ``append``: one append alone (record built from a search's candidates, JSON, insert)
  on the worker thread, p50.

The goal (issue 44): ≤ 0.5 ms per search at 1k entries. Prints figures; asserts nothing.
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
import perf_bench as pb  # noqa: E402  (the bench's corpus, vectors and targets)

import powercontext as pc  # noqa: E402

FIGURES = ("search off", "search on", "latency overhead", "throughput overhead", "caller cpu overhead",
           "process cpu overhead", "append")


async def timed_searches(svc, rev, queries) -> list[float]:
    out = []
    for q in queries:
        start = time.perf_counter()
        await svc.search(q, memories=(rev,), mode="hybrid", limit=8)
        out.append((time.perf_counter() - start) * 1000)
    return out


async def batch_ms(svc, rev, queries) -> tuple[float, float, float]:
    """Per search, the queries back to back, then every pending append written: wall
    time, the caller's (event loop's) thread CPU time, and the whole process's CPU time
    (worker threads included; a seekdb server's own CPU is not counted)."""
    start, cpu, caller = time.perf_counter(), time.process_time(), 0.0
    for q in queries:
        t = time.thread_time()
        await svc.search(q, memories=(rev,), mode="hybrid", limit=8)
        caller += time.thread_time() - t
    await svc._search_log.drain()
    n = len(queries)
    return ((time.perf_counter() - start) * 1000 / n, caller * 1000 / n, (time.process_time() - cpu) * 1000 / n)


async def append_ms(logged, rev, queries) -> float:
    """One append alone on the worker, from a real search's candidates and hits."""
    from powercontext.memory.search_log import record_json

    table = logged._search_log._table
    runs = []
    for q in queries:
        result = await logged.search(q, memories=(rev,), mode="hybrid", limit=8)
        retrieval, used, fallback = await logged.retrieve(q, (rev,), 8, "hybrid")

        def make(q=q, result=result, retrieval=retrieval, used=used):
            text = record_json(question=q, memories=retrieval.memories, requested_mode="hybrid", mode=used,
                               fallback_reason=None, embedding_profile=logged.backend.embedding_profile.profile_id,
                               policy=logged.policy, limit=8, channels=retrieval.channels, hits=result.hits)
            return [(time.time_ns() // 1000, text)]

        await logged._search_log.drain()
        runs.append(pb.on_worker(logged.backend, lambda: _timed(table._append_sync, make, None)))
    return statistics.median(runs)


def _timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return (time.perf_counter() - start) * 1000


async def measure(target, texts, queries, model, rounds: int) -> dict[str, float]:
    plain, rev, _ = await pb.load(target, texts, model)
    logged = await pc.open(target, embedding=model, search_log=True)
    try:
        for svc in (plain, logged):  # warm: caches filled, plans compiled, the log table made
            await timed_searches(svc, rev, queries)
        await logged._search_log.drain()
        per_round = []
        for i in range(rounds):
            order = (plain, logged) if i % 2 == 0 else (logged, plain)
            lat, thr = {}, {}
            for svc in order:
                lat[svc is logged] = statistics.median(await timed_searches(svc, rev, queries))
                thr[svc is logged] = await batch_ms(svc, rev, queries)
            per_round.append((lat[False], lat[True], *(on - off for on, off in zip(thr[True], thr[False]))))
        figures = {
            "search off": statistics.median(r[0] for r in per_round),
            "search on": statistics.median(r[1] for r in per_round),
            "latency overhead": statistics.median(r[1] - r[0] for r in per_round),
            "throughput overhead": statistics.median(r[2] for r in per_round),
            "caller cpu overhead": statistics.median(r[3] for r in per_round),
            "process cpu overhead": statistics.median(r[4] for r in per_round),
            "append": await append_ms(logged, rev, queries),
        }
        assert (await logged.search_log(limit=1)), "the log recorded nothing: the figures would mean nothing"
        return figures
    finally:
        await logged.close()
        await plain.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--backends", default="sqlite,oceanbase")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    base, all_queries = pb.corpus_texts()
    queries = random.Random(1).sample(all_queries, args.queries)  # the queries perf_bench uses
    model = pb.SeededVectors()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    print(f"machine: {pb.machine()}")
    print(f"hybrid search, {args.queries} queries, median of {args.rounds} rounds of p50 (ms)\n")
    results = {}
    with bench_dirs.workspace("pc-searchlog-", with_oceanbase="oceanbase" in backends) as (work, url):
        for size in sizes:
            texts = pb.synthesize(base, size)
            for backend in backends:
                with pb.bench_target(backend, url, work, f"searchlog_{size}") as target:
                    results[(backend, size)] = await measure(target, texts, queries, model, args.rounds)
    columns = [(b, s) for s in sizes for b in backends]
    print("| figure | " + " | ".join(f"{b} {s:,}" for b, s in columns) + " |")
    print("|---|" + "---:|" * len(columns))
    for name in FIGURES:
        print(f"| {name} | " + " | ".join(f"{results[c][name]:.3f}" for c in columns) + " |")


if __name__ == "__main__":
    asyncio.run(main())
