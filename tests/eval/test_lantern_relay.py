"""The multilingual near-miss corpus (datasets/lantern-relay) holds what issue 34 asked of it.

On top of the bundled style and the FORMAT.md targets (test_datasets.py checks those for
every bundled corpus), this corpus exists to make two failures of the defaults
measurable: mixed-language memory and near-miss questions. Each quota below is one of
the issue's, so a later edit that thins the corpus out fails here, not silently in a
report. The paraphrase check uses the project's own analyzer (v2: Snowball stemming,
CJK unigrams and bigrams), the same terms full-text admission counts.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from powercontext.analyzer import get
from powercontext.eval.corpora import datasheet
from powercontext.eval.corpora.datasets import EMPTY_ANSWER_TAGS, QueryRecord, language, load

CORPUS = load(Path(__file__).resolve().parents[2] / "datasets" / "lantern-relay", style="bundled")
ANALYZER = get("v2")
NON_ENGLISH = ("zh", "ja", "ru")

# Function words the "no shared content word" rule ignores: English words the analyzer's
# stop list keeps (as v2 stems them), Chinese particles as CJK unigrams, Russian and
# Japanese particles. Everything else the analyzer emits counts as content.
FUNCTION_WORDS = frozenset(
    "do doe did can could should would may might must which whi we our us my me you your i there if not no and "
    "but ani all so than then have has had get got its their they them one each befor through s t".split()
    + [f"u_{ord(c):04x}" for c in "的了是在吗呢么什哪个要不我们有和就都也这那怎吧会能该"]
    + "в на и не с по для что как это из к у о а но ли же то за до при от или мы я можно".split()
    + "の は が を に で と も へ か".split()
)


def content_terms(text: str) -> set[str]:
    return {t for t in ANALYZER.tokens(text) if t not in FUNCTION_WORDS}


def answers(query: QueryRecord, grade: int = 3):
    return [CORPUS.entry(eid) for eid, g in query.judgements.items() if g == grade]


def with_tag(tag: str) -> list[QueryRecord]:
    return [q for q in CORPUS.queries if q.has_tag(tag)]


def test_size_memories_and_graded_judgements() -> None:
    c = datasheet.counts(CORPUS)
    assert c.entries >= 250 and c.queries >= 250
    assert set(CORPUS.memory_names) == {"repo", "user", "team"}
    assert all(c.memory[m] >= 40 for m in ("repo", "user", "team"))
    assert {3, 2, 1} <= set(c.grade) and c.grade[2] >= 50 and c.grade[1] >= 50
    assert c.with_history >= 15 and c.state["inactive"] >= 12
    assert c.tag["stale"] >= 6 and c.tag["forgotten"] >= 6
    for memory in ("repo", "user", "team"):  # forgetting and revising happen in every memory
        entries = [e for e in CORPUS.memories if e.memory == memory]
        assert any(not e.is_active for e in entries) and any(e.history for e in entries), memory


def test_a_quarter_of_the_entries_are_in_non_latin_scripts_and_code_switched() -> None:
    by_language = Counter(e.language for e in CORPUS.memories)
    assert sum(by_language[lang] for lang in NON_ENGLISH) >= 0.25 * len(CORPUS.memories)
    assert all(by_language[lang] >= 25 for lang in NON_ENGLISH), by_language
    for lang in NON_ENGLISH:
        # prose around English identifiers, paths, flags and commands, as teams write it
        entries = [e for e in CORPUS.memories if e.language == lang]
        switched = [e for e in entries if re.search(r"[A-Za-z][A-Za-z0-9_./-]{2,}", e.text)]
        assert len(switched) >= 0.8 * len(entries), lang
    for memory in ("repo", "team"):
        assert {e.language for e in CORPUS.memories if e.memory == memory} == {"en", *NON_ENGLISH}


def test_cross_lingual_questions_go_both_ways_for_every_language() -> None:
    directions = Counter()
    for q in CORPUS.queries:
        other = {e.language for e in answers(q)} - {q.lang}
        assert q.has_tag("cross-lingual") == bool(other), q.id  # the tag means exactly this here
        directions.update((q.lang, lang) for lang in other)
    for lang in NON_ENGLISH:
        assert directions["en", lang] >= 5, (lang, directions)  # English question, answer in lang
        assert directions[lang, "en"] >= 5, (lang, directions)  # question in lang, English answer
    assert directions["zh", "ja"] + directions["ja", "zh"] + directions["ru", "zh"] >= 2  # and between two of them


def test_near_misses_are_at_least_forty_percent_of_the_negatives() -> None:
    negatives = [q for q in CORPUS.queries if not q.is_positive]
    near = with_tag("near-miss")
    assert all(not q.is_positive for q in near)
    assert len(near) >= 0.40 * len(negatives), (len(near), len(negatives))
    assert set(EMPTY_ANSWER_TAGS) >= {"near-miss"}
    assert all(sum(q.lang == lang for q in near) >= 5 for lang in NON_ENGLISH)
    same_language = [q for q in near if any(CORPUS.entry(e).language == q.lang for e in q.meta["close_to"])]
    assert len(same_language) >= 0.9 * len(near)  # mostly the hard kind: same words, missing fact
    assert {m for q in near for m in q.memories} == {"repo", "user", "team"}


@pytest.mark.parametrize("query", with_tag("near-miss") + with_tag("hard-negative"), ids=lambda q: q.id)
def test_each_near_miss_sits_next_to_entries_it_names(query: QueryRecord) -> None:
    """meta.close_to lists the stored entries a near miss is about; they are active and
    searched, and those in the question's own language share its vocabulary (an
    identifier or topic term), so only answerability, not topic, tells them apart.
    (A question whose neighbours are all in other languages is a cross-lingual near miss.)"""
    close = [CORPUS.entry(eid) for eid in query.meta["close_to"]]
    assert close and all(e.is_active and e.memory in query.memories for e in close)
    same_language = [e for e in close if e.language == query.lang]
    shared = set().union(*(content_terms(e.text) for e in same_language)) & content_terms(query.text)
    assert shared or not same_language, query.text


def test_paraphrases_share_no_content_word_with_their_answers() -> None:
    paraphrases = with_tag("paraphrase")
    assert len(paraphrases) >= 0.25 * len(CORPUS.queries)
    assert {q.lang for q in paraphrases} >= {"en", "zh", "ru"}
    for q in paraphrases:
        for entry in answers(q):
            shared = content_terms(q.text) & content_terms(entry.text)
            assert not shared, f"{q.id} shares {sorted(shared)} with {entry.id}"


def test_language_tags_follow_the_script() -> None:
    assert Counter(q.lang for q in CORPUS.queries).keys() == {"en", *NON_ENGLISH}
    assert all(language(q.text) == q.lang for q in CORPUS.queries)
    assert all(q.lang in ("zh", "ja") for q in with_tag("cjk"))
