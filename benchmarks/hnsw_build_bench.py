"""OceanBase's HNSW upkeep in a bulk load, by the index's build parameters (issue 37):
the same N head rows (text under the FULLTEXT index, a real model's vectors under the
HNSW index) loaded as a commit loads them, once per vector-index setting, each timed
and its recall measured, so the load's floor can be moved only where recall allows.

    .venv/bin/python benchmarks/hnsw_build_bench.py [--n 20000] [--profile minilm]
        [--settings default,ef100,ef64,m8,sq,bq,ivf] [--after default,ivf] [--queries 60]

* each setting: ``CREATE TABLE`` with both indexes (the vector index ``WITH (distance=L2,
  type=hnsw|hnsw_sq|hnsw_bq[, m=…, ef_construction=…])``), then multi-row INSERTs of 1,000 in one
  transaction — what ``remember()`` does today (bulk_load_bench.py: the other ways in
  were no faster);
* ``--after``: also the rows without indexes, then both indexes created with
  ``/*+ PARALLEL(2) */`` (the server's documented way to build an index on a loaded
  table with more than one thread; an IVF index trains its centroids on the rows then);
* recall@32 at each ``--ef-search``: over ``--queries`` bundled questions embedded by
  the real model, the index's nearest 32 of the 40 rows a search reads (``APPROXIMATE``)
  against the exact top 32 (numpy over the same vectors); ``--compact`` again after a
  minor freeze, its dump and a major compaction.

Texts and vectors are perf_bench's corpus with model_vectors.py's vectors (real
embeddings of the bundled texts, sums for the recombinations). Prints figures; asserts
nothing; a setting the server refuses is printed with its error.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

import numpy as np

import perf_bench as pb
from bulk_load_bench import FULLTEXT, ID, TEXT, insert, scratch_database, timed_steps
from model_vectors import CorpusVectors
from powercontext.backends.oceanbase.search import VECTOR_MARGIN

POOL = 32
SETTINGS = {  # name -> the vector index's WITH (…) beyond its distance
    "default": "type=hnsw",
    "ef100": "type=hnsw, m=16, ef_construction=100",
    "ef64": "type=hnsw, m=16, ef_construction=64",
    "m8": "type=hnsw, m=8, ef_construction=100",
    # the server's quantised graphs: scalar (SQ8) and binary (RaBitQ, re-ranked from the rows)
    "sq": "type=hnsw_sq",
    "bq": "type=hnsw_bq",
    # the server's inverted-file index: a vector joins its nearest of nlist centroids
    "ivf": "type=ivf_flat",
}


def table(name: str, vector_with: str | None, dimension: int) -> str:
    indexes = "" if vector_with is None else (
        f", {FULLTEXT.format(t=name)}, VECTOR INDEX vidx_{name} (embedding) WITH (distance=L2, {vector_with})")
    return (f"CREATE TABLE {name} (projection_id BIGINT NOT NULL, memory_artifact_id {ID} NOT NULL, "
            f"head_revision BIGINT NOT NULL, entry_id {ID} NOT NULL, searchable_text {TEXT} NOT NULL, "
            f"embedding VECTOR({dimension}), PRIMARY KEY (projection_id), UNIQUE KEY uk_{name} "
            f"(memory_artifact_id, entry_id){indexes})")


def literal(v) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in v) + "]"


def recall(cur, name: str, matrix: np.ndarray, queries: list[np.ndarray], ef_search: int, nprobes: int) -> str:
    """Recall@POOL of the index against the exact top POOL, read as the library reads it
    (POOL + VECTOR_MARGIN rows, the POOL nearest kept), mean and worst question, and the
    statement's p50 ms."""
    cur.execute(f"SET ob_hnsw_ef_search = {ef_search}")
    cur.execute(f"SET ob_ivf_nprobes = {nprobes}")
    found, ms = [], []
    for q in queries:
        start = time.perf_counter()
        cur.execute(f"SELECT projection_id, l2_distance(embedding, %s) AS d FROM {name} "
                    f"ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT {POOL + VECTOR_MARGIN}",
                    (literal(q), literal(q)))
        ids = {r[0] - 1 for r in sorted(cur.fetchall(), key=lambda r: r[1])[:POOL]}
        ms.append((time.perf_counter() - start) * 1000)
        exact = set(np.argsort(-(matrix @ q), kind="stable")[:POOL].tolist())
        found.append(len(ids & exact) / POOL)
    return f"ef_search {ef_search} / nprobes {nprobes}: {statistics.mean(found):.3f} (min {min(found):.2f}), {statistics.median(ms):.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--profile", default="minilm")
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--after", default="", help="settings also built after the rows, both indexes PARALLEL(2)")
    ap.add_argument("--queries", type=int, default=60)
    ap.add_argument("--ef-search", default="200,400,800", help="ob_hnsw_ef_search values to measure recall at")
    ap.add_argument("--nprobes", default="8,32", help="ob_ivf_nprobes at each --ef-search (IVF indexes)")
    ap.add_argument("--compact", action="store_true", help="also measure after a minor freeze, its dump and a major one")
    args = ap.parse_args()
    unknown = {*filter(None, args.settings.split(",")), *filter(None, args.after.split(","))} - set(SETTINGS)
    if unknown:
        ap.error(f"unknown settings {sorted(unknown)}; known: {', '.join(SETTINGS)}")
    base, questions = pb.corpus_texts()
    texts, parts = pb.synthesize_pairs(base, args.n)
    vectors = CorpusVectors(args.profile, base, texts, parts, questions)
    matrix = vectors.matrix(texts).astype(np.float32)
    asked = random.Random(1).sample(questions, args.queries)
    queries = [np.asarray(vectors.vector(q), dtype=np.float32) for q in asked]
    data = [(i + 1, "mem_art_bench", 1, f"mem_ent_{i:08d}", texts[i].lower(), literal(matrix[i]))
            for i in range(args.n)]
    print(f"machine: {pb.machine()}; load average {os.getloadavg()[0]:.1f}; {args.n:,} head rows, "
          f"{vectors.profile.profile_id} vectors ({vectors.profile.dimension}-d)", flush=True)
    breadths = list(zip(args.ef_search.split(","), args.nprobes.split(","), strict=True))
    results = []
    with scratch_database("pc-hnsw-", "hnsw") as (_, con):

        def run(label: str, name: str, steps) -> None:
            try:
                total, parts_s = timed_steps(con, steps)
                with con.cursor() as cur:
                    measured = [recall(cur, name, matrix, queries, int(ef), int(p)) for ef, p in breadths]
                    if args.compact:
                        cur.execute("ALTER SYSTEM MINOR FREEZE")
                        time.sleep(30)  # the dump first: a major freeze before it changed nothing
                        cur.execute("ALTER SYSTEM MAJOR FREEZE")
                        time.sleep(90)  # compaction_bench's settle
                        measured += ["compacted, " + recall(cur, name, matrix, queries, int(ef), int(p))
                                     for ef, p in breadths]
                    cur.execute(f"DROP TABLE {name}")
                results.append((label, f"{total:.1f}", parts_s, "<br>".join(measured)))
            except Exception as exc:  # noqa: BLE001 - the server's refusal is the figure
                con.rollback()
                results.append((label, "refused", type(exc).__name__, str(exc)[:160]))
            print(f"  {results[-1]}", flush=True)

        dim = vectors.profile.dimension
        for setting in filter(None, args.settings.split(",")):
            name = f"h_{setting}"
            run(f"insert, {SETTINGS[setting]}", name, [
                ("create", lambda c, n=name, s=SETTINGS[setting]: c.execute(table(n, s, dim))),
                ("insert", lambda c, n=name: insert(c, n, data, 1000))])
        for setting in filter(None, args.after.split(",")):
            name = f"a_{setting}"
            run(f"indexes after the load, PARALLEL(2), {SETTINGS[setting]}", name, [
                ("create", lambda c, n=name: c.execute(table(n, None, dim))),
                ("insert", lambda c, n=name: insert(c, n, data, 1000)),
                ("fulltext index", lambda c, n=name: c.execute(
                    f"CREATE /*+ PARALLEL(2) */ FULLTEXT INDEX ftx_{n} ON {n} (searchable_text) "
                    "WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)")),
                ("vector index", lambda c, n=name, s=SETTINGS[setting]: c.execute(
                    f"CREATE /*+ PARALLEL(2) */ VECTOR INDEX vidx_{n} ON {n} (embedding) WITH (distance=L2, {s})"))])
    print(f"\n| setting | load seconds | steps | recall@{POOL} (worst question), statement p50 |")
    print("|---|---:|---|---|")
    for r in results:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
