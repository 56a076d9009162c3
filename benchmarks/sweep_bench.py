"""Sweep benchmark: what a 1,000-point admission sweep costs next to one retrieval pass,
and what the embedding cache costs next to raw sentence-transformers encode.

    .venv/bin/python benchmarks/sweep_bench.py [--backends sqlite,oceanbase] [--modes fts,vector,hybrid]
                                               [--out results/bench] [--reuse] [--no-embed]

1. Loads every bundled corpus into a fresh database per backend and retrieves every
   query once per mode (``powercontext.eval.running.collect``): the retrieval pass, timed per
   backend and mode as the sum of the ``svc.retrieve`` calls.
2. Replays exactly 1,000 (policy, limit) points per mode over all queries with every
   metric aggregated per corpus × split (building the arrays included), and prints
   sweep seconds / retrieval seconds (target ≤ 1.2). For scale it also times
   ``admission.fuse`` on a sample of points and extrapolates to 1,000.
3. Embeds the corpus texts with raw ``SentenceTransformer.encode`` and through the
   harness's ``CachingEmbedding.prefetch`` (empty cache) and prints both throughputs
   (target ≥ 0.8×), then the same prefetch again (all cache hits).

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from powercontext.eval.running.collect import collect, corpus_texts  # noqa: E402
from powercontext.eval.corpora.datasets import discover, load  # noqa: E402
from powercontext.eval.scoring.analysis import build_replays, split_groups  # noqa: E402
from powercontext.eval.running.retrieval import channels_of  # noqa: E402
from powercontext.eval.scoring.sweep import Grid  # noqa: E402
from powercontext.memory import admission  # noqa: E402

LIMITS = (1, 3, 5, 8, 10)
BENCH_GRIDS = {  # exactly 1,000 (policy, limit) points per mode
    "fts": Grid(fts_min_terms=(1, 2, 3, 4, 5), fts_min_coverage=tuple(round(0.025 * i, 3) for i in range(40)),
                vector_min_cosine=(0.3,), limits=LIMITS),
    "vector": Grid(fts_min_terms=(2,), fts_min_coverage=(0.25,),
                   vector_min_cosine=tuple(round(-1 + 0.01 * i, 2) for i in range(200)), limits=LIMITS),
    "hybrid": Grid(fts_min_terms=(1, 2), fts_min_coverage=(0.0, 0.25, 0.34, 0.5, 0.75),
                   vector_min_cosine=tuple(round(0.035 * i, 3) for i in range(20)), limits=LIMITS),
}


def bench_policies(mode: str):
    """The grid's policies without the always-added named policies: exactly 200 per mode."""
    g = BENCH_GRIDS[mode]
    from powercontext.memory.admission import AdmissionPolicy

    if mode == "fts":
        return [AdmissionPolicy.floors(t, c) for t in g.fts_min_terms for c in g.fts_min_coverage]
    if mode == "vector":
        return [AdmissionPolicy.floors(vector_min_cosine=x) for x in g.vector_min_cosine]
    return [AdmissionPolicy.floors(t, c, x) for t in g.fts_min_terms for c in g.fts_min_coverage for x in g.vector_min_cosine]


def sweep_figures(collected) -> None:
    weights, _ = split_groups(collected.queries)
    retrieval = collected.retrieval_seconds().set_index(["backend", "mode"])["seconds"]
    print(f"\n== sweep vs retrieval ({len(collected.queries)} queries, {len(collected.corpora)} corpora)")
    print(f"{'backend':10s} {'mode':7s} {'points':>6s} {'retrieval s':>11s} {'sweep s':>8s} {'ratio':>6s} "
          f"{'fuse s (est. 1000)':>18s}")
    totals = {}
    for backend in collected.backends:
        for mode in collected.modes:
            policies = bench_policies(mode)
            points = len(policies) * len(LIMITS)
            best = float("inf")
            for _ in range(3):  # best of 3: the figure is a cost, not a noise sample
                start = time.perf_counter()
                (replay,) = build_replays(_only(collected, backend), [mode]).values()
                replay.aggregate(policies, LIMITS, weights)
                best = min(best, time.perf_counter() - start)
            fuse = _fuse_estimate(collected, backend, mode, policies, points)
            r = float(retrieval[(backend, mode)])
            totals.setdefault(backend, [0.0, 0.0])
            totals[backend][0] += r
            totals[backend][1] += best
            print(f"{backend:10s} {mode:7s} {points:6d} {r:11.2f} {best:8.3f} {best / r:6.2f} {fuse:18.1f}")
    for backend, (r, s) in totals.items():
        print(f"{backend:10s} {'all':7s} {'':6s} {r:11.2f} {s:8.3f} {s / r:6.2f}")


