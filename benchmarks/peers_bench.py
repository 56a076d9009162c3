"""Side by side with the stores a user would otherwise pick (issue 48, item 1): this
project (SQLite file storage) against its own floor — sqlite-vec's ``vec0`` and SQLite
FTS5 alone — LanceDB, Qdrant's local mode and Chroma, on the same texts and vectors.

    .venv/bin/python benchmarks/peers_bench.py [--sizes 10000,50000] [--vectors seeded,minilm]
        [--systems sqlite-vec,fts5,lancedb,qdrant,chroma,powercontext,powercontext-oceanbase]
        [--queries 200] [--warmup 20]
        [--cache ~/.cache/powercontext/bench-vectors/peers-minilm]

The peers come from the ``peers`` extra (``pip install -e '.[peers]'``; ``make bench``
installs it). Per vector kind and size N:

* **Data.** N texts: perf_bench's corpus (the bundled corpora's distinct memories, grown
  to N by seeded recombinations "A; also, b (note N)" of two of them: real sentences for
  full-text search, every text distinct). Vectors ``seeded``: seeded pseudo-random 384-d
  unit vectors (float32), queries likewise; or ``minilm``: every one of the N texts and
  every question embedded by the real all-MiniLM-L6-v2 (powercontext's own embedder),
  cached between runs in ``--cache`` (minilm_corpus.py: the first run at 50k embeds for
  over an hour on this 2-core machine; later runs read the file). Query texts are the
  bundled questions (seeded order), the same for every system.
* **One process per system, one at a time**: each system loads the data into a scratch
  directory of its own through its documented bulk path with its default index, then
  answers ``--warmup`` + ``--queries`` top-10 vector queries (and full-text / hybrid
  queries where it has them). sqlite-vec: one ``executemany`` into ``vec0`` in one
  transaction (exact scan). FTS5: the same for the texts, queried with the question's
  words OR-ed (naive). LanceDB: ``create_table`` from an Arrow table (no vector index:
  an exact scan) and ``create_fts_index`` (native), hybrid = its ``query_type="hybrid"``
  (RRF). Qdrant: ``QdrantClient(path=…)``, ``upload_collection`` (local mode scans
  exactly). Chroma: ``PersistentClient``, ``add`` in batches of its maximum size (HNSW,
  defaults). This project: ONE ``remember()`` with the vectors given, then
  ``svc.search(mode="vector")`` and ``mode="hybrid"`` with an admit-everything policy
  (no floor: every candidate competes, as in the others), the query vector looked up;
  ``powercontext-oceanbase`` the same on a database of one seekdb the run starts on a new
  store in its scratch directory (or POWERCONTEXT_OCEANBASE_URL's server), its disk "—"
  (the server's store is shared and preallocated, not this system's footprint).
* **Figures.** Load seconds (the bulk write, indexes included), disk MB of the system's
  directory once closed, p50/p95 ms per query, recall@10 of the vector query against an
  exact numpy scan (L2 on the float32 vectors), and the 1-minute load average around
  each system's run (the machine is shared: figures at load 6 are not those at load 1).

Prints markdown tables; asserts nothing. The latest tables are kept in
reports/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DIM = 384
TOP = 10
SYSTEMS = ("sqlite-vec", "fts5", "lancedb", "qdrant", "chroma", "powercontext", "powercontext-oceanbase")
# The OceanBase row's disk is the server's store, shared and preallocated: not a figure per system.
SERVER_SYSTEMS = ("powercontext-oceanbase",)


# ------------------------------------------------------------------ data (parent)


def minilm_cache() -> Path:
    from minilm_corpus import CACHE

    return CACHE


def prepare(kind: str, n: int, queries: int, folder: Path, cache: Path) -> None:
    """Write texts, vectors, query texts and query vectors to ``folder``, and the exact
    top-10 of every query (numpy, L2 on the float32 vectors). ``cache``: where MiniLM's
    vectors are kept between runs (minilm_corpus.py)."""
    import perf_bench as pb

    base, questions = pb.corpus_texts()
    texts, _parts = pb.synthesize_pairs(base, n)
    rng = np.random.default_rng(11)
    distinct = list(dict.fromkeys(q for q in questions if q.strip()))
    order = rng.permutation(len(distinct))
    qtexts = [distinct[i] for i in order[:queries]]
    if kind == "seeded":
        vectors = np.random.default_rng(7).standard_normal((n, DIM))
        qvectors = np.random.default_rng(13).standard_normal((len(qtexts), DIM))
    elif kind == "minilm":
        from minilm_corpus import MinilmCorpus

        model = MinilmCorpus(cache, progress=lambda line: print(f"  {line}", flush=True))
        qvectors = model.vectors(qtexts, "query").astype(np.float64)
        vectors = model.vectors(texts).astype(np.float64)
        if model.embedded:
            print(f"  MiniLM embedded {model.embedded:,} texts in {model.seconds:.0f} s "
                  f"({model.embedded / model.seconds:.1f} texts/s, load average {os.getloadavg()[0]:.1f}); "
                  f"the rest came from {cache}", flush=True)
    else:
        raise SystemExit(f"unknown vector kind {kind!r}: seeded or minilm")
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    qvectors = (qvectors / np.linalg.norm(qvectors, axis=1, keepdims=True)).astype(np.float32)
    x, q = vectors.astype(np.float64), qvectors.astype(np.float64)
    distances = (x * x).sum(1)[None, :] - 2 * q @ x.T + (q * q).sum(1)[:, None]
    truth = np.argsort(distances, axis=1, kind="stable")[:, :TOP]
    np.save(folder / "vectors.npy", vectors)
    np.save(folder / "qvectors.npy", qvectors)
    np.save(folder / "truth.npy", truth)
    (folder / "texts.json").write_text(json.dumps({"texts": texts, "queries": qtexts}))


# ------------------------------------------------------------------ one system (child)


def disk_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file()) / 2**20


def fts_or(query: str) -> str:
    words = re.findall(r"\w+", query.lower())
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words)) or '""'


class Timer:
    def __init__(self) -> None:
        self.ms: list[float] = []

    def run(self, fn, warm: bool):
        start = time.perf_counter()
        out = fn()
        if not warm:
            self.ms.append((time.perf_counter() - start) * 1000)
        return out


def child(system: str, data: Path, out: Path, warmup: int, url: str | None = None) -> dict:
    texts_doc = json.loads((data / "texts.json").read_text())
    texts, qtexts = texts_doc["texts"], texts_doc["queries"]
    vectors, qvectors = np.load(data / "vectors.npy"), np.load(data / "qvectors.npy")
    out.mkdir(parents=True)
    if system == "powercontext-oceanbase":
        import perf_bench as pb

        with pb.bench_target("oceanbase", url, out, "peers") as target:
            result = run_powercontext(texts, vectors, qtexts, qvectors, out, warmup, target)
        return {**result, "disk_mb": None}
    runner = {"sqlite-vec": run_sqlite_vec, "fts5": run_fts5, "lancedb": run_lancedb, "qdrant": run_qdrant,
              "chroma": run_chroma, "powercontext": run_powercontext}[system]
    result = runner(texts, vectors, qtexts, qvectors, out, warmup)
    result["disk_mb"] = disk_mb(out)
    return result


def _queries(qtexts, qvectors, warmup, vector_fn=None, text_fn=None, hybrid_fn=None) -> dict:
    timers = {"vector": Timer(), "fts": Timer(), "hybrid": Timer()}
    ids: list[list[int]] = []
    for i, (qt, qv) in enumerate(zip(qtexts, qvectors)):
        warm = i < warmup
        if vector_fn is not None:
            got = timers["vector"].run(lambda: vector_fn(qv), warm)
            if not warm:
                ids.append([int(x) for x in got])
        if text_fn is not None:
            timers["fts"].run(lambda: text_fn(qt), warm)
        if hybrid_fn is not None:
            timers["hybrid"].run(lambda: hybrid_fn(qt, qv), warm)
    return {"vector_ids": ids, **{f"{k}_ms": t.ms for k, t in timers.items() if t.ms}}


def _sqlite(path: Path):
    import apsw
    import sqlite_vec

    con = apsw.Connection(str(path))
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    return con


def run_sqlite_vec(texts, vectors, qtexts, qvectors, out, warmup):
    con = _sqlite(out / "vec.db")
    start = time.perf_counter()
    with con:
        con.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIM}])")
        con.executemany("INSERT INTO v (rowid, embedding) VALUES (?, ?)",
                        ((i, vectors[i].tobytes()) for i in range(len(vectors))))
    load = time.perf_counter() - start

    def vector(qv):
        return [r[0] for r in con.execute(
            "SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance", (qv.tobytes(), TOP))]
    result = _queries(qtexts, qvectors, warmup, vector_fn=vector)
    con.close()
    return {"load_s": load, **result}


def run_fts5(texts, vectors, qtexts, qvectors, out, warmup):
    con = _sqlite(out / "fts.db")
    start = time.perf_counter()
    with con:
        con.execute("CREATE VIRTUAL TABLE f USING fts5(text)")
        con.executemany("INSERT INTO f (rowid, text) VALUES (?, ?)", enumerate(texts))
    load = time.perf_counter() - start

    def text(qt):
        return con.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT ?", (fts_or(qt), TOP)).fetchall()
    result = _queries(qtexts, qvectors, warmup, text_fn=text)
    con.close()
    return {"load_s": load, **result}


def run_lancedb(texts, vectors, qtexts, qvectors, out, warmup):
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(out / "lance"))
    table_data = pa.table({
        "id": pa.array(np.arange(len(texts), dtype=np.int64)),
        "text": pa.array(texts),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), DIM),
    })
    start = time.perf_counter()
    table = db.create_table("entries", data=table_data)
    table.create_fts_index("text")
    load = time.perf_counter() - start

    def vector(qv):
        return [r["id"] for r in table.search(qv).limit(TOP).select(["id"]).to_list()]

    def text(qt):
        return table.search(qt, query_type="fts").limit(TOP).select(["id"]).to_list()

    def hybrid(qt, qv):
        return table.search(query_type="hybrid").vector(qv).text(qt).limit(TOP).select(["id"]).to_list()
    return {"load_s": load, **_queries(qtexts, qvectors, warmup, vector, text, hybrid)}


def run_qdrant(texts, vectors, qtexts, qvectors, out, warmup):
    from qdrant_client import QdrantClient
    from qdrant_client.models import Distance, VectorParams

    client = QdrantClient(path=str(out / "qdrant"))
    start = time.perf_counter()
    client.create_collection("entries", vectors_config=VectorParams(size=DIM, distance=Distance.COSINE))
    client.upload_collection("entries", vectors=vectors, payload=({"text": t} for t in texts),
                             ids=range(len(texts)))
    load = time.perf_counter() - start

    def vector(qv):
        return [p.id for p in client.query_points("entries", query=qv.tolist(), limit=TOP).points]
    result = _queries(qtexts, qvectors, warmup, vector_fn=vector)
    client.close()
    return {"load_s": load, **result}


def run_chroma(texts, vectors, qtexts, qvectors, out, warmup):
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(out / "chroma"), settings=Settings(anonymized_telemetry=False))
    start = time.perf_counter()
    collection = client.create_collection("entries")
    batch = client.get_max_batch_size()
    for i in range(0, len(texts), batch):
        collection.add(ids=[str(j) for j in range(i, min(i + batch, len(texts)))],
                       embeddings=vectors[i:i + batch], documents=texts[i:i + batch])
    load = time.perf_counter() - start

    def vector(qv):
        return collection.query(query_embeddings=[qv], n_results=TOP, include=[])["ids"][0]
    return {"load_s": load, **_queries(qtexts, qvectors, warmup, vector_fn=vector)}


def run_powercontext(texts, vectors, qtexts, qvectors, out, warmup, target=None):
    import powercontext as pc
    from powercontext.embedding import MINILM_PROFILE, EmbeddingResult

    class Given:  # the vectors given: texts and questions looked up, no model
        profile = MINILM_PROFILE

        def __init__(self) -> None:
            self.rows = {t: v for t, v in zip(texts, vectors)}
            self.rows.update(zip(qtexts, qvectors))

        async def embed(self, batch):  # an (n, d) array, as a model would hand it (embedding.py)
            return EmbeddingResult(np.stack([self.rows[t] for t in batch]))

    row_of = {t: i for i, t in enumerate(texts)}
    # No admission floor: every candidate competes, as in the other systems.
    everything = pc.AdmissionPolicy.floors(fts_min_terms=1, fts_min_coverage=0.0, vector_min_cosine=-1.0)

    async def go():
        svc = await pc.open(target or str(out / "memory.db"), embedding=Given(), policy=everything)
        entries = tuple(pc.MemoryEntryInput("fact", t) for t in texts)
        start = time.perf_counter()
        rev = await svc.remember(None, entries=entries)
        load = time.perf_counter() - start
        timers = {"vector": Timer(), "hybrid": Timer()}
        ids = []
        for i, qt in enumerate(qtexts):
            warm = i < warmup
            for mode, timer in timers.items():
                start = time.perf_counter()
                hits = (await svc.search(qt, memories=(rev,), mode=mode, limit=TOP)).hits
                if not warm:
                    timer.ms.append((time.perf_counter() - start) * 1000)
                    if mode == "vector":
                        ids.append([row_of[h.text] for h in hits])
        await svc.close()
        return {"load_s": load, "vector_ids": ids, **{f"{k}_ms": t.ms for k, t in timers.items()}}
    return asyncio.run(go())


# ------------------------------------------------------------------ parent


def percentile(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


def recall(ids: list[list[int]], truth: np.ndarray) -> float:
    if not ids:
        return float("nan")
    return statistics.mean(len(set(got) & set(truth[i].tolist())) / TOP for i, got in enumerate(ids))


def run_system(system: str, data: Path, work: Path, warmup: int, url: str | None) -> dict:
    out = work / system
    before = os.getloadavg()[0]
    proc = subprocess.run([sys.executable, __file__, "--child", system, "--data", str(data), "--out", str(out),
                           "--warmup", str(warmup), *(["--url", url] if url else [])], capture_output=True, text=True, env={**os.environ,
                           "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"})
    after = os.getloadavg()[0]
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["?"])[-1][:200], "load": (before, after)}
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["load"] = (before, after)
    return result


def row(system: str, r: dict, truth: np.ndarray) -> str:
    if "error" in r:
        return f"| {system} | failed: {r['error']} | | | | | | |"

    def ms(key):
        v = r.get(f"{key}_ms")
        return f"{percentile(v, 50):.1f} / {percentile(v, 95):.1f}" if v else "—"
    rec = recall(r.get("vector_ids", []), truth)
    rec_text = "—" if rec != rec else f"{rec:.3f}"
    disk = "—" if r["disk_mb"] is None else f"{r['disk_mb']:.1f}"
    return (f"| {system} | {r['load_s']:.2f} | {disk} | {ms('vector')} | {rec_text} | {ms('hybrid')} "
            f"| {ms('fts')} | {r['load'][0]:.1f}/{r['load'][1]:.1f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default=os.environ.get("PEERS_SIZES", "10000,50000"))
    ap.add_argument("--vectors", default=os.environ.get("PEERS_VECTORS", "seeded,minilm"))
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--cache", default=os.environ.get("PEERS_CACHE", str(minilm_cache())),
                    help="where --vectors minilm keeps the model's vectors between runs (embedded once)")
    ap.add_argument("--child")
    ap.add_argument("--data")
    ap.add_argument("--out")
    ap.add_argument("--url")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, Path(args.data), Path(args.out), args.warmup, args.url)))
        return
    import bench_dirs
    import perf_bench as pb

    print(pb.machine())
    systems = args.systems.split(",")
    unknown = sorted(set(systems) - set(SYSTEMS))
    if unknown:
        raise SystemExit(f"unknown systems {unknown}: choose from {', '.join(SYSTEMS)}")
    with bench_dirs.scratch("pc-peers-server-") as server_dir:
        # One seekdb for the whole run, on a new store removed at the end (bench_dirs), and
        # only when an OceanBase row is asked for; POWERCONTEXT_OCEANBASE_URL uses yours.
        with (bench_dirs.oceanbase(server_dir) if set(systems) & set(SERVER_SYSTEMS)
              else contextlib.nullcontext((None, None))) as (url, _server):
            run_all(args, systems, url)


def run_all(args, systems: list[str], url: str | None) -> None:
    for kind in args.vectors.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            with tempfile.TemporaryDirectory(prefix="pc-peers-") as tmp:
                data = Path(tmp) / "data"
                data.mkdir()
                prepare(kind, n, args.warmup + args.queries, data, Path(args.cache))
                truth = np.load(data / "truth.npy")[args.warmup:]
                print(f"\n{kind} vectors, N = {n:,}: top-{TOP}, {args.queries} queries after {args.warmup} warm-ups, "
                      "one process per system, one at a time")
                print("| system | load s | disk MB | vector p50 / p95 ms | recall@10 | hybrid p50 / p95 ms "
                      "| full-text p50 / p95 ms | load average before/after |")
                print("|---|---:|---:|---:|---:|---:|---:|---:|")
                for system in systems:
                    result = run_system(system, data, Path(tmp), args.warmup, url)
                    print(row(system, result, truth), flush=True)


if __name__ == "__main__":
    main()
