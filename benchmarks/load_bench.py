"""A first load (issue 48, item 2): ONE ``remember()`` of N entries with their vectors
given, on SQLite and a local OceanBase (seekdb), at 10k and 50k entries.

    .venv/bin/python benchmarks/load_bench.py [--sizes 10000,50000] [--backends sqlite,oceanbase]
        [--repeat 1] [--profile]

"Vectors given": the embedding model is a table of precomputed vectors (seeded
pseudo-random unit vectors, float32, one per text), so what is timed is the library's
write path alone — validation, canonical bytes and ids, manifest chunks, version rows,
the head rows and their full-text and vector projections — not a model. Texts are
perf_bench's corpus (the bundled corpora's memories and seeded recombinations).

Each figure is the wall time of the one ``remember()`` call and the CPU seconds this
process spent in it (all its threads; less sensitive to other jobs than the wall time),
with the 1-minute load average of the machine beside it (the machine is shared; a figure taken at load 6 is
not one taken at load 1). ``--repeat`` loads each size again into a new database and
prints every run. ``--profile`` prints a cProfile of the load with the backend's worker
thread included (where the SQL and most of the commit run). Prints figures; asserts
nothing. ``make bench`` runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_dirs  # noqa: E402
import perf_bench as pb  # noqa: E402
import powercontext as pc  # noqa: E402
from powercontext.embedding import MINILM_PROFILE, EmbeddingResult  # noqa: E402


class GivenVectors:
    """An embedding "model" that looks each text's vector up in a table made beforehand
    (seeded unit vectors through float32, what the database stores): a load through it
    pays no model time. Declares the MiniLM profile so the database takes the vectors."""

    profile = MINILM_PROFILE

    def __init__(self, texts: list[str], seed: int = 7) -> None:
        rng = np.random.default_rng(seed)
        table = rng.standard_normal((len(texts), MINILM_PROFILE.dimension))
        table /= np.linalg.norm(table, axis=1, keepdims=True)
        self.table = table.astype(np.float32)
        self.row = {text: i for i, text in enumerate(texts)}

    async def embed(self, texts):
        # an (n, d) array, as the bundled models hand it (embedding.py): tuples of Python
        # floats cost the timed load a conversion of 19M floats (~1 s at 50k) no model
        # makes the library pay (peers_bench hands an array too)
        return EmbeddingResult(self.table[[self.row[t] for t in texts]])


def load_average() -> float:
    return os.getloadavg()[0]


async def load_once(target: str, texts: list[str], model: GivenVectors, profile: bool = False):
    """(seconds, CPU seconds of this process (every thread), load average before, after,
    profile text or None) of one remember()."""
    svc = await pc.open(target, embedding=model)
    entries = tuple(pc.MemoryEntryInput("fact", t) for t in texts)
    profiles: dict[int, cProfile.Profile] = {}

    def enable():
        prof = profiles[threading.get_ident()] = cProfile.Profile()
        prof.enable()

    def disable():
        profiles[threading.get_ident()].disable()

    main = cProfile.Profile()
    if profile:
        svc.backend._executor.submit(enable).result()
        main.enable()
    before = load_average()
    start, cpu = time.perf_counter(), time.process_time()
    rev = await svc.remember(None, entries=entries)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    after = load_average()
    text = None
    if profile:
        main.disable()
        svc.backend._executor.submit(disable).result()
        stream = io.StringIO()
        stats = pstats.Stats(main, stream=stream)
        for prof in profiles.values():
            stats.add(prof)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(r"powercontext|apsw", 45)
        text = stream.getvalue()
    assert rev is not None and len(rev.manifest.entries) == len(texts)
    await svc.close()
    return seconds, cpu, before, after, text


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=os.environ.get("LOAD_SIZES", "10000,50000"))
    ap.add_argument("--backends", default="sqlite,oceanbase")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    backends = args.backends.split(",")
    base, _ = pb.corpus_texts()
    texts = pb.synthesize(base, max(sizes))
    model = GivenVectors(texts)
    print(pb.machine())
    print(f"one remember() of N entries, vectors given; load average = 1-minute, before/after the call")
    with bench_dirs.workspace("pc-load-bench-", with_oceanbase="oceanbase" in backends) as (work, url):
        for backend in backends:
            for n in sizes:
                for run in range(args.repeat):
                    with pb.bench_target(backend, url, work, f"load_{n}_{run}") as target:
                        seconds, cpu, before, after, text = await load_once(target, texts[:n], model, args.profile)
                        disk = ""
                        if backend == "sqlite":
                            mb = sum(os.path.getsize(p) for p in Path(work).glob(f"load_{n}_{run}.db*")) / 2**20
                            disk = f"  disk {mb:7.1f} MB"
                        print(f"{backend:<9} N={n:>7,}  load {seconds:7.2f} s  ({n / seconds:8,.0f} entries/s)  CPU {cpu:6.2f} s"
                              f"  load average {before:.1f}/{after:.1f}{disk}", flush=True)
                        if text:
                            print(text)


if __name__ == "__main__":
    asyncio.run(main())