def _only(collected, backend):
    import copy

    c = copy.copy(collected)
    c.backends = (backend,)
    return c


def _fuse_estimate(collected, backend, mode, policies, points, sample: int = 10) -> float:
    """Seconds admission.fuse would need for all points (timed on a sample of points)."""
    cands = collected.candidates[(collected.candidates["backend"] == backend) & (collected.candidates["mode"] == mode)]
    groups = {q: g for q, g in cands.groupby("query_id")}
    empty = cands.iloc[0:0]
    channels = {q: channels_of(groups.get(q, empty), mode) for q in collected.queries["query_id"]}
    rng = random.Random(0)
    start = time.perf_counter()
    for _ in range(sample):
        policy, limit = rng.choice(policies), rng.choice(LIMITS)
        for chans in channels.values():
            admission.fuse({k: v[: policy.pool_size(limit)] for k, v in chans.items()}, policy, limit)
    return (time.perf_counter() - start) / sample * points


async def embedding_figures(corpora) -> None:
    from sentence_transformers import SentenceTransformer

    from powercontext.embedding import SentenceTransformerEmbedding, minilm_path
    from powercontext.eval.running.embedcache import CachingEmbedding

    texts = corpus_texts(corpora)
    print(f"\n== embedding throughput ({len(texts)} distinct texts: entry texts incl. history, and queries)")
    raw = SentenceTransformer(minilm_path(), device="cpu")
    raw.encode(["warm up"], normalize_embeddings=True)
    model = SentenceTransformerEmbedding()
    model.encode(["warm up"])
    raw_s, cached_s = [], []
    for _ in range(2):  # alternate to spread machine noise over both
        start = time.perf_counter()
        raw.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        raw_s.append(time.perf_counter() - start)
        with tempfile.TemporaryDirectory() as tmp:
            cache = CachingEmbedding(model, tmp)
            start = time.perf_counter()
            await cache.prefetch(texts)
            cached_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            again = CachingEmbedding(model, tmp)  # a later run: read from disk, all hits
            await again.prefetch(texts)
            vectors = await again.embed(tuple(texts))
            warm = time.perf_counter() - start
    r, c = min(raw_s), min(cached_s)
    print(f"raw sentence-transformers encode : {len(texts) / r:8.1f} texts/s ({r:.2f} s)")
    print(f"CachingEmbedding.prefetch (cold) : {len(texts) / c:8.1f} texts/s ({c:.2f} s)  = {r / c:.2f}× raw")
    print(f"CachingEmbedding (warm, from disk): {warm:.3f} s for {len(vectors.vectors)} vectors")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backends", default="sqlite,oceanbase")
    p.add_argument("--modes", default=None, help="default: every mode the installed model allows")
    p.add_argument("--out", default=str(ROOT / "results" / "bench"))
    p.add_argument("--reuse", action="store_true", help="reuse the candidates cached in --out")
    p.add_argument("--no-embed", action="store_true", help="skip the embedding throughput figures")
    args = p.parse_args(argv)
    from powercontext.eval.harness import available_modes

    modes = tuple(args.modes.split(",")) if args.modes else available_modes()
    corpora_paths = discover(ROOT / "datasets")
    start = time.perf_counter()
    collected = asyncio.run(collect(corpora_paths, backends=tuple(args.backends.split(",")), modes=modes,
                                    out=args.out, max_limit=max(LIMITS), reuse=args.reuse, progress=False))
    print(f"collect (load + embed + retrieve): {time.perf_counter() - start:.1f} s")
    print(collected.loads.to_string(index=False))
    sweep_figures(collected)
    if not args.no_embed and any(m in modes for m in ("vector", "hybrid")):
        asyncio.run(embedding_figures([load(p) for p in corpora_paths]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
