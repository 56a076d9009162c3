"""Pooling under a second embedding profile (issue 44 item 2, ``--embeddings minilm,e5``):
a real database (SQLite and seekdb) embedded with MiniLM, pooled under MiniLM and the
real multilingual E5 model; the E5 half must find what pooling a real E5 database of
the same entries finds."""

from __future__ import annotations

from powercontext.eval import judging
from powercontext.eval.__main__ import main
from powercontext.eval.judging.folder import PoolFolder

from .test_judging_pool import TEXTS, _populate, database, run  # noqa: F401  (database: a fixture)

import powercontext as pc

MINI, E5 = "minilm-l6-v2", "multilingual-e5-small-q4"
QUESTIONS = "Where do cars stay at night?\nWhich port does Postgres use for tests?\n"


async def _e5_copy(target: str) -> None:
    svc = await pc.open(target, embedding="e5")
    try:
        src = await svc.sources.persist(pc.ContentSource(name="src_notes", content="notes"))
        await svc.remember(memory=None, sources=(src,), mode="append", entries=tuple(
            pc.MemoryEntryInput(kind="fact", text=t, sources=(src,)) for t in TEXTS))
    finally:
        await svc.close()


def _found(folder: PoolFolder, source: str) -> dict[str, set[str]]:
    """question text → texts of the entries ``source`` pooled for it."""
    texts = {e["id"]: e["text"] for e in folder.memories().values()}
    questions = {q["id"]: q["text"] for q in folder.queries().values()}
    out: dict[str, set[str]] = {q: set() for q in questions.values()}
    for line in folder.pool_lines():
        if source in line["sources"]:
            out[questions[line["query_id"]]].add(texts[line["entry_id"]])
    return out


def test_a_pool_under_two_profiles_says_which_found_each_candidate(database, tmp_path):
    target = database()
    run(_populate(target))
    questions = tmp_path / "questions.txt"
    questions.write_text(QUESTIONS, encoding="utf-8")
    code = main(["pool", target, "--out", str(tmp_path / "pool"), "--questions", str(questions), "--depth", "2",
                 "--embeddings", "minilm,e5"])
    assert code == 0
    folder = PoolFolder(tmp_path / "pool")
    assert folder.meta()["profiles"] == [MINI, E5] and folder.meta()["complete"] is True
    lines = folder.pool_lines()
    pairs = [(line["query_id"], line["entry_id"]) for line in lines]
    assert len(pairs) == len(set(pairs)), "one line per question and entry, whichever profile found it"
    sources = {s for line in lines for s in line["sources"]}
    assert {f"fts@{MINI}", f"vector@{MINI}", f"hybrid@{MINI}", f"vector@{E5}", f"hybrid@{E5}"} <= sources
    assert f"fts@{E5}" not in sources  # full text does not depend on the model: pooled once
    for line in lines:
        assert line["pooled"] == sum(1 for other in lines if other["query_id"] == line["query_id"])
        found_by = {s.split("@")[1] for s in line["sources"]}
        assert set(line.get("channels", {})) <= found_by | {MINI}
    assert any(set(line.get("channels", {})) == {MINI, E5} for line in lines)

    # the E5 half is what a real E5 database of the same entries pools
    e5_db = str(tmp_path / "e5.db")
    run(_e5_copy(e5_db))
    judging.pool(e5_db, tmp_path / "e5pool", questions=questions, depth=2, embeddings=("e5",))
    reference = PoolFolder(tmp_path / "e5pool")
    # (vector only: hybrid's and full text's ties fall to entry ids, which differ between databases)
    assert _found(folder, f"vector@{E5}") == _found(reference, f"vector@{E5}")
    assert all(len(texts) == 2 for texts in _found(folder, f"vector@{E5}").values())
    assert all(texts for texts in _found(folder, f"hybrid@{E5}").values())
    # the judging order reads the database's profile's signals
    assert len(judging.judging_order(folder.root)) == 2
