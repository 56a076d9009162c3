"""Which questions to judge first (issue 44 item 4): the uncertainty rule on hand-built
candidates (a pure function, hand-computed counts), and the order of a real pool
(real SQLite and seekdb databases, the real MiniLM model) read from the pool folder
alone, equal to the rule applied to a live retrieval, and followed by the widget."""

from __future__ import annotations

import json
import math

import pytest

from powercontext.eval import judging
from powercontext.eval.judging.folder import JudgingError, PoolFolder
from powercontext.eval.judging.order import order_questions, pool_channels, uncertainty
from powercontext.magics.widgets.judge import JudgeWidget
from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy
from powercontext.model import ArtifactRef, ChannelCandidate

from .test_judging_pool import QUESTIONS, _populate, database, run  # noqa: F401  (database: a fixture)

import powercontext as pc

MINILM = AdmissionPolicy.default_for("minilm")  # centred ≥ 0.31; hybrid FTS 4 terms / 0.34
REF = ArtifactRef("mem_art_a", 1)


def vec(entry: str, rank: int, centred: float) -> ChannelCandidate:
    return ChannelCandidate("vector", rank, REF, entry, f"v-{entry}", "h", "fact", "t", cosine=centred + 0.2,
                            centred=centred, covered=True, script="latin", query_script="latin")


def fts(entry: str, rank: int, matched: int, of: int = 10) -> ChannelCandidate:
    return ChannelCandidate("fts", rank, REF, entry, f"v-{entry}", "h", "fact", "t",
                            matched_terms=tuple(f"t{i}" for i in range(matched)), query_term_count=of,
                            script="latin", query_script="latin", pool_rank=rank - 1)


def test_a_candidate_near_a_threshold_and_channels_that_disagree_make_a_question_uncertain():
    # the band moves the centred floor to 0.28 / 0.34 and the hybrid FTS need (10 terms) to 3 / 5
    channels = {
        "vector": (vec("near", 1, 0.30), vec("sure", 2, 0.60), vec("far", 3, 0.05), vec("split", 4, 0.10)),
        "fts": (fts("split", 1, 8), fts("edge", 2, 4), fts("none", 3, 1)),
    }
    u = uncertainty(channels, MINILM, "q", log_count=1)
    # borderline: "near" (0.28 ≤ 0.30 < 0.34) and "edge" (4 of 10 terms: 3 admit it, 5 do not)
    assert (u.borderline, u.disagreeing) == (2, 1)  # "split": full text admits it (8 ≥ 4), vector refuses
    assert u.priority == 3.0
    often = uncertainty(channels, MINILM, "q", log_count=5)
    assert math.isclose(often.priority, 3.0 * (1 + math.log(5)))
    certain = uncertainty({"vector": (vec("sure", 1, 0.60), vec("far", 2, 0.05)), "fts": ()}, MINILM, "c")
    assert (certain.borderline, certain.disagreeing, certain.priority) == (0, 0, 0.0)
    # beyond a default search's pool (32) a candidate does not count, however near
    deep = uncertainty({"vector": tuple(vec(f"e{i}", i + 1, 0.9) for i in range(32)) + (vec("deep", 33, 0.31),)},
                       MINILM, "d")
    assert deep.borderline == 0


def test_order_is_most_uncertain_first_then_most_asked_then_as_given():
    scores = [uncertainty({}, MINILM, "plain"),
              uncertainty({"vector": (vec("n", 1, 0.32),)}, MINILM, "uncertain"),
              uncertainty({}, MINILM, "asked", log_count=9),
              uncertainty({}, MINILM, "plain2")]
    assert [s.query_id for s in order_questions(scores)] == ["uncertain", "asked", "plain", "plain2"]


def test_a_real_pool_orders_from_its_own_signals_as_a_live_retrieval_would(database, tmp_path):
    target = database()
    run(_populate(target))
    questions = tmp_path / "questions.txt"
    questions.write_text(QUESTIONS + "Which Postgres port and which release job do tests use?\n", encoding="utf-8")
    out = judging.pool(target, tmp_path / "pool", questions=questions, depth=6)
    folder = PoolFolder(out)
    lines = folder.pool_lines()
    assert all(set(line["channels"]) == {"minilm-l6-v2"} for line in lines)  # every pooled entry: hybrid signals
    order = judging.judging_order(out, by="uncertainty")
    assert sorted(s.query_id for s in order) == sorted(folder.queries())
    assert any(s.priority > 0 for s in order), "a question near a threshold"
    assert [s.priority for s in order] == sorted((s.priority for s in order), reverse=True)

    # the same rule on a live admission-off retrieval (restricted to what was pooled) agrees
    async def live() -> dict[str, tuple[int, int]]:
        svc = await pc.open(target, embedding="minilm")
        try:
            heads = await svc.memories()
            found = {}
            for qid, q in folder.queries().items():
                pooled = {(e["meta"]["entry_id"]) for line in lines if line["query_id"] == qid
                          for e in [folder.memories()[line["entry_id"]]]}
                retrieval, _, _ = await svc.retrieve(q["text"], heads, limit=6, mode="hybrid",
                                                     policy=admission.NO_ADMISSION)
                channels = {n: tuple(c for c in cands if c.entry_id in pooled) for n, cands in retrieval.channels.items()}
                u = uncertainty(channels, MINILM, qid)
                found[qid] = (u.borderline, u.disagreeing)
            return found
        finally:
            await svc.close()

    assert {s.query_id: (s.borderline, s.disagreeing) for s in order} == run(live())
    rebuilt = pool_channels([line for line in lines if line["query_id"] == order[0].query_id], folder.memories())
    assert set(rebuilt) == {"fts", "vector"}

    # the widget offers the most uncertain question first when asked; --order file keeps the folder's order
    widget = JudgeWidget(out, judge="ordered", order="uncertainty")
    try:
        assert widget.questions == [s.query_id for s in order] and widget.query_id == order[0].query_id
    finally:
        widget.close()
    widget = JudgeWidget(out, judge="filed", order="file")
    try:
        assert widget.questions == list(folder.queries())
    finally:
        widget.close()


def test_a_pool_without_stored_signals_orders_by_log_count(tmp_path):
    from tests.judge_pool import write_pool

    folder = write_pool(tmp_path / "old")
    rows = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    rows[2]["meta"]["log_count"] = 7  # q-weather asked most often
    (folder / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert [s.query_id for s in judging.judging_order(folder, by="uncertainty")] == ["q-weather", "q-build", "q-deploy"]
    assert [s.query_id for s in judging.judging_order(folder, by="file")] == ["q-build", "q-deploy", "q-weather"]
    with pytest.raises(JudgingError, match="judging order must be one of sample, uncertainty, file"):
        judging.judging_order(folder, by="random")
