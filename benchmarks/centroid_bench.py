"""What keeping c̄ (the running vector sum per Memory) and the candidate scripts costs,
per write and per search, on SQLite and a local OceanBase (seekdb).

    .venv/bin/python benchmarks/centroid_bench.py [--sizes 1000,10000] [--rounds 40]

Same entries and real MiniLM vectors as search_bench.py (computed once, reused). For
each database and size: commits that revise one entry (one vector leaves, one enters:
the sum's read-back, read and write) and hybrid retrieves, each measured with the
feature on and off in alternation on the same database, so the difference is its cost.
Switching the sum off corrupts that database's c̄, so each run's database is dropped.
Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

import bench_dirs
import powercontext as pc
from powercontext.embedding import SentenceTransformerEmbedding

from search_bench import Precomputed, corpus_texts, load, synthesize


def _median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


async def write_costs(svc, rev, texts, rounds, rng):
    """Median ms of a one-entry revise with and without the vector-sum maintenance."""
    backend = svc.backend
    on, off = [], []
    entries = list(await svc.entries(rev))
    for i in range(rounds):
        for keep, sink in ((True, on), (False, off)):
            if not keep:
                backend._vector_sums_kept = lambda: False  # instance attribute shadows the method
            old = rng.choice(entries)
            new_text = f"{rng.choice(texts)} ({i}{keep})"
            await svc.embedding.embed((new_text,))  # into the table: the timed write does not run the model
            start = time.perf_counter()
            rev = await svc.remember(rev, entries=(pc.MemoryEntryInput("fact", new_text, entry=old),))
            sink.append(time.perf_counter() - start)
            backend.__dict__.pop("_vector_sums_kept", None)
            entries = list(await svc.entries(rev))
    return rev, _median_ms(on), _median_ms(off)


async def search_costs(svc, rev, queries):
    """Median ms of a hybrid retrieve: full signals; without c̄; without scripts."""
    backend = svc.backend
    variants = {"all": {}, "no_centroid": {"_centroid": lambda tx, ids: None},
                "no_script": {"_scripts_of": lambda texts: dict.fromkeys(texts)}}
    times = {name: [] for name in variants}
    for q in queries:
        for name, patch in variants.items():
            backend.__dict__.update(patch)
            start = time.perf_counter()
            await svc.retrieve(q, (rev,), limit=8, mode="hybrid")
            times[name].append(time.perf_counter() - start)
            for attr in patch:
                backend.__dict__.pop(attr)
    return {name: _median_ms(t) for name, t in times.items()}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--queries", type=int, default=60)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    base, all_queries = corpus_texts()
    queries = random.Random(1).sample(all_queries, args.queries)
    texts = synthesize(base, max(sizes))
    extra = synthesize(base[::-1], 2 * args.rounds, seed=11)
    model = SentenceTransformerEmbedding()
    vectors = model.encode(texts + queries)

    class OnDemand(Precomputed):
        """Precomputed vectors; a revise text is embedded just before its timed write."""

        async def embed(self, batch):
            missing = [t for t in batch if t not in self.table]
            if missing:
                self.table.update({t: tuple(v) for t, v in zip(missing, model.encode(missing))})
            return await super().embed(batch)

    fast = OnDemand(model, {t: tuple(v) for t, v in zip(texts + queries, vectors)})
    with bench_dirs.workspace("pc-centroid-") as (work, url):
        print(f"{'backend':<10} {'entries':>7} {'revise ms: with c̄ / without / cost':>38} "
              f"{'hybrid retrieve ms: all / no c̄ / no script':>46}")
        for n in sizes:
            for backend in ("sqlite", "oceanbase"):
                target = str(work / f"bench_c_{n}.db") if backend == "sqlite" else url.rstrip("/") + f"/bench_c_{n}"
                svc, rev, _ = await load(target, fast, texts[:n])
                await svc.retrieve(queries[0], (rev,), mode="hybrid")  # warm caches
                s = await search_costs(svc, rev, queries)
                rev, w_on, w_off = await write_costs(svc, rev, extra, args.rounds, random.Random(n))
                print(f"{backend:<10} {n:>7} {w_on:>14.2f} / {w_off:.2f} / {w_on - w_off:+.2f}"
                      f"{'':>10}{s['all']:>8.2f} / {s['no_centroid']:.2f} / {s['no_script']:.2f}"
                      f"   (c̄ {s['all'] - s['no_centroid']:+.2f}, script {s['all'] - s['no_script']:+.2f})")
                if backend == "oceanbase":
                    con = svc.backend._raw_connect(None)
                    con.cursor().execute(f"DROP DATABASE bench_c_{n}")
                    con.close()
                await svc.close()


if __name__ == "__main__":
    asyncio.run(main())
