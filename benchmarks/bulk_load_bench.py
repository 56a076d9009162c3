"""OceanBase's ways in for a bulk load of head rows (issue 37): the same N rows of
``memory_entry_heads`` (text under the FULLTEXT index, a 384-d vector under the HNSW
index) written four ways into a seekdb of its own, each timed, so the library's path
can be compared with what the server documents as faster.

    .venv/bin/python benchmarks/bulk_load_bench.py [--n 20000] [--batch 1000]

* ``insert``: multi-row INSERTs of ``--batch`` rows into the indexed table in one
  transaction — what a commit does today;
* ``direct``: the rows into a plain staging table, then ``INSERT /*+ direct(true, 0) */
  … SELECT`` into the indexed table (the server's direct-load path);
* ``index after``: multi-row INSERTs into the table without its FULLTEXT and HNSW
  indexes, then both indexes created on the loaded table;
* ``load data``: ``LOAD DATA /*+ direct(true, 0) */ LOCAL INFILE`` of a TSV into the
  indexed table.

Texts are perf_bench's corpus; vectors seeded pseudo-random unit vectors. Every option
is checked to leave N rows that a full-text and a vector query find. Prints figures;
asserts nothing; an option the server refuses is printed with its error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import tempfile
import time
from urllib.parse import unquote, urlparse

import numpy as np
import pymysql

import bench_dirs
import perf_bench as pb

ID = "VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
TEXT = "TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
COLUMNS = "projection_id, memory_artifact_id, head_revision, entry_id, searchable_text, embedding"
FULLTEXT = "FULLTEXT INDEX ftx_{t} (searchable_text) WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)"
VECTOR = "VECTOR INDEX vidx_{t} (embedding) WITH (distance=L2, type=hnsw)"


def table(name: str, indexed: bool) -> str:
    indexes = f", {FULLTEXT.format(t=name)}, {VECTOR.format(t=name)}" if indexed else ""
    return (f"CREATE TABLE {name} (projection_id BIGINT NOT NULL, memory_artifact_id {ID} NOT NULL, "
            f"head_revision BIGINT NOT NULL, entry_id {ID} NOT NULL, searchable_text {TEXT} NOT NULL, "
            f"embedding VECTOR(384), PRIMARY KEY (projection_id), UNIQUE KEY uk_{name} (memory_artifact_id, entry_id)"
            f"{indexes})")


def rows(n: int) -> list[tuple]:
    base, _ = pb.corpus_texts()
    texts = pb.synthesize(base, n)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return [(i + 1, "mem_art_bench", 1, f"mem_ent_{i:08d}", texts[i].lower(),
             "[" + ",".join(f"{x:.6g}" for x in vectors[i]) + "]") for i in range(n)]


def connect(url: str, database: str | None = None):
    u = urlparse(url)
    con = pymysql.connect(host=u.hostname, port=u.port, user=unquote(u.username or "root"),
                          password=unquote(u.password or ""), database=database, charset="utf8mb4",
                          autocommit=False, local_infile=True)
    with con.cursor() as cur:  # a load is one long statement: the 10 s default stops it
        cur.execute("SET SESSION ob_query_timeout = 1800000000, ob_trx_timeout = 1800000000")
    return con


@contextlib.contextmanager
def scratch_database(prefix: str, name: str):
    """(scratch directory, a connection to a new database ``name``) on a seekdb of its own."""
    with bench_dirs.workspace(prefix) as (work, url):
        admin = connect(url)
        with admin.cursor() as cur:
            cur.execute(f"CREATE DATABASE {name}")
        admin.close()
        con = connect(url, name)
        try:
            yield work, con
        finally:
            con.close()


def timed_steps(con, steps) -> tuple[float, str]:
    """Run each (label, step(cursor)) and commit it; (total seconds, "label 1.2 s; …")."""
    start, parts = time.perf_counter(), []
    with con.cursor() as cur:
        for label, step in steps:
            t = time.perf_counter()
            step(cur)
            con.commit()
            parts.append(f"{label} {time.perf_counter() - t:.1f} s")
    return time.perf_counter() - start, "; ".join(parts)


def insert(cur, name: str, data: list[tuple], batch: int) -> None:
    marks = "(%s, %s, %s, %s, %s, %s)"
    for i in range(0, len(data), batch):
        part = data[i:i + batch]
        cur.execute(f"INSERT INTO {name} ({COLUMNS}) VALUES " + ",".join([marks] * len(part)),
                    [v for row in part for v in row])


def check(cur, name: str, n: int, probe: tuple) -> str:
    cur.execute(f"SELECT COUNT(*) FROM {name}")
    count = cur.fetchone()[0]
    word = probe[4].split()[0]
    cur.execute(f"SELECT COUNT(*) FROM {name} WHERE MATCH(searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE)",
                (word,))
    fts = cur.fetchone()[0]
    cur.execute(f"SELECT projection_id FROM {name} ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT 1",
                (probe[5],))
    nearest = cur.fetchone()[0]
    ok = count == n and fts > 0 and nearest == probe[0]
    return f"{count:,} rows, '{word}' in {fts:,}, nearest of row {probe[0]} is {nearest}: {'ok' if ok else 'WRONG'}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=1000)
    args = ap.parse_args()
    data = rows(args.n)
    probe = data[len(data) // 2]
    print(f"machine: {pb.machine()}; load average {os.getloadavg()[0]:.1f}; {args.n:,} head rows, "
          f"batches of {args.batch}", flush=True)
    results = []
    with scratch_database("pc-bulk-", "bulk") as (work, con):

        def timed(label, steps, name):
            try:
                total, parts = timed_steps(con, steps)
                with con.cursor() as cur:
                    outcome = check(cur, name, args.n, probe)
                results.append((label, f"{total:.1f}", parts, outcome))
            except Exception as exc:  # noqa: BLE001 - the server's refusal is the figure
                con.rollback()
                results.append((label, "refused", type(exc).__name__, str(exc)[:160]))
            print(f"  {results[-1]}", flush=True)

        timed("insert (today's path)", [("create", lambda c: c.execute(table("h_insert", True))),
                                        ("insert", lambda c: insert(c, "h_insert", data, args.batch))], "h_insert")
        timed("direct load from staging", [
            ("create", lambda c: (c.execute(table("h_stage", False)), c.execute(table("h_direct", True)))),
            ("stage", lambda c: insert(c, "h_stage", data, args.batch)),
            ("direct insert", lambda c: c.execute(f"INSERT /*+ direct(true, 0) */ INTO h_direct ({COLUMNS}) "
                                                  f"SELECT {COLUMNS} FROM h_stage"))], "h_direct")
        timed("indexes after the load", [
            ("create", lambda c: c.execute(table("h_after", False))),
            ("insert", lambda c: insert(c, "h_after", data, args.batch)),
            ("fulltext index", lambda c: c.execute("CREATE FULLTEXT INDEX ftx_h_after ON h_after (searchable_text) "
                                                   "WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1)")),
            ("vector index", lambda c: c.execute("CREATE VECTOR INDEX vidx_h_after ON h_after (embedding) "
                                                 "WITH (distance=L2, type=hnsw)"))], "h_after")
        tsv = os.path.join(tempfile.mkdtemp(dir=work), "heads.tsv")
        with open(tsv, "w", encoding="utf-8") as fh:
            for row in data:
                fh.write("\t".join(str(v).replace("\t", " ").replace("\n", " ") for v in row) + "\n")
        timed("load data local infile (direct)", [
            ("create", lambda c: c.execute(table("h_load", True))),
            ("load data", lambda c: c.execute(f"LOAD DATA /*+ direct(true, 0) */ LOCAL INFILE '{tsv}' INTO TABLE h_load "
                                              f"FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n' ({COLUMNS})"))],
              "h_load")
    print("\n| option | seconds | steps | check |")
    print("|---|---:|---|---|")
    for r in results:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    random.seed(0)
    main()
