"""The researcher's loop timed end to end (issue 44's closing note): search log → pool →
judge import → export → sweep → the policy to paste.

    .venv/bin/python benchmarks/judging_loop.py [atlas-etl] [--depth 20]

A bundled corpus stands in for an agent's memory: its entries are written into a fresh
SQLite database with MiniLM (setup, timed apart), then every step runs as a new
process through the public entry points, the way a user runs them from a shell:

1. log: a process opens the database with ``search_log=True`` and asks every question
   of the corpus (hybrid search, the default policy) — the agent's own use;
2. ``python -m powercontext.eval pool DB --out POOL --from-log --depth D``;
3. ``python -m powercontext.eval judge POOL --import QRELS``: the judge's grades are the
   corpus's qrels mapped to the folder's ids (every pooled candidate graded, 0 where the
   corpus has no grade; a question with no relevant entry comes out unanswerable);
4. ``python -m powercontext.eval export POOL --out CORPUS``;
5. ``python -m powercontext.eval sweep --dataset CORPUS --backends sqlite --modes hybrid``;
6. the policy: the run's ``policy.json`` (its joint recommendation) loaded as a user
   pastes it, ``pc.AdmissionPolicy.load(path)``.

Each step's wall time includes starting Python and importing the library, as a user
pays it. Run from this clone's venv (installed editable, as ``make setup`` installs a
fresh clone's).

Measured 2026-12-06 on atlas-etl (229 entries, 209 questions, depth 20; 2 cores, the
machine loaded by other test runs, load average ~10-18, so read these as upper bounds):
setup 72.7 s; 1 log 53.5 s, 2 pool 153.8 s (6,229 question-entry pairs), 3 judge import
14.3 s, 4 export 17.2 s, 5 sweep 250.5 s (hybrid, the full default grid, 5-fold CV),
6 policy 4.3 s — the loop 493.6 s (8.2 min).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import powercontext as pc  # noqa: E402
from powercontext.eval.corpora import datasets  # noqa: E402
from powercontext.eval.judging.folder import PoolFolder  # noqa: E402
from powercontext.eval.judging.pool import fold, query_id  # noqa: E402
from powercontext.eval.running.loader import load_corpus  # noqa: E402

ASK = """
import asyncio, json, sys
import powercontext as pc

async def main(db, questions):
    svc = await pc.open(db, embedding="minilm", search_log=True)
    try:
        heads = {h.artifact_id: h for h in await svc.memories()}
        for text, memories in questions:
            await svc.search(text, memories=tuple(heads[m] for m in memories), mode="hybrid")
    finally:
        await svc.close()

asyncio.run(main(sys.argv[1], json.load(open(sys.argv[2]))))
"""


async def setup(name: str, db: Path):
    corpus = datasets.load(ROOT / "datasets" / name)
    svc = await pc.open(str(db), embedding="minilm")
    try:
        return corpus, await load_corpus(svc, corpus)
    finally:
        await svc.close()


def step(label: str, argv: list[str], times: list[tuple[str, float]]) -> str:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=None)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{label} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    times.append((label, seconds))
    print(f"{label:<14} {seconds:7.1f} s   {done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ''}",
          flush=True)
    return done.stdout


def qrels_for(folder: PoolFolder, corpus, loaded) -> str:
    """The corpus's grades in the folder's ids, every pooled candidate graded."""
    to_folder = {}
    for row in folder.memories().values():
        key = (row["memory"], row["meta"]["entry_id"])
        to_folder[loaded.corpus_ids[key]] = row["id"]
    pooled: dict[str, set[str]] = {}
    for line in folder.pool_lines():
        pooled.setdefault(line["query_id"], set()).add(line["entry_id"])
    lines = []
    for q in corpus.queries:
        qid = query_id(fold(q.text))
        if qid not in pooled:
            continue
        grades = {to_folder[e]: min(g, 2) for e, g in q.judgements.items() if e in to_folder}
        for entry in sorted(pooled[qid] | set(grades)):
            lines.append(f"{qid} 0 {entry} {grades.get(entry, 0)}\n")
    return "".join(lines)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default="atlas-etl")
    parser.add_argument("--depth", type=int, default=20)
    args = parser.parse_args(argv)
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="pc-judging-loop-") as tmp:
        work = Path(tmp)
        db = work / "memory.db"
        start = time.perf_counter()
        corpus, loaded = asyncio.run(setup(args.corpus, db))
        print(f"setup: {args.corpus} ({len(corpus.memories)} entries) written with MiniLM in "
              f"{time.perf_counter() - start:.1f} s (not part of the loop)", flush=True)
        questions = work / "questions.json"
        import json

        questions.write_text(json.dumps([[q.text, [loaded.heads[m].artifact_id for m in q.memories]]
                                         for q in corpus.queries]), encoding="utf-8")
        times: list[tuple[str, float]] = []
        eval_cli = [py, "-m", "powercontext.eval"]
        step(f"1 log ({len(corpus.queries)} q)", [py, "-c", ASK, str(db), str(questions)], times)
        step("2 pool", [*eval_cli, "pool", str(db), "--out", str(work / "pool"), "--from-log", "--depth",
                        str(args.depth)], times)
        qrels = work / "judged.qrels"
        qrels.write_text(qrels_for(PoolFolder(work / "pool"), corpus, loaded), encoding="utf-8")
        step("3 judge import", [*eval_cli, "judge", str(work / "pool"), "--import", str(qrels)], times)
        step("4 export", [*eval_cli, "export", str(work / "pool"), "--out", str(work / "corpus")], times)
        step("5 sweep", [*eval_cli, "sweep", "--dataset", str(work / "corpus"), "--backends", "sqlite", "--modes",
                         "hybrid", "--out", str(work / "run")], times)
        step("6 policy", [py, "-c", "import sys, powercontext as pc; print(pc.AdmissionPolicy.load(sys.argv[1]))",
                          str(work / "run" / "policy.json")], times)
        total = sum(s for _, s in times)
        print(f"loop total {total:.1f} s ({total / 60:.1f} min)")
        print("| step | seconds |\n|---|---|\n" + "\n".join(f"| {label} | {s:.1f} |" for label, s in times)
              + f"\n| total | {total:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1:])
