"""Each importer on a small hand-written fixture in the exact upstream layout
(tests/eval/fixtures/): what it maps, what it drops, and the layout errors that name
the file and the first missing field. Every imported folder must validate."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from powercontext.eval.__main__ import main
from powercontext.eval.corpora.datasets import load, validate
from powercontext.eval.corpora.importers import (
    ImporterError,
    LayoutError,
    import_beir,
    import_locomo,
    import_longmemeval,
    import_trec,
)
from powercontext.eval.corpora.importers.common import CorpusBuilder, Datasheet, split_text

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _texts(corpus):
    return {e.id: e.text for e in corpus.memories}


# --- LoCoMo --------------------------------------------------------------------------------


def test_locomo_maps_turns_evidence_adversarial_and_cross_conversation_questions(tmp_path):
    corpus = validate(import_locomo(FIXTURES / "locomo" / "locomo10.json", tmp_path / "locomo"))
    assert corpus.memory_names == ("conv-1", "conv-2")
    texts = _texts(corpus)
    assert len(texts) == 9  # 8 + 2 turns, "Ana: Thanks!" repeated in one session merged into one entry
    assert texts["conv-1:D1:3"] == "Ana: Thanks!" and "conv-1:D1:4" not in texts
    assert texts["conv-1:D2:3"] == "Ana: Thanks!"  # same words, another session: another entry
    assert texts["conv-1:D1:5"] == "Ben: Look at this. [photo: a grey cat sleeping on a red sofa]"
    d11 = corpus.entry("conv-1:D1:1")
    assert d11.sources == ("conv-1:session_1",) and d11.meta == {
        "dia_id": "D1:1", "session": 1, "date_time": "1:56 pm on 8 May, 2023"}
    assert corpus.qrels == {
        "conv-1:q001": {"conv-1:D1:1": 3},
        "conv-1:q002": {"conv-1:D1:1": 3, "conv-1:D2:1": 3},  # "D1:1; D2:1" in one evidence string
        "conv-1:q003": {"conv-1:D1:2": 3},  # D9:9 names no turn: dropped
        "conv-1:q004": {"conv-1:D1:5": 3},
        "conv-2:q001": {"conv-2:D1:1": 3},
        "conv-2:q002": {"conv-2:D1:2": 3},
    }
    queries = {q.id: q for q in corpus.queries}
    assert "conv-1:q006" not in queries  # no evidence at all: not imported
    assert queries["conv-1:q005"].tags == ("category-5", "adversarial") and not queries["conv-1:q005"].is_positive
    assert queries["conv-1:q005"].meta["adversarial_answer"] == "Pixel"
    assert queries["conv-1:q003"].tags == ("category-2",) and queries["conv-1:q003"].lang == "en"
    cross = [q for q in corpus.queries if "cross-conversation" in q.tags]
    assert [(q.id, q.memories, q.text) for q in cross[:2]] == [
        ("conv-1:x01", ("conv-1",), "Which race did Caro sign up for?"),
        ("conv-1:x02", ("conv-1",), "What instrument is Dev learning?")]
    assert len(cross) == 6 and not any(q.is_positive for q in cross)  # conv-2 borrows conv-1's four
    assert len(corpus.queries) == 14 and sum(not q.is_positive for q in corpus.queries) == 8
    readme = (tmp_path / "locomo" / "README.md").read_text()
    assert "CC BY-NC 4.0" in readme and "snap-research/locomo" in readme
    assert "1 evidence id(s) named no turn" in readme and "1 upstream text(s) repeated an earlier one" in readme
    assert "**9 entries**" in readme and "memory `conv-1`" in readme  # the generated counts


def test_locomo_without_cross_questions_and_its_layout_errors(tmp_path):
    corpus = validate(import_locomo(FIXTURES / "locomo", tmp_path / "plain", cross=0))  # a folder works too
    assert not any("cross-conversation" in q.tags for q in corpus.queries)
    data = json.loads((FIXTURES / "locomo" / "locomo10.json").read_text())
    del data[0]["conversation"]["speaker_a"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(LayoutError, match=r"^bad.json: \[0\].conversation: missing field 'speaker_a'$"):
        import_locomo(tmp_path / "bad.json", tmp_path / "x")
    data = json.loads((FIXTURES / "locomo" / "locomo10.json").read_text())
    del data[1]["conversation"]["session_1"][1]["dia_id"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(LayoutError, match=r"\[1\].conversation.session_1\[1\]: missing field 'dia_id'"):
        import_locomo(tmp_path / "bad.json", tmp_path / "x")
    (tmp_path / "bad.json").write_text(json.dumps({"sample_id": "conv-1"}))
    with pytest.raises(LayoutError, match="expected a non-empty JSON list of conversations"):
        import_locomo(tmp_path / "bad.json", tmp_path / "x")
    assert not (tmp_path / "x").exists()  # nothing half-written


# --- LongMemEval -----------------------------------------------------------------------------


def test_longmemeval_turns_judge_marked_turns_and_abstentions_are_negatives(tmp_path):
    corpus = validate(import_longmemeval(FIXTURES / "longmemeval" / "longmemeval_s.json", tmp_path / "lme"))
    assert corpus.memory_names == ("a1b2c3d4", "e5f6a7b8", "c9d0e1f2_abs")
    assert len(corpus.memories) == 12  # every turn of every haystack; a shared session is written per question
    entry = corpus.entry("a1b2c3d4:answer_a1b2c3d4:0")
    assert entry.text == "user: My border collie keeps herding the kids in the garden. Any tips?"
    assert entry.sources == ("answer_a1b2c3d4",) and entry.meta["date"] == "2023/05/22 (Mon) 18:40"
    assert corpus.qrels == {
        "a1b2c3d4": {"a1b2c3d4:answer_a1b2c3d4:0": 3},
        "e5f6a7b8": {"e5f6a7b8:answer_e5f6_1:0": 3,  # the has_answer turn
                     "e5f6a7b8:answer_e5f6_2:0": 1, "e5f6a7b8:answer_e5f6_2:1": 1},  # unmarked answer session
    }
    queries = {q.id: q for q in corpus.queries}
    assert queries["c9d0e1f2_abs"].tags == ("abstention", "single-session-user")
    assert not queries["c9d0e1f2_abs"].is_positive and queries["e5f6a7b8"].tags == ("multi-session",)
    assert queries["e5f6a7b8"].meta["answer"] == 5
    readme = (tmp_path / "lme" / "README.md").read_text()
    assert "MIT" in readme and "1 answer session id(s) were not in their haystack" in readme


def test_longmemeval_sessions_and_layout_errors(tmp_path):
    corpus = validate(import_longmemeval(FIXTURES / "longmemeval" / "longmemeval_s.json", tmp_path / "s",
                                         granularity="session"))
    assert len(corpus.memories) == 6
    assert corpus.entry("a1b2c3d4:sharegpt_x1_0").text == (
        "user: Can you suggest a quick pasta recipe?\n"
        "assistant: Try spaghetti aglio e olio: garlic, olive oil, chili flakes and parsley.")
    assert corpus.qrels == {"a1b2c3d4": {"a1b2c3d4:answer_a1b2c3d4": 3},
                            "e5f6a7b8": {"e5f6a7b8:answer_e5f6_1": 3, "e5f6a7b8:answer_e5f6_2": 3}}
    with pytest.raises(ImporterError, match="granularity"):
        import_longmemeval(FIXTURES / "longmemeval" / "longmemeval_s.json", tmp_path / "x", granularity="word")
    data = json.loads((FIXTURES / "longmemeval" / "longmemeval_s.json").read_text())
    del data[1]["haystack_sessions"][0][1]["content"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(LayoutError, match=r"^bad.json: \[1\].haystack_sessions\[0\]\[1\]: missing field 'content'$"):
        import_longmemeval(tmp_path / "bad.json", tmp_path / "x")
    del data[0]["answer_session_ids"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(LayoutError, match=r"\[0\]: missing field 'answer_session_ids'"):
        import_longmemeval(tmp_path / "bad.json", tmp_path / "x")


# --- BEIR ------------------------------------------------------------------------------------


def test_beir_one_memory_graded_qrels_and_split_files(tmp_path):
    corpus = validate(import_beir(FIXTURES / "beir" / "minifact", tmp_path / "beir"))
    assert corpus.memory_names == ("corpus",) and len(corpus.memories) == 5
    assert corpus.entry("4983").text.startswith("Microstructural development of human newborn cerebral white matter"
                                                 "\n\nDiffusion tensor imaging")
    assert corpus.entry("7912").text.startswith("Vitamin D supplementation")  # no title
    assert corpus.entry("doc_99").meta == {"upstream_id": "doc 99"}  # an id with a space, made valid
    assert corpus.qrels == {"1": {"4983": 1}, "3": {"7912": 1}, "5": {"18670": 2}, "7": {"doc_99": 1}}
    assert [q.id for q in corpus.queries] == ["1", "3", "5", "7"]  # query 9 is judged only in train
    assert all(q.split is None for q in corpus.queries)
    both = validate(import_beir(FIXTURES / "beir" / "minifact", tmp_path / "both", splits=("dev", "test")))
    assert {q.id: q.split for q in both.queries} == {"1": "dev", "3": "test", "5": "test", "7": "test"}
    readme = (tmp_path / "beir" / "README.md").read_text()
    assert "1 judgement(s) with score ≤ 0 were dropped" in readme and "no negatives" in readme
    with pytest.raises(ImporterError, match="training data"):
        import_beir(FIXTURES / "beir" / "minifact", tmp_path / "x", splits=("train",))


def test_beir_layout_errors_name_file_and_field(tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(FIXTURES / "beir" / "minifact", bad)
    lines = (bad / "corpus.jsonl").read_text().splitlines()
    lines[1] = json.dumps({"id": "5836", "text": "no _id here"})
    (bad / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(LayoutError, match=r"^corpus.jsonl: line 2: missing field '_id'$"):
        import_beir(bad, tmp_path / "x")
    (bad / "qrels" / "test.tsv").write_text("q\td\ts\n1\t4983\t1\n")
    with pytest.raises(LayoutError, match=r"^qrels/test.tsv:1: expected the header row"):
        import_beir(bad, tmp_path / "x")
    (bad / "qrels" / "test.tsv").unlink()
    with pytest.raises(LayoutError, match=r"qrels/test.tsv: file missing"):
        import_beir(bad, tmp_path / "x")


# --- TREC ------------------------------------------------------------------------------------


def test_trec_sgml_topics_tsv_collection(tmp_path):
    corpus = validate(import_trec(FIXTURES / "trec" / "sgml", tmp_path / "t"))
    assert corpus.memory_names == ("collection",) and len(corpus.memories) == 5
    assert corpus.entry("LA010189-0001").text == (
        "Interpol warns\n\nRussian crime syndicates now launder money through banks in Cyprus and Switzerland.")
    assert {q.id: q.text for q in corpus.queries} == {"301": "International Organized Crime",
                                                      "302": "Poliomyelitis and Post-Polio"}  # 303: only grade 0
    assert corpus.qrels == {"301": {"FBIS3-10082": 1, "LA010189-0001": 2}, "302": {"FT911-3032": 1}}
    readme = (tmp_path / "t" / "README.md").read_text()
    assert "1 judgement(s) named a document missing from the collection" in readme
    desc = validate(import_trec(FIXTURES / "trec" / "sgml", tmp_path / "d", field="description"))
    assert desc.queries[0].text == "Identify organizations that participate in international criminal activity."


def test_trec_xml_topics_jsonl_collection_and_layout_errors(tmp_path):
    corpus = validate(import_trec(FIXTURES / "trec" / "xml", tmp_path / "c", field="description", memory="cord"))
    assert corpus.memory_names == ("cord",)
    assert {q.id: q.text for q in corpus.queries} == {
        "1": "what is the origin of COVID-19", "2": "how does the coronavirus respond to changes in the weather"}
    assert corpus.qrels == {"1": {"005b2j4b": 2, "00fmeepz": 1}, "2": {"01goni72": 1}}
    assert corpus.entry("00fmeepz").text.startswith("A zoonotic origin")  # empty title: text only
    bad = tmp_path / "bad"
    shutil.copytree(FIXTURES / "trec" / "xml", bad)
    (bad / "docs.jsonl").write_text(json.dumps({"id": "x", "body_text": "?"}) + "\n")
    with pytest.raises(LayoutError, match=r"^docs.jsonl:1: missing field 'contents' \(one of contents, text, body\)"):
        import_trec(bad, tmp_path / "x")
    (bad / "qrels-covid.txt").write_text("1 0 005b2j4b\n")
    with pytest.raises(LayoutError, match=r"^qrels-covid.txt:1: missing field 'relevance'"):
        import_trec(bad, tmp_path / "x")
    shutil.copy(FIXTURES / "trec" / "xml" / "qrels-covid.txt", bad)
    (bad / "topics.covid.xml").write_text("<topics><topic number='1'><narrative>n</narrative></topic></topics>")
    with pytest.raises(LayoutError, match=r"topics.covid.xml: <topic number=\"1\">: missing field '<query>'"):
        import_trec(bad, tmp_path / "x")
    (bad / "topics.other").write_text("1\tcoronavirus origin\n")
    with pytest.raises(LayoutError, match="expected one topics file"):
        import_trec(bad, tmp_path / "x")


# --- shared rules and the CLI ----------------------------------------------------------------


def test_builder_splits_over_long_texts_and_refuses_a_non_empty_folder(tmp_path):
    long = " ".join(f"word{i:05d}" for i in range(2000))  # 20,000 bytes
    parts = split_text(long)
    assert len(parts) == 3 and all(len(p.encode()) <= 8192 for p in parts) and " ".join(parts) == long
    build = CorpusBuilder()
    ids = build.entry("doc", "m", long)
    assert ids == ["doc.p1", "doc.p2", "doc.p3"]
    qid = build.query("q", "word00001?", ["m"])
    build.judge(qid, ids, 2)
    build.judge(qid, ids[:1], 3)  # the higher grade wins
    folder = build.write(tmp_path / "long", Datasheet("t", "o", "l", "s"))
    corpus = validate(folder)
    assert corpus.qrels == {"q": {"doc.p1": 3, "doc.p2": 2, "doc.p3": 2}}
    assert corpus.entry("doc.p2").meta == {"part": "2/3"}
    with pytest.raises(ImporterError, match="exists and is not empty"):
        build.write(tmp_path / "long", Datasheet("t", "o", "l", "s"))


def test_import_cli_writes_a_corpus_the_harness_can_load(tmp_path, capsys):
    out = tmp_path / "scifact"
    assert main(["import", "beir", str(FIXTURES / "beir" / "minifact"), str(out), "--splits", "dev,test"]) == 0
    printed = capsys.readouterr().out
    assert printed.strip() == (f"{out}: 5 entries in 1 memories, 4 queries (0 with an empty ideal answer), "
                               f"4 judgements; datasheet {out / 'README.md'}")
    assert load(out).split_origin == "file"
    assert main(["import", "locomo", str(FIXTURES / "beir"), str(tmp_path / "x")]) == 2
    assert "locomo10.json: file missing" in capsys.readouterr().err
    assert main(["import", "beir", str(FIXTURES / "beir" / "minifact"), str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
