"""The bundled corpora meet datasets/FORMAT.md, and the validator reports every problem.

The per-corpus tests are parametrized over whatever corpora exist, so a corpus that is
still being written is simply not tested yet; the totals test is the real gate and only
passes once all three corpora are there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext.eval import datasheet
from powercontext.eval.datasets import (
    Corpus,
    DatasetError,
    discover,
    is_chinese,
    load,
    validate,
)

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
BUNDLED = discover(DATASETS)
EXPECTED = ("atlas-etl", "harbor-web", "tidewater-cli")

# FORMAT.md, "Targets per corpus"; the totals are these summed over the three corpora.
MIN_ENTRIES, MIN_QUERIES = 210, 140
MIN_COUNTS = {"history": 15, "inactive": 12, "multi": 10, "forgotten": 6, "stale": 6,
              "hard-negative": 10, "repo+user": 10}
MIN_SHARES = {"chinese entries": 0.08, "paraphrase": 0.25, "cjk or cross-lingual": 0.10,
              "negative": 0.15}


def _measures(c: datasheet.Counts) -> tuple[dict[str, int], dict[str, float]]:
    counts = {"history": c.with_history, "inactive": c.state["inactive"],
              "repo+user": c.searched["repo+user"],
              **{tag: c.tag[tag] for tag in ("multi", "forgotten", "stale", "hard-negative")}}
    shares = {"chinese entries": c.chinese / c.entries,
              "paraphrase": c.share("paraphrase"),
              "cjk or cross-lingual": c.cjk_or_cross_lingual / c.queries,
              "negative": c.share("negative")}
    return counts, shares


def _shortfalls(c: datasheet.Counts, corpora: int) -> list[str]:
    counts, shares = _measures(c)
    short = [f"{name}: {counts[name]} < {corpora * low}" for name, low in MIN_COUNTS.items()
             if counts[name] < corpora * low]
    short += [f"{name}: {shares[name]:.1%} < {low:.0%}" for name, low in MIN_SHARES.items()
              if shares[name] < low]
    if c.entries < corpora * MIN_ENTRIES:
        short.append(f"entries: {c.entries} < {corpora * MIN_ENTRIES}")
    if c.queries < corpora * MIN_QUERIES:
        short.append(f"queries: {c.queries} < {corpora * MIN_QUERIES}")
    return short


# --- the bundled corpora -----------------------------------------------------------------


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_bundled_corpus_validates(path: Path) -> None:
    corpus = validate(path)
    assert corpus.name == path.name
    assert corpus.memories and corpus.queries


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_datasheet_counts_are_up_to_date(path: Path) -> None:
    stale = datasheet.update_readme(path, check=True)
    assert not stale, f"run: python -m powercontext.eval.datasheet datasets/{path.name}"


@pytest.mark.parametrize("path", BUNDLED, ids=[p.name for p in BUNDLED])
def test_corpus_meets_its_targets(path: Path) -> None:
    assert _shortfalls(datasheet.counts(load(path)), corpora=1) == []


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
    assert totals.corpora == 3
    assert _shortfalls(totals, corpora=3) == []


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


def problems(root: Path) -> tuple[str, ...]:
    with pytest.raises(DatasetError) as info:
        validate(root)
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


def test_dataset_error_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        validate(tmp_path / "missing")


def _replace(rows: list, i: int, row: object) -> list:
    return [row if n == i else r for n, r in enumerate(rows)]


BROKEN = [
    # (what, memories, queries, qrels, expected problem)
    ("invalid JSON", _replace(GOOD_MEMORIES, 1, '{"id": "tst-0002",'), GOOD_QUERIES, GOOD_QRELS[:1] + GOOD_QRELS[2:],
     "memories.jsonl:2: invalid JSON"),
    ("not an object", GOOD_MEMORIES + ["[1, 2]"], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: expected a JSON object"),
    ("missing field", _replace(GOOD_MEMORIES, 0, {k: v for k, v in GOOD_MEMORIES[0].items() if k != "kind"}),
     GOOD_QUERIES, GOOD_QRELS, "memories.jsonl:1: missing field 'kind'"),
    ("extra field", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "topic": "x"}), GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:1: unexpected field 'topic'"),
    ("mistyped field", _replace(GOOD_MEMORIES, 1, {**GOOD_MEMORIES[1], "history": "old"}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:2: field 'history' must be a list of non-empty strings"),
    ("duplicate entry id", GOOD_MEMORIES + [_entry("tst-0001")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: duplicate id 'tst-0001' (first at memories.jsonl:1)"),
    ("bad entry id", GOOD_MEMORIES + [_entry("tst-12")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: id 'tst-12' is not"),
    ("other prefix", GOOD_MEMORIES + [_entry("abc-0005")], GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:5: id 'abc-0005' does not use the corpus prefix 'tst'"),
    ("unknown kind", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "kind": "fakt"}), GOOD_QUERIES, GOOD_QRELS,
     "memories.jsonl:1: unknown kind 'fakt'"),
    ("unknown state", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "state": "deleted"}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:1: unknown state 'deleted'"),
    ("unknown entry memory", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "memory": "team"}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:1: unknown memory name 'team'"),
    ("bad source", _replace(GOOD_MEMORIES, 0, {**GOOD_MEMORIES[0], "sources": ["README"]}), GOOD_QUERIES,
     GOOD_QRELS, "memories.jsonl:1: source 'README' is not"),
    ("unknown tag", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative", "lexcal"])),
     GOOD_QRELS, "queries.jsonl:2: unknown tag 'lexcal'"),
    ("unknown lang", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], lang="fr")),
     GOOD_QRELS, "queries.jsonl:2: unknown lang 'fr'"),
    ("unknown split", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], split="train")),
     GOOD_QRELS, "queries.jsonl:2: unknown split 'train'"),
    ("no split", GOOD_MEMORIES,
     _replace(GOOD_QUERIES, 1, {k: v for k, v in _query("tst-q002", ["negative"]).items() if k != "split"}),
     GOOD_QRELS, "queries.jsonl:2: query has no split"),
    ("unknown searched memory", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], ["team"])),
     GOOD_QRELS, "queries.jsonl:2: unknown memory name 'team'"),
    ("no tags", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", [])), GOOD_QRELS,
     "queries.jsonl:2: tags must be a non-empty list"),
    ("duplicate query id", GOOD_MEMORIES, GOOD_QUERIES + [_query("tst-q002", ["negative"])], GOOD_QRELS,
     "queries.jsonl:6: duplicate id 'tst-q002' (first at queries.jsonl:2)"),
    ("zh without Chinese", GOOD_MEMORIES, _replace(GOOD_QUERIES, 1, _query("tst-q002", ["negative"], lang="zh")),
     GOOD_QRELS, "queries.jsonl:2: lang 'zh' but the text has no Chinese characters"),
    ("malformed qrels", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 tst-0004 3"],
     "qrels.trec:5: malformed line"),
    ("qrels non-zero iteration", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 1 tst-0004 3"],
     "qrels.trec:5: malformed line"),
    ("grade out of range", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0004 4"],
     "qrels.trec:5: grade 4 outside 1..3"),
    ("grade zero", GOOD_MEMORIES, GOOD_QUERIES, GOOD_QRELS + ["tst-q001 0 tst-0004 0"],
     "qrels.trec:5: grade 0 outside 1..3"),
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
    ("missing file", GOOD_MEMORIES, None, GOOD_QRELS, "queries.jsonl: file missing"),
]


@pytest.mark.parametrize(("memories", "queries", "qrels", "expected"), [case[1:] for case in BROKEN],
                         ids=[case[0] for case in BROKEN])
def test_each_problem_is_reported_with_file_and_line(tmp_path, memories, queries, qrels, expected) -> None:
    root = write(tmp_path / "tst", memories, queries or [], qrels)
    if queries is None:
        (root / "queries.jsonl").unlink()
    found = problems(root)
    assert any(p.startswith(expected) for p in found), found


def test_all_problems_are_listed_in_one_error(tmp_path: Path) -> None:
    memories = [
        '{"id": "tst-0001", "memory": "repo"',                     # 1: invalid JSON
        _entry("tst-0002", kind_typo=True),                          # 2: extra field
        {**_entry("tst-0003"), "kind": "fakt"},                      # 3: unknown kind
        _entry("tst-0003"),                                          # 4: duplicate id
        _entry("tst-0005", state="inactive"),
    ]
    queries = [
        _query("tst-q001", ["negative", "lexcal"]),                  # 1: unknown tag
        {k: v for k, v in _query("tst-q002", ["negative"]).items() if k != "split"},  # 2: no split
        _query("tst-q003", ["lexical"]),                             # 3: no grade-3 (see qrels)
    ]
    qrels = [
        "tst-q003 0 tst-0005 3",                                     # 1: inactive entry
        "tst-q003 0 tst-0003 7",                                     # 2: grade out of range
        "garbage",                                                   # 3: malformed
    ]
    found = problems(write(tmp_path / "tst", memories, queries, qrels))
    expected = [
        "memories.jsonl:1: invalid JSON",
        "memories.jsonl:2: unexpected field 'kind_typo'",
        "memories.jsonl:3: unknown kind 'fakt'",
        "memories.jsonl:4: duplicate id 'tst-0003'",
        "queries.jsonl:1: unknown tag 'lexcal'",
        "queries.jsonl:2: query has no split",
        "qrels.trec:1: entry 'tst-0005' is inactive",
        "qrels.trec:2: grade 7 outside 1..3",
        "qrels.trec:3: malformed line",
        "queries.jsonl:3: query 'tst-q003' has no grade-3 judgement",
    ]
    for prefix in expected:
        assert sum(p.startswith(prefix) for p in found) == 1, (prefix, found)
    assert len(found) == len(expected), found
    message = str(DatasetError(tmp_path, found))
    assert f"{len(expected)} problem(s)" in message and all(p in message for p in found)


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
