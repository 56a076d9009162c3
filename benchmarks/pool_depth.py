"""How big a judging pool is per question, and how much of a bundled corpus's relevant
entries it holds (pool recall), at depths 10/20/40 (issue 44 item 2's closing note).

    .venv/bin/python benchmarks/pool_depth.py [atlas-etl lantern-relay]

Each corpus is loaded into a fresh SQLite database with MiniLM; every question is pooled
exactly as ``judging.pool`` pools it (``pool.pool_question``: full-text, vector and hybrid
top-depth with admission off, unioned), over the Memories the question searches. Pool
recall = relevant (grade >= 1) qrels pairs found in the pool / all relevant pairs.

Measured (MiniLM, SQLite, 2 cores) on 2026-12-06 (atlas-etl, lantern-relay) and 2026-12-07 (harbor-web,
tidewater-cli, ``pool_depth.py harbor-web tidewater-cli``):

| corpus | depth | mean pool / question | max | pool recall (relevant pairs) |
|---|---|---|---|---|
| atlas-etl | 10 | 16.7 | 24 | 0.843 (241/286) |
| atlas-etl | 20 | 29.8 | 44 | 0.909 (260/286) |
| atlas-etl | 40 | 51.5 | 73 | 0.951 (272/286) |
| lantern-relay | 10 | 15.6 | 24 | 0.734 (359/489) |
| lantern-relay | 20 | 27.3 | 47 | 0.830 (406/489) |
| lantern-relay | 40 | 46.3 | 78 | 0.894 (437/489) |
| harbor-web | 10 | 17.0 | 24 | 0.803 (236/294) |
| harbor-web | 20 | 30.4 | 43 | 0.871 (256/294) |
| harbor-web | 40 | 51.8 | 72 | 0.932 (274/294) |
| tidewater-cli | 10 | 16.9 | 24 | 0.753 (330/438) |
| tidewater-cli | 20 | 30.8 | 43 | 0.833 (365/438) |
| tidewater-cli | 40 | 53.0 | 73 | 0.904 (396/438) |
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

import powercontext as pc
from powercontext.eval.corpora import datasets
from powercontext.eval.judging.pool import pool_question
from powercontext.eval.running.loader import load_corpus

DEPTHS = (10, 20, 40)


async def measure(name: str) -> list[str]:
    corpus = datasets.load(Path("datasets") / name)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        svc = await pc.open(str(Path(tmp) / "pool.db"), embedding="minilm")
        try:
            loaded = await load_corpus(svc, corpus)
            profile = svc.backend.embedding_profile.profile_id
            relevant = {(q, e) for q, grades in corpus.qrels.items() for e, g in grades.items() if g >= 1}
            for depth in DEPTHS:
                sizes, found = [], set()
                for query in corpus.queries:
                    row = {"id": query.id, "text": query.text, "logged": []}
                    lines = await pool_question(svc, row, loaded.refs(query.memories), depth, profile,
                                                 loaded.corpus_ids)
                    sizes.append(len(lines))
                    found.update((query.id, line["entry_id"]) for line in lines)
                recall = len(relevant & found) / len(relevant)
                rows.append(f"| {name} | {depth} | {statistics.mean(sizes):.1f} | {max(sizes)} | "
                            f"{recall:.3f} ({len(relevant & found)}/{len(relevant)}) |")
        finally:
            await svc.close()
    return rows


def main(names: list[str]) -> None:
    print("| corpus | depth | mean pool / question | max | pool recall (relevant pairs) |")
    print("|---|---|---|---|---|")
    for name in names:
        for row in asyncio.run(measure(name)):
            print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["atlas-etl", "lantern-relay"])
