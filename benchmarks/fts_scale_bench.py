"""OceanBase's full-text statement by corpus size (issue 37): is the top-k read
sublinear, or does it score every row that matches a query term?

    .venv/bin/python benchmarks/fts_scale_bench.py [--sizes 10000,100000] [--queries 40]
        [--depths 264,64,8] [--compact]

Per size, the head rows (perf_bench's corpus, Analyzer v2's searchable text, no vector
column) are loaded into a FULLTEXT-indexed table of a seekdb of its own. For each
bundled question (its Analyzer v2 terms, as a search sends them):

* the statement a search issues (``MATCH … AGAINST (… IN NATURAL LANGUAGE MODE)``,
  ``ORDER BY score DESC LIMIT depth``), fastest of 3, at each ``--depths``;
* how many rows match any of its terms (``COUNT(*)`` with the same MATCH);

then the p50 per depth, the p50 of matching rows, and the least-squares fit of time
against matching rows (ms per 1,000 matches, intercept). ``--compact`` repeats the
timings after a minor freeze, its dump and a major compaction (what ``svc.maintain()``
does). Also the plan (EXPLAIN) of the deepest statement. SQLite's FTS5 figures for the
same rows and statement shape beside them. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time

import numpy as np

import perf_bench as pb
from bulk_load_bench import FULLTEXT, ID, TEXT, scratch_database
from powercontext import analyzer


def fastest(cur, sql: str, params: tuple, repeat: int = 3) -> tuple[float, list]:
    best, rows = float("inf"), []
    for _ in range(repeat):
        start = time.perf_counter()
        cur.execute(sql, params)
        rows = cur.fetchall()
        best = min(best, time.perf_counter() - start)
    return best * 1000, rows


def fit(x: list[float], y: list[float]) -> str:
    slope, intercept = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    r = float(np.corrcoef(x, y)[0, 1])
    return f"{slope * 1000:.2f} ms per 1,000 matches + {intercept:.1f} ms (r = {r:.2f})"


def ob_statement(depth: int, table: str) -> str:
    score = "MATCH(searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE)"
    return (f"SELECT memory_artifact_id, entry_id, searchable_text, {score} AS score FROM {table} "
            f"WHERE {score} ORDER BY score DESC LIMIT {depth}")


def timings(cur, queries, depths, count_sql, statement) -> dict:
    per_depth = {d: [] for d in depths}
    matches = []
    for terms in queries:
        text = " ".join(terms)
        for d in depths:
            per_depth[d].append(fastest(cur, statement(d), statement.params(text))[0])
        cur.execute(count_sql, statement.params(text)[:1])
        matches.append(cur.fetchone()[0])
    return {"depth": {d: statistics.median(v) for d, v in per_depth.items()}, "matches": matches,
            "fit": fit(matches, per_depth[max(depths)])}


class OB:
    def __init__(self, table: str) -> None:
        self.table = table

    def __call__(self, depth):
        return ob_statement(depth, self.table)

    @staticmethod
    def params(text):
        return (text, text)


class Lite:
    def __call__(self, depth):
        # the library's statement (sqlite/backend.py), on the same rows
        return ("SELECT h.memory_artifact_id, h.entry_id, h.searchable_text FROM heads_fts AS f "
                "JOIN heads AS h ON h.rowid = f.rowid WHERE heads_fts MATCH ? "
                f"ORDER BY f.rank, h.memory_artifact_id, h.entry_id LIMIT {depth}")

    @staticmethod
    def params(text):
        return (analyzer.fts5_match_expression(tuple(text.split())),)


def sqlite_side(rows, queries, depths) -> dict:
    path = os.path.join(tempfile.mkdtemp(), "fts.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE heads (memory_artifact_id TEXT, entry_id TEXT, searchable_text TEXT)")
    con.execute("CREATE VIRTUAL TABLE heads_fts USING fts5(searchable_text, content='heads', content_rowid='rowid', "
                "tokenize=\"unicode61 tokenchars '_'\")")
    con.executemany("INSERT INTO heads VALUES (?, ?, ?)", rows)
    con.execute("INSERT INTO heads_fts (rowid, searchable_text) SELECT rowid, searchable_text FROM heads")
    con.commit()
    cur = con.cursor()
    out = timings(cur, queries, depths, "SELECT COUNT(*) FROM heads_fts WHERE heads_fts MATCH ?", Lite())
    con.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--depths", default="264,64,8")
    ap.add_argument("--compact", action="store_true")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    depths = [int(d) for d in args.depths.split(",")]
    an = analyzer.get("v2")
    base, questions = pb.corpus_texts()
    texts = pb.synthesize(base, max(sizes))
    searchable = [an.searchable_text(t) for t in texts]
    queries = [an.query_terms(q) for q in random.Random(1).sample(questions, args.queries)]
    queries = [q for q in queries if q]
    print(f"machine: {pb.machine()}; load average {os.getloadavg()[0]:.1f}; {len(queries)} queries", flush=True)
    report = []
    with scratch_database("pc-fts-", "fts") as (_, con):
        for n in sizes:
            rows = [("mem_art_bench", f"mem_ent_{i:08d}", searchable[i]) for i in range(n)]
            table = f"heads_{n}"  # a table per size: seekdb answered 4016 "Internal error" to the
            # full-text statement on a table dropped and created again under the same name
            with con.cursor() as cur:
                cur.execute(f"CREATE TABLE {table} (projection_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, "
                            f"memory_artifact_id {ID} NOT NULL, entry_id {ID} NOT NULL, searchable_text {TEXT} NOT NULL, "
                            f"{FULLTEXT.format(t=table)})")
                start = time.perf_counter()
                for i in range(0, n, 1000):
                    part = rows[i:i + 1000]
                    cur.execute(f"INSERT INTO {table} (memory_artifact_id, entry_id, searchable_text) VALUES "
                                + ",".join(["(%s, %s, %s)"] * len(part)), [v for r in part for v in r])
                con.commit()
                load = time.perf_counter() - start
                count_sql = f"SELECT COUNT(*) FROM {table} WHERE MATCH(searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE)"
                states = [("fresh", timings(cur, queries, depths, count_sql, OB(table)))]
                cur.execute("EXPLAIN " + ob_statement(max(depths), table), (" ".join(queries[0]),) * 2)
                plan = "\n".join(str(r[0]) for r in cur.fetchall())
                if args.compact:
                    start = time.perf_counter()
                    cur.execute("ALTER SYSTEM MINOR FREEZE")
                    time.sleep(30)  # the dump first: a major freeze before it changed nothing
                    cur.execute("ALTER SYSTEM MAJOR FREEZE")
                    time.sleep(90)  # compaction_bench's settle
                    states.append((f"after minor + major freeze ({time.perf_counter() - start:.0f} s)",
                                   timings(cur, queries, depths, count_sql, OB(table))))
            lite = sqlite_side(rows, queries, depths)
            print(f"\n{n:,} rows: OceanBase load {load:.1f} s; plan of LIMIT {max(depths)}:\n{plan}", flush=True)
            for state, t in states + [("SQLite FTS5", lite)]:
                line = (f"{n:,} | {state} | " + " | ".join(f"{t['depth'][d]:.1f}" for d in depths)
                        + f" | {statistics.median(t['matches']):,.0f} | {t['fit']}")
                report.append(line)
                print("  " + line, flush=True)
    print("\n| rows | state | " + " | ".join(f"LIMIT {d} p50 ms" for d in depths)
          + " | matching rows p50 | time of the deepest against matching rows |")
    print("|---:|---|" + "---:|" * len(depths) + "---:|---|")
    for line in report:
        print(f"| {line} |")


if __name__ == "__main__":
    main()
