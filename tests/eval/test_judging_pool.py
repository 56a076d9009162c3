"""Pooling a real database for judging, and exporting a judged pool as a corpus
(issue 44 items 2 and 5): real SQLite files and a real seekdb, the real MiniLM model,
a real subprocess SIGKILLed mid-pool."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.eval.corpora import datasets
from powercontext.eval import harness, judging
from powercontext.eval.__main__ import main
from powercontext.eval.judging.folder import JudgingError, PoolFolder
from powercontext.eval.scoring.sweep import Grid
from powercontext.loop import default_runner

TEXTS = [
    "The crate builds with cargo build --release.",
    "Integration tests need a running Postgres on port 5433.",
    "Releases are tagged vX.Y.Z and published by the CI release job.",
    "Prefer small pull requests reviewed by one maintainer.",
    "The deploy script uploads artifacts to the staging bucket.",
    "Automobiles must be parked in the basement garage overnight.",
]
QUESTIONS = "How is the crate built?\n  How is the   crate built? \nWhere do cars stay at night?\nWhich port does Postgres use for tests?\n"


def run(coro):
    return default_runner().run(coro)


async def _populate(target: str, searches: tuple[str, ...] = (), memories: int = 1) -> list[str]:
    svc = await pc.open(target, embedding="minilm", search_log=True)
    try:
        src = await svc.sources.persist(pc.ContentSource(name="src_notes", content="notes"))
        ids = []
        for m in range(memories):
            rev = await svc.remember(memory=None, sources=(src,), entries=tuple(
                pc.MemoryEntryInput(kind="fact", text=f"{t}" if m == 0 else f"{t} (copy {m})", sources=(src,))
                for t in TEXTS), mode="append")
            ids.append(rev.artifact_id)
        heads = await svc.memories()
        for question in searches:
            await svc.search(question, memories=heads, mode="hybrid")
        return ids
    finally:
        await svc.close()


@pytest.fixture(params=["sqlite", "oceanbase"])
def database(request, tmp_path):
    """A factory of a target (path or URL) of a fresh real database of each kind."""
    made = []

    def make() -> str:
        if request.param == "sqlite":
            return str(tmp_path / f"pool{len(made)}-{uuid.uuid4().hex[:6]}.db")
        server = request.getfixturevalue("oceanbase_url")
        name = "pc_pool_" + uuid.uuid4().hex[:10]
        made.append((server, name))
        return database_url(server, name)

    yield make
    for server, name in made:
        drop_database(server, name)


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_pool_snapshots_memories_and_pools_every_channel(database, tmp_path):
    target = database()
    (memory,) = run(_populate(target))
    questions = tmp_path / "questions.txt"
    questions.write_text(QUESTIONS, encoding="utf-8")
    out = judging.pool(target, tmp_path / "pool", questions=questions, depth=3)
    folder = PoolFolder(out)
    meta = folder.meta()
    assert meta["complete"] is True and meta["depth"] == 3 and meta["questions_from"] == "file"
    assert meta["memories"] == [{"artifact_id": memory, "revision": 1}]
    assert meta["profiles"] == ["minilm-l6-v2"]
    queries = list(folder.queries().values())
    assert [q["text"] for q in queries] == ["How is the crate built?", "Where do cars stay at night?",
                                          "Which port does Postgres use for tests?"]  # the duplicate folded
    assert all(q["memories"] == [memory] for q in queries)
    entries = folder.memories()
    assert len(entries) == len(TEXTS) and {e["memory"] for e in entries.values()} == {memory}
    pool = folder.pool_lines()
    by_query = {}
    for line in pool:
        by_query.setdefault(line["query_id"], []).append(line)
        assert line["entry_id"] in entries
    assert set(by_query) == {q["id"] for q in queries}
    for lines in by_query.values():
        # each channel adds its own top 3: the union holds 3..9 entries, each pair once
        assert 3 <= len(lines) <= 9 and len({line["entry_id"] for line in lines}) == len(lines)
        assert all(line["pooled"] == len(lines) for line in lines)
    cars = next(q["id"] for q in queries if "cars" in q["text"])
    garage = next(e["id"] for e in entries.values() if "garage" in e["text"])
    line = next(line for line in by_query[cars] if line["entry_id"] == garage)
    # no word shared with the question: only admission-off vector and hybrid search pool it
    assert "vector@minilm-l6-v2" in line["sources"] and "fts@minilm-l6-v2" not in line["sources"]
    built = next(q["id"] for q in queries if "crate" in q["text"])
    cargo = next(e["id"] for e in entries.values() if "cargo" in e["text"])
    line = next(line for line in by_query[built] if line["entry_id"] == cargo)
    assert {"fts@minilm-l6-v2", "vector@minilm-l6-v2", "hybrid@minilm-l6-v2"} <= set(line["sources"])
    assert line["best_rank"] == 1


def test_pool_from_the_search_log_counts_questions_and_adds_what_it_admitted(database, tmp_path):
    target = database()
    run(_populate(target, searches=("cargo build release", "cargo  build release", "Postgres port")))
    out = judging.pool(target, tmp_path / "pool", from_log=True, depth=2)
    folder = PoolFolder(out)
    queries = {q["text"]: q for q in folder.queries().values()}
    assert set(queries) == {"cargo build release", "Postgres port"}
    assert queries["cargo build release"]["meta"]["log_count"] == 2
    assert folder.meta()["questions_from"] == "log"
    logged = [line for line in folder.pool_lines() if "log" in line["sources"]]
    assert logged, "the log's admitted hits are pooled"
    cargo = next(e["id"] for e in folder.memories().values() if "cargo" in e["text"])
    assert any(line["entry_id"] == cargo and line["query_id"] == queries["cargo build release"]["id"]
               for line in logged)


def test_pool_refuses_bad_input_and_writes_nothing(tmp_path):
    empty = tmp_path / "empty.db"
    run(_empty(str(empty)))
    questions = tmp_path / "q.txt"
    questions.write_text("How is it built?\n", encoding="utf-8")
    out = tmp_path / "pool"
    cases = [
        (dict(db_or_url=empty, questions=questions), "holds no Memory"),
        (dict(db_or_url=tmp_path / "missing.db", questions=questions), "no database at"),
        (dict(db_or_url=empty, questions=questions, embeddings=("minilm", "minilm-l6-v2")), "named twice"),
        (dict(db_or_url=empty, questions=questions, depth=0), "depth must be"),
        (dict(db_or_url=empty), "either from_log"),
    ]
    full = tmp_path / "full.db"
    run(_populate(str(full)))
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"caf\xe9\n")
    blank = tmp_path / "blank.txt"
    blank.write_text("first\n\nthird\n", encoding="utf-8")
    cases += [
        (dict(db_or_url=full, questions=bad), "not UTF-8"),
        (dict(db_or_url=full, questions=blank), "blank.txt:2: empty line"),
        (dict(db_or_url=full, questions=questions, memories=["mem_art_nope"]), "unknown Memory"),
        (dict(db_or_url=full, from_log=True), "search log is empty"),  # the log was on but no search ran
    ]
    for kwargs, words in cases:
        with pytest.raises(JudgingError, match=words) as info:
            judging.pool(out=out, **kwargs)
        assert "\n" not in str(info.value)
        assert not out.exists(), f"{words}: a refused pool left {out}"
    assert not (tmp_path / "missing.db").exists()
    code = main(["pool", str(full), "--out", str(out), "--questions", str(blank)])
    assert code == 2 and not out.exists()


async def _empty(target: str) -> None:
    svc = await pc.open(target, embedding="minilm")
    await svc.close()


_CHILD = """
import sys
from powercontext.eval import judging
judging.pool(sys.argv[1], sys.argv[2], questions=sys.argv[3], depth=5)
"""


def test_a_sigkilled_pool_resumes_without_repeating_a_question(tmp_path):
    target = str(tmp_path / "big.db")
    run(_populate(target, memories=3))
    questions = tmp_path / "q.txt"
    questions.write_text("".join(f"question number {i} about the build and port {i}\n" for i in range(300)),
                         encoding="utf-8")
    out = tmp_path / "pool"
    child = subprocess.Popen([sys.executable, "-c", _CHILD, target, str(out), str(questions)],
                             env={**os.environ, "HF_HUB_OFFLINE": "1"})
    pool_file = out / "pool.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if pool_file.exists() and pool_file.stat().st_size > 2000:
            break
        time.sleep(0.01)
    assert child.poll() is None, "the pool finished before it could be killed"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    folder = PoolFolder(out)
    assert folder.meta()["complete"] is False
    judging.pool(target, out, questions=questions, depth=5)
    lines = folder.pool_lines()
    assert folder.meta()["complete"] is True
    pairs = [(line["query_id"], line["entry_id"]) for line in lines]
    assert len(pairs) == len(set(pairs)), "a question was pooled twice"
    assert {q for q, _ in pairs} == set(folder.queries())
    by_query = {}
    for line in lines:
        by_query.setdefault(line["query_id"], []).append(line)
    assert all(line["pooled"] == len(by_query[line["query_id"]]) for line in lines)
    # the resumed pool equals an uninterrupted one
    fresh = PoolFolder(judging.pool(target, tmp_path / "fresh", questions=questions, depth=5))
    assert sorted(pairs) == sorted((line["query_id"], line["entry_id"]) for line in fresh.pool_lines())


# ---------------------------------------------------------------- export


def _judge(folder: Path, judge: str, rows: list[dict], raw_tail: str = "") -> None:
    path = folder / "judgments" / f"{judge}.jsonl"
    path.parent.mkdir(exist_ok=True)
    text = "".join(json.dumps({"judge": judge, "at": "2026-12-06T21:00:00+00:00", "note": None, **r}) + "\n"
                   for r in rows)
    path.write_text(text + raw_tail, encoding="utf-8")


@pytest.fixture(scope="module")
def pooled(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    target = str(tmp / "memory.db")
    run(_populate(target))
    questions = tmp / "questions.txt"
    questions.write_text(QUESTIONS, encoding="utf-8")
    return judging.pool(target, tmp / "pool", questions=questions, depth=3)


def _copy(pooled: Path, tmp_path: Path) -> tuple[Path, dict, dict]:
    import shutil

    folder = tmp_path / "pool"
    shutil.copytree(pooled, folder)
    f = PoolFolder(folder)
    queries = {q["text"]: q["id"] for q in f.queries().values()}
    entries = {e["text"]: e["id"] for e in f.memories().values()}
    return folder, queries, entries


def test_export_writes_a_corpus_that_validates_and_sweeps(pooled, tmp_path):
    folder, q, e = _copy(pooled, tmp_path)
    built, cars, port = q["How is the crate built?"], q["Where do cars stay at night?"], q[
        "Which port does Postgres use for tests?"]
    cargo, garage = e[TEXTS[0]], e[TEXTS[5]]
    rows = [
        {"query_id": built, "entry_id": cargo, "grade": 1, "outcome": "graded"},
        {"query_id": built, "entry_id": cargo, "grade": 2, "outcome": "graded"},  # the latest wins
        {"query_id": built, "entry_id": e[TEXTS[2]], "grade": 0, "outcome": "graded"},
        {"query_id": cars, "entry_id": garage, "grade": 2, "outcome": "graded"},
        {"query_id": port, "entry_id": None, "grade": None, "outcome": "unanswerable"},
    ]
    # a question is judged when every pooled candidate is graded (JudgmentLog.judged): the rest get 0
    graded = {(r["query_id"], r["entry_id"]) for r in rows}
    fill = [{"query_id": line["query_id"], "entry_id": line["entry_id"], "grade": 0, "outcome": "graded"}
            for line in _lines(folder / "pool.jsonl")
            if line["query_id"] in (built, cars) and (line["query_id"], line["entry_id"]) not in graded]
    _judge(folder, "alice", rows + fill, raw_tail='{"query_id": "' + built + '", "entry_')  # cut by a crash
    _judge(folder, "bob", [{**rows[1], "grade": 1}, rows[2], rows[3], *fill])
    corpus = tmp_path / "corpus"
    assert main(["export", str(folder), "--out", str(corpus)]) == 0
    loaded = datasets.validate(corpus)
    assert {x.id for x in loaded.queries} == {built, cars, port}
    qrels = (corpus / "qrels.trec").read_text(encoding="utf-8").splitlines()
    assert sorted(qrels) == sorted([f"{built} 0 {cargo} 2", f"{built} 0 {e[TEXTS[2]]} 0", f"{cars} 0 {garage} 2"]
                                   + [f"{r['query_id']} 0 {r['entry_id']} 0" for r in fill])
    queries = _lines(corpus / "queries.jsonl")
    assert {x["id"] for x in queries} == {built, cars, port}
    assert next(x for x in queries if x["id"] == port)["tags"] == ["unanswerable"]
    readme = (corpus / "README.md").read_text(encoding="utf-8")
    assert "judge `alice`" in readme and f"bob: {3 + len(fill)} pairs graded by both, 1 disagreeing" in readme
    assert "TREC convention" in readme and "top 3" in readme and "truncated last line ignored" in readme
    assert readme.split("<!-- counts:begin -->")[1].split("<!-- counts:end -->")[0].strip()  # counts generated
    # the harness measures it as it is
    result = harness.sweep(corpus, modes=("fts",), grid=Grid((1,), (0.0,), (0.3,), (8,)),
                           out=tmp_path / "run", progress=False)
    assert result is not None and (tmp_path / "run" / "summary.json").exists()
    # --judge bob: bob's grades make the qrels
    assert main(["export", str(folder), "--out", str(tmp_path / "bob"), "--judge", "bob"]) == 0
    assert f"{built} 0 {cargo} 1" in (tmp_path / "bob" / "qrels.trec").read_text(encoding="utf-8")


def test_export_refuses_bad_folders_and_writes_nothing(pooled, tmp_path):
    folder, q, e = _copy(pooled, tmp_path)
    built, cargo = q["How is the crate built?"], e[TEXTS[0]]
    corpus = tmp_path / "corpus"
    cases = [
        ([{"query_id": built, "entry_id": None, "grade": None, "outcome": "skip"}], "no judged question"),
        ([{"query_id": built, "entry_id": "mem_ent_elsewhere", "grade": 1, "outcome": "graded"}],
         "not in the snapshot"),
        ([{"query_id": built, "entry_id": cargo, "grade": 3, "outcome": "graded"}], "is not 0, 1 or 2"),
        ([{"query_id": "q-unknown", "entry_id": cargo, "grade": 1, "outcome": "graded"}], "not in the pool"),
    ]
    for rows, words in cases:
        _judge(folder, "default", rows)
        with pytest.raises(JudgingError, match=words) as info:
            judging.export(folder, corpus)
        assert "\n" not in str(info.value)
        assert not corpus.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".corpus")]
    (folder / "judgments" / "default.jsonl").unlink()
    with pytest.raises(JudgingError, match="no judgments"):
        judging.export(folder, corpus)
    assert main(["export", str(folder), "--out", str(corpus)]) == 2 and not corpus.exists()
