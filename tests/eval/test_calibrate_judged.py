"""Issue 46 §3: ``harness.calibrate`` fits a user's own calibration on a corpus exported
from judged questions (the researcher's loop: a real database → ``judging.pool`` →
judgments → ``judging.export`` → ``harness.calibrate``), with k-fold held-out scores and
the cell table; a tiny export is refused with the typed too-few-labels error naming the
count needed, and writes nothing. Real SQLite files, the real MiniLM model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import powercontext as pc
from powercontext.bundled import MINILM_PROFILE
from powercontext.errors import PowerContextError
from powercontext.eval import harness, judging
from powercontext.eval.corpora import datasets
from powercontext.eval.scoring.calibrate import TooFewLabelsError
from powercontext.eval.judging.folder import PoolFolder
from powercontext.loop import default_runner
from powercontext.memory.calibration import Calibration

#: (entry, the question it answers or None)
FACTS = [
    ("The crate builds with cargo build --release.", "How is the crate built?"),
    ("Integration tests need a running Postgres on port 5433.", "Which port does Postgres use for the tests?"),
    ("Releases are tagged vX.Y.Z and published by the CI release job.", "How are releases tagged?"),
    ("Prefer small pull requests reviewed by one maintainer.", "How many maintainers review a pull request?"),
    ("The deploy script uploads artifacts to the staging bucket.", "Where does the deploy script upload artifacts?"),
    ("Logs rotate every night at 02:00 UTC.", "When do the logs rotate?"),
    ("Secrets live in Vault, never in the repository.", "Where do secrets live?"),
    ("The staging database is reset every Sunday night.", "When is the staging database reset?"),
    ("生产数据库每天凌晨三点自动备份到 S3。", "How often is the production database backed up?"),
    ("代码评审至少需要一位同事批准后才能合并。", "代码合并前需要几个人批准？"),
    ("Feature flags are managed in LaunchDarkly.", None),
    ("The frontend is written in React 18 and TypeScript.", None),
]
UNANSWERABLE = ["What is the office wifi password?", "Who approves database migrations?"]


def _export(tmp_path: Path, questions: list[str], name: str) -> Path:
    """A real pool of ``questions`` over the FACTS memory, every pooled pair judged (the
    answer 2, the rest 0), exported as a corpus folder."""
    target = str(tmp_path / f"{name}.db")

    async def populate():
        svc = await pc.open(target, embedding="minilm")
        try:
            await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", text) for text, _ in FACTS))
        finally:
            await svc.close()

    default_runner().run(populate())
    asked = tmp_path / f"{name}-questions.txt"
    asked.write_text("\n".join(questions) + "\n", encoding="utf-8")
    folder = Path(judging.pool(target, tmp_path / f"{name}-pool", questions=asked, depth=8))
    pool = PoolFolder(folder)
    answer = {q: text for text, q in FACTS if q}
    texts = {e["id"]: e["text"] for e in pool.memories().values()}
    by_text = {q["id"]: q["text"] for q in pool.queries().values()}
    rows = []
    for line in (folder / "pool.jsonl").read_text(encoding="utf-8").splitlines():
        pair = json.loads(line)
        right = answer.get(by_text[pair["query_id"]]) == texts[pair["entry_id"]]
        rows.append({"judge": "default", "at": "2026-12-07T03:00:00+00:00", "note": None, "query_id": pair["query_id"],
                     "entry_id": pair["entry_id"], "grade": 2 if right else 0, "outcome": "graded"})
    (folder / "judgments").mkdir(exist_ok=True)
    (folder / "judgments" / "default.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    corpus = tmp_path / f"{name}-corpus"
    judging.export(folder, corpus)
    datasets.validate(corpus)
    return corpus


def test_calibrate_fits_a_judged_export_and_scores_it_held_out(tmp_path):
    questions = [q for _, q in FACTS if q] + UNANSWERABLE
    corpus = _export(tmp_path, questions, "judged")
    out = tmp_path / "cal"
    report = harness.calibrate(corpus, "minilm", out=out, folds=3, min_cell_n=5)
    cal = Calibration.load(out / "calibration.json")
    assert cal == report.calibration and cal.profile == MINILM_PROFILE.profile_id
    assert cal.fitted_on == [corpus.name] and cal.min_cell_n == 5 and cal.vector is not None
    # the vector channel rests on every judged pair the pool holds, relevant ones among them
    assert cal.vector.pooled.n >= len(questions) and 0 < cal.vector.pooled.positives < cal.vector.pooled.n
    assert "latin>cjk" in cal.vector.cells or "latin>cjk" not in set(report.scored["cell"])
    # held out: every labelled candidate got a probability from a fit that did not see its question
    assert report.folds == "3" and set(report.scored["fold"]) == {"fold 1", "fold 2", "fold 3"}
    assert report.scored["probability"].dropna().between(0, 1).all()
    assert (report.cells["n"] > 0).all() and report.cells["ece"].between(0, 1).all()
    assert (out / "calibration.md").exists() and (out / "reliability.png").read_bytes()[:4] == b"\x89PNG"
    # the artefact serves the profile it was fitted for: a search reads its probabilities
    assert cal.probability(next(_vector_candidates(report)))[0] is not None


def _vector_candidates(report):
    from powercontext.eval.scoring.calibrate import _signals

    for row in report.scored[report.scored["channel"] == "vector"].to_dict("records"):
        yield _signals(row)


def test_a_tiny_judged_export_is_refused_with_the_count_needed_and_writes_nothing(tmp_path):
    corpus = _export(tmp_path, ["How is the crate built?"], "tiny")
    out = tmp_path / "cal"
    with pytest.raises(TooFewLabelsError) as info:
        harness.calibrate(corpus, "minilm", out=out, folds=3)
    message = str(info.value)
    assert isinstance(info.value, PowerContextError) and "\n" not in message
    assert "needs at least 30 labelled candidates" in message and "judge more questions" in message
    assert not out.exists()
