"""Corpus validation at two levels, and the bundled corpora's house style.

Errors are what makes a corpus measurable (any researcher's corpus must pass them);
style notes are the bundled corpora's conventions, which ``style="bundled"`` turns into
errors. The bundled corpora are held to both, and to the FORMAT.md targets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext.eval.corpora import datasheet
from powercontext.eval.corpora.datasets import (
    Corpus,
    DatasetError,
    discover,
    is_chinese,
    language,
    load,
    validate,
)

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
BUNDLED = discover(DATASETS)
EXPECTED = ("atlas-etl", "harbor-web", "lantern-relay", "tidewater-cli")


# --- the bundled corpora -----------------------------------------------------------------


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_bundled_corpus_follows_the_bundled_style(path: Path) -> None:
    corpus = validate(path, style="bundled")  # errors, style notes, FORMAT.md targets, datasheet counts
    assert corpus.name == path.name and corpus.style_notes == ()
    assert corpus.memories and corpus.queries and corpus.split_origin == "file"
    assert validate(path).style_notes == ()  # nothing to skip either


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_every_tag_is_split_about_half_and_half(path: Path) -> None:
    c = datasheet.counts(load(path))
    for tag, n in c.tag.items():
        dev = c.tag_split[tag, "dev"]
        assert n < 2 or 0 < dev < n, f"{tag}: all {n} queries in one split"
        assert n < 10 or 0.35 <= dev / n <= 0.65, f"{tag}: {dev} of {n} in dev"


def test_totals_over_all_corpora_meet_the_targets() -> None:
    assert sorted(p.name for p in BUNDLED) == sorted(EXPECTED)
    totals = datasheet.totals(DATASETS)
    assert totals.corpora == len(EXPECTED)
    assert datasheet.shortfalls(totals, corpora=len(EXPECTED)) == []


# --- small corpora written to tmp_path ---------------------------------------------------


def _entry(id: str, memory: str = "repo", state: str = "active", **extra: object) -> dict:
    return {"id": id, "memory": memory, "kind": "fact", "text": f"Text of {id}.",
            "state": state, **extra}


def _query(id: str, tags: list[str], memories: list[str] | None = None, **extra: object) -> dict:
    return {"id": id, "text": f"Question {id}?", "lang": "en", "memories": memories or ["repo"],
            "tags": tags, "split": "dev", **extra}


GOOD_MEMORIES = [
    _entry("tst-0001", sources=["src_readme"]),
    _entry("tst-0002", memory="user", history=["Old text of tst-0002."]),
    _entry("tst-0003", state="inactive"),
    {**_entry("tst-0004"), "text": "本地 Postgres 的端口是 5433。"},
]
GOOD_QUERIES = [
    _query("tst-q001", ["lexical", "multi"], ["repo", "user"]),
    _query("tst-q002", ["negative"]),
    _query("tst-q003", ["forgotten"]),
    _query("tst-q004", ["hard-negative"]),
    {**_query("tst-q005", ["cjk"]), "text": "本地 Postgres 用哪个端口？", "lang": "zh", "split": "test"},
]
GOOD_QRELS = ["tst-q001 0 tst-0001 3", "tst-q001 0 tst-0002 2", "tst-q004 0 tst-0001 1",
              "tst-q005 0 tst-0004 3"]


def write(root: Path, memories=GOOD_MEMORIES, queries=GOOD_QUERIES, qrels=GOOD_QRELS) -> Path:
    """Write a corpus; a str line is written as is (to plant broken JSON)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in (("memories.jsonl", memories), ("queries.jsonl", queries)):
        lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in rows]
        (root / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    (root / "qrels.trec").write_text("".join(f"{line}\n" for line in qrels), encoding="utf-8")
    (root / "README.md").write_text(f"# test\n\n{datasheet.BEGIN}\n{datasheet.END}\n")
    return root


def problems(root: Path, style: str = "any") -> tuple[str, ...]:
    with pytest.raises(DatasetError) as info:
        validate(root, style=style)
    return info.value.problems


def test_a_valid_corpus_loads_into_frozen_records(tmp_path: Path) -> None:
    corpus = load(write(tmp_path / "tst"))
    assert isinstance(corpus, Corpus) and corpus.name == "tst"
    assert [e.id for e in corpus.entries_by_memory()["repo"]] == ["tst-0001", "tst-0003", "tst-0004"]
    assert corpus.entry("tst-0002").history == ("Old text of tst-0002.",)
    assert corpus.qrels == {"tst-q001": {"tst-0001": 3, "tst-0002": 2},
                            "tst-q004": {"tst-0001": 1}, "tst-q005": {"tst-0004": 3}}
    q1, q2 = corpus.queries[:2]
    assert q1.is_positive and q1.memories == ("repo", "user") and not q2.is_positive
    assert [q.id for q in corpus.split("test")] == ["tst-q005"]
    assert corpus.is_chinese("端口 5433") and not corpus.is_chinese("port 5433")
    assert corpus.entry("tst-0004").is_chinese and not corpus.entry("tst-0003").is_active
    with pytest.raises(AttributeError):
        q1.text = "changed"  # type: ignore[misc]


def test_is_chinese_needs_an_ideograph() -> None:
    assert is_chinese("用 uv sync") and not is_chinese("uv sync — “quoted”")


def test_language_is_told_by_script_and_code_switching_keeps_it() -> None:
    assert language("make itest 之前要先起 NATS") == "zh"
    assert language("ap-tokyo の NATS クラスタは 3 ノード構成") == "ja"  # kana makes ideographs Japanese
    assert language("Конфиг ltnctl лежит в ~/.config/ltnctl") == "ru"
    assert language("relayd listens on 8088") == "en"


def test_dataset_error_is_a_typed_value_error(tmp_path: Path) -> None:
    from powercontext.errors import PowerContextError

    with pytest.raises(ValueError) as info:
        validate(tmp_path / "missing")
    assert isinstance(info.value, PowerContextError)


def test_a_researchers_corpus_needs_only_what_makes_it_measurable(tmp_path: Path) -> None:
    """The issue's example: memories repoA/repoB/user, ids like h-m001, sources named
    after files, no kind/state/lang/tags/split fields, other grades."""
    memories = [
        {"id": "h-m001", "memory": "repoA", "text": "The crate builds with cargo build --release.",
         "sources": ["Cargo.toml"]},
        {"id": "h-m002", "memory": "repoB", "text": "CI runs on GitHub Actions.", "kind": "decision",
         "meta": {"from": "notes.md"}},
        {"id": "h-m003", "memory": "user", "text": "Answer in English.", "state": "inactive"},
        {"id": "h-m004", "memory": "user", "text": "Prefers tabs."},
    ]
    queries = [
        {"id": "h-q1", "text": "How is the crate built?", "memories": ["repoA"]},
        {"id": "h-q2", "text": "Which CI do we use?", "memories": ["repoA", "repoB"], "tags": ["ci"]},
        {"id": "h-q3", "text": "Which language should answers use?", "memories": ["user"]},
        {"id": "h-q4", "text": "Indentation?", "memories": ["user"], "lang": "en-GB"},
    ]
    root = write(tmp_path / "mine", memories, queries, ["h-q1 0 h-m001 1", "h-q2 0 h-m002 5", "h-q4 0 h-m004 0"])
    corpus = validate(root)
    assert corpus.memory_names == ("repoA", "repoB", "user")
    assert corpus.entry("h-m001").kind == "fact" and corpus.entry("h-m003").state == "inactive"
    assert corpus.entry("h-m002").meta == {"from": "notes.md"}
    assert [q.lang for q in corpus.queries] == ["und", "und", "und", "en-GB"]
    assert [q.split for q in corpus.queries] == [None] * 4 and corpus.split_origin == "file"
    assert corpus.qrels["h-q2"] == {"h-m002": 5}
    # grade 0 = judged not relevant: h-q4 and h-q3 have empty ideal answers
    assert [q.is_positive for q in corpus.queries] == [True, True, False, False]
    assert corpus.style_notes and any("'h-m001' is not '<3-letter prefix>" in n for n in corpus.style_notes)
    assert any("unknown memory name 'repoA'" in n for n in corpus.style_notes)
    assert any("source 'Cargo.toml' is not" in n for n in corpus.style_notes)
    loaded = load(root)
    assert loaded.split_origin == "assigned" and {q.split for q in loaded.queries} == {"dev", "test"}
    assert problems(root, style="bundled")  # the house style refuses it


def _replace(rows: list, i: int, row: object) -> list:
    return [row if n == i else r for n, r in enumerate(rows)]


def _without(row: dict, *names: str) -> dict:
    return {k: v for k, v in row.items() if k not in names}


NO_SPLIT = [_without(q, "split") for q in GOOD_QUERIES]

# (what, memories, queries, qrels, expected error): a corpus with any of these cannot be measured.
ERRORS = [
    ("invalid JSON", _replace(GOOD_MEMORIES, 1, '{"id": "tst-0002",'), GOOD_QUERIES, GOOD_QRELS[:1] + GOOD_QRELS[2:],
     "memories.jsonl:2: invalid JSON"),
    ("not an object", GOOD_MEMORIES + ["[1, 2]"], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: expected a JSON object"),
    ("missing field", _replace(GOOD_MEMORIES, 0, _without(GOOD_MEMORIES[0], "memory")),
     GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:1: missing field 'memory'"),
    ("misspelt field", _replace(GOOD_MEMORIES, 0, {**_without(GOOD_MEMORIES[0], "state"), "stat": "inactive"}),
     GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:1: unexpected field 'stat'"),
    ("mistyped field", _replace(GOOD_MEMORIES, 1, {**GOOD_MEMORIES[1], "history": "old"}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:2: field 'history' must be a list of non-empty strings"),
    ("mistyped meta", _replace(GOOD_MEMORIES, 1, {**GOOD_MEMORIES[1], "meta": "x"}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:2: field 'meta' must be a JSON object"),
    ("duplicate entry id", GOOD_MEMORIES + [_entry("tst-0001")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: duplicate id 'tst-0001' (first at memories.jsonl:1)"),
    ("id with a space", GOOD_MEMORIES + [_entry("tst 0005")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: id 'tst 0005' must be 1..128 printable ASCII"),
    ("non-ASCII id", GOOD_MEMORIES + [_entry("tüt-0005")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: id 'tüt-0005' must be"),
    ("id too long", GOOD_MEMORIES + [_entry("x" * 129)], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: id 'xxxx"),
    ("unknown kind", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "kind": "fakt"}), GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:1: unknown kind 'fakt'"),
    ("unknown state", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "state": "deleted"}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:1: unknown state 'deleted'"),
    ("source name with a space", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "sources": ["my notes.md"]}),
     GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:1: source name 'my notes.md' must be"),
    ("text over the service limit", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "text": "é" * 4097}),
     GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:1: text is 8194 UTF-8 bytes; the service accepts at most 8192"),
    ("history repeats", _replace(GOOD_MEMORIES, 1, {**GOOD_MEMORIES[1], "history": ["Text of tst-0002."]}),
     GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:2: history repeats a text"),
    ("entries the service cannot tell apart", GOOD_MEMORIES + [{**_entry("tst-0009"), "text": "Text of tst-0003."}],
     GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:5: entry 'tst-0009' starts with the same kind, text and sources as"),
    ("unknown split", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], split="train")),
     GOOD_QRELS, "queries.jsonl:2: unknown split 'train'"),
    ("split on some queries only", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _without(GOOD_QUERIES[1], "split")),
     GOOD_QRELS, "queries.jsonl:2: query has no split while queries.jsonl:1 has one"),
    ("searched memory has no entries", GOOD_MEMORIES,
     _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], ["team"])),
     GOOD_QRELS, "queries.jsonl:2: searches memory 'team', which has no entries"),
    ("repeated memories", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], ["repo", "repo"])),
     GOOD_QRELS, "queries.jsonl:2: memory names repeat"),
    ("no memories", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, {**GOOD_QUERIES[1], "memories": []}),
     GOOD_QRELS, "queries.jsonl:2: memories must name at least one memory"),
    ("duplicate query id", GOOD_MEMORIES, GOOD_QUERIES + [_query("tst-q002", ["negative"])], GOOD_QRELS,
     "queries.jsonl:6: duplicate id 'tst-q002' (first at queries.jsonl:2)"),
    ("malformed qrels", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 tst-0004 3"],
     "qrels.trec:5: malformed line"),
    ("fractional grade", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0004 1.5"],
     "qrels.trec:5: malformed line"),
    ("negative grade", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0004 -1"],
     "qrels.trec:5: grade -1 is negative"),
    ("unknown query in qrels", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q099 0 tst-0001 3"],
     "qrels.trec:5: unknown query 'tst-q099'"),
    ("unknown entry in qrels", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0099 2"],
     "qrels.trec:5: unknown entry 'tst-0099'"),
    ("inactive entry judged", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0003 1"],
     "qrels.trec:5: entry 'tst-0003' is inactive"),
    ("memory not searched", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q005 0 tst-0002 1"],
     "qrels.trec:5: entry 'tst-0002' is in memory 'user', which query 'tst-q005' does not search"),
    ("duplicate judgement", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0001 2"],
     "qrels.trec:5: duplicate judgement of 'tst-0001' for 'tst-q001' (first at qrels.trec:1)"),
    ("missing file", GOOD_MEMORIES, None, GOOD_QRELS, "queries.jsonl: file missing"),
    ("no queries", GOOD_MEMORIES, [], [], "queries.jsonl: no records"),
]

# (what, memories, queries, qrels, expected style note): measurable, but not the bundled corpora's house style.
STYLE = [
    ("bad entry id", GOOD_MEMORIES + [_entry("tst-12")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: id 'tst-12' is not"),
    ("other prefix", GOOD_MEMORIES + [_entry("abc-0005")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: id 'abc-0005' does not use the corpus prefix 'tst'"),
    ("kind not spelt out", _replace(GOOD_MEMORIES, 0, _without(GOOD_MEMORIES[0], "kind")), GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:1: no 'kind' field"),
    ("memory name", GOOD_MEMORIES + [_entry("tst-0005", memory="notes")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: unknown memory name 'notes'"),
    ("source name", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "sources": ["README.md"]}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:1: source 'README.md' is not"),
    ("empty line", GOOD_MEMORIES + [""], GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:5: empty line"),
    ("unknown tag", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative", "lexcal"])),
     GOOD_QRELS, "queries.jsonl:2: unknown tag 'lexcal'"),
    ("unknown lang", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], lang="fr")),
     GOOD_QRELS, "queries.jsonl:2: unknown lang 'fr'"),
    ("no split at all", GOOD_MEMORIES, NO_SPLIT, GOOD_QRELS, "queries.jsonl:1: no 'split' field"),
    ("no tags", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", [])), GOOD_QRELS,
     "queries.jsonl:2: tags must be a non-empty list"),
    ("zh without Chinese", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], lang="zh")),
     GOOD_QRELS, "queries.jsonl:2: lang 'zh' but the text has no Chinese characters"),
    ("ja that reads as Chinese", GOOD_MEMORIES,
     _replace(GOOD_QUERIES, 1, {**_query("tst-q002", ["negative"], lang="ja"), "text": "本地端口是多少？"}),
     GOOD_QRELS, "queries.jsonl:2: lang 'ja' but the text has no Japanese characters (it reads as 'zh')"),
    ("en with Cyrillic", GOOD_MEMORIES,
     _replace(GOOD_QUERIES, 1, {**_query("tst-q002", ["negative"]), "text": "Где лежат ранбуки?"}),
     GOOD_QRELS, "queries.jsonl:2: lang 'en' but the text contains Russian characters"),
    ("near miss with judgements", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["near-miss"])),
     GOOD_QRELS + ["tst-q002 0 tst-0001 1"],
     "queries.jsonl:2: query 'tst-q002' is tagged near-miss but has 1 judgement(s)"),
    ("cross-lingual in one language", GOOD_MEMORIES,
     _replace(GOOD_QUERIES, 4, {**GOOD_QUERIES[4], "tags": ["cross-lingual"]}), GOOD_QRELS,
     "queries.jsonl:5: tagged cross-lingual but every grade-3 answer is in the query's language"),
    ("qrels non-zero iteration", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 1 tst-0004 3"],
     "qrels.trec:5: iteration column '1' is not 0"),
    ("grade out of range", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0004 4"],
     "qrels.trec:5: grade 4 outside 1..3"),
    ("grade zero", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0004 0"],
     "qrels.trec:5: grade 0 outside 1..3"),
    ("no grade 3", GOOD_MEMORIES, GOOD_QUERIES, ["tst-q001 0 tst-0001 2", "tst-q001 0 tst-0002 2",
                                                 "tst-q005 0 tst-0004 3"],
     "queries.jsonl:1: query 'tst-q001' has no grade-3 judgement"),
    ("negative with judgements", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q002 0 tst-0001 1"],
     "queries.jsonl:2: query 'tst-q002' is tagged negative but has 1 judgement(s)"),
    ("forgotten with judgements", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q003 0 tst-0004 3"],
     "queries.jsonl:3: query 'tst-q003' is tagged forgotten but has 1 judgement(s)"),
    ("hard negative with a grade-2 only", GOOD_MEMORIES, GOOD_QUERIES,
     GOOD_QRELS[:2] + ["tst-q004 0 tst-0001 2"] + GOOD_QRELS[3:],
     "queries.jsonl:4: query 'tst-q004' has no grade-3 judgement"),
    ("multi with one relevant entry", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS[:1] + GOOD_QRELS[2:],
     "queries.jsonl:1: tagged multi but fewer than two entries are graded 2 or 3"),
    ("cjk answered in English", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS[:3] + ["tst-q005 0 tst-0001 3"],
     "queries.jsonl:5: tagged cjk but none of its grade-3 answers is Chinese"),
    ("stale answer without history", GOOD_MEMORIES,
     _replace(GOOD_QUERIES, 0, _query("tst-q001", ["stale", "multi"], ["repo", "user"])), GOOD_QRELS,
     "queries.jsonl:1: tagged stale but none of its grade-3 answers has a history"),
]


@pytest.mark.parametrize(("memories", "queries", "qrels", "expected"), [case[1:] for case in ERRORS],
                         ids=[case[0] for case in ERRORS])
def test_each_error_is_reported_with_file_and_line(tmp_path, memories, queries, qrels, expected) -> None:
    root = write(tmp_path / "tst", memories, queries or [], qrels)
    if queries is None:
        (root / "queries.jsonl").unlink()
    found = problems(root)
    assert any(p.startswith(expected) for p in found), found


@pytest.mark.parametrize(("memories", "queries", "qrels", "expected"), [case[1:] for case in STYLE],
                         ids=[case[0] for case in STYLE])
def test_each_style_rule_is_a_note_unless_bundled_style_is_asked(tmp_path, memories, queries, qrels,
                                                                  expected) -> None:
    root = write(tmp_path / "tst", memories, queries, qrels)
    notes = validate(root).style_notes  # measurable: no error
    assert any(n.startswith(expected) for n in notes), notes
    assert any(p.startswith(expected) for p in problems(root, style="bundled"))


def test_the_good_corpus_breaks_only_the_bundled_targets(tmp_path: Path) -> None:
    root = write(tmp_path / "tst")
    assert validate(root).style_notes == ()
    found = problems(root, style="bundled")  # too small for FORMAT.md's per-corpus targets
    assert found and all(p.startswith("tst: below the FORMAT.md target") or p.startswith("README.md")
                         for p in found), found
    assert "tst: below the FORMAT.md target: entries: 4 < 210" in found


def test_all_problems_are_listed_in_one_error(tmp_path: Path) -> None:
    memories = [
        '{"id": "tst-0001", "memory": "repo"',                     # 1: invalid JSON
        _entry("tst-0002", kind_typo=True),                          # 2: extra field
        {**_entry("tst-0003"), "kind": "fakt"},                      # 3: unknown kind
        _entry("tst-0003"),                                          # 4: duplicate id
        _entry("tst-0005", state="inactive"),
    ]
    queries = [
        _query("tst-q001", ["negative", "lexcal"], ["repo", "team"]),  # 1: no such memory (and a style note)
        _without(_query("tst-q002", ["negative"]), "split"),         # 2: no split while others have one
        _query("tst-q003", ["lexical"]),                             # 3: no grade-3 (a style note)
    ]
    qrels = [
        "tst-q003 0 tst-0005 3",                                     # 1: inactive entry
        "tst-q003 0 tst-0003 -7",                                    # 2: negative grade
        "garbage",                                                   # 3: malformed
    ]
    found = problems(write(tmp_path / "tst", memories, queries, qrels))
    expected = [
        "memories.jsonl:1: invalid JSON",
        "memories.jsonl:2: unexpected field 'kind_typo'",
        "memories.jsonl:3: unknown kind 'fakt'",
        "memories.jsonl:4: duplicate id 'tst-0003'",
        "queries.jsonl:1: searches memory 'team'",
        "queries.jsonl:2: query has no split",
        "qrels.trec:1: entry 'tst-0005' is inactive",
        "qrels.trec:2: grade -7 is negative",
        "qrels.trec:3: malformed line",
    ]
    for prefix in expected:
        assert sum(p.startswith(prefix) for p in found) == 1, (prefix, found)
    assert len(found) == len(expected), found
    message = str(DatasetError(tmp_path, found))
    assert f"{len(expected)} problem(s)" in message and all(p in message for p in found)
    bundled = problems(tmp_path / "tst", style="bundled")
    assert "queries.jsonl:1: unknown tag 'lexcal' (expected one of lexical, paraphrase, cjk, cross-lingual, multi, " \
           "negative, forgotten, stale, hard-negative, near-miss)" in bundled
    assert any(p.startswith("queries.jsonl:3: query 'tst-q003' has no grade-3") for p in bundled)


# --- datasheet ---------------------------------------------------------------------------


def test_counts_and_totals_are_hand_checkable(tmp_path: Path) -> None:
    one = datasheet.counts(load(write(tmp_path / "tst")))
    assert (one.entries, one.queries, one.judgements, one.positive) == (4, 5, 4, 3)
    assert (one.chinese, one.with_history, one.cjk_or_cross_lingual) == (1, 1, 1)
    assert one.memory == {"repo": 3, "user": 1} and one.state == {"active": 3, "inactive": 1}
    assert one.searched == {"repo": 4, "repo+user": 1}
    assert one.grade == {3: 2, 2: 1, 1: 1}
    assert one.tag_split[("cjk", "test")] == 1 and one.share("negative") == 1 / 5
    write(tmp_path / "two")
    both = datasheet.totals(tmp_path)
    assert (both.corpora, both.entries, both.queries, both.grade[3]) == (2, 8, 10, 4)


def test_readme_section_is_rewritten_and_checked(tmp_path: Path, capsys) -> None:
    root = write(tmp_path / "tst")
    assert datasheet.main([str(root), "--check"]) == 1
    assert datasheet.main([str(root)]) == 0
    assert datasheet.main([str(root), "--check"]) == 0
    readme = (root / "README.md").read_text()
    assert readme.startswith("# test\n\n" + datasheet.BEGIN) and readme.endswith(datasheet.END + "\n")
    assert "| tag `negative` | 1 | 20.0% |" in readme
    assert "| `cjk` | 0 | 1 | 1 |" in readme


def test_readme_without_markers_is_an_error(tmp_path: Path) -> None:
    root = write(tmp_path / "tst")
    (root / "README.md").write_text("# no markers\n")
    with pytest.raises(ValueError, match="markers"):
        datasheet.update_readme(root)
    assert datasheet.main([str(root)]) == 2
