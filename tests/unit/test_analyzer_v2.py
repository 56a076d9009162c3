"""Analyzer v2 (v1 + Snowball English stemming of Latin terms) and script detection."""

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import powercontext as pc
from powercontext import analyzer

V1, V2 = analyzer.get("v1"), analyzer.get("v2")
RFC_QUERY = "Which build and verification conventions should I know before editing documentation?"
RFC_ENTRY = ("Validation convention: run make test for routine code changes; prefer make docs-test for "
             "documentation-only changes; run make check before review.")


def test_v1_is_the_module_functions_and_v2_the_default_of_new_databases():
    assert analyzer.ANALYZER_VERSION == "v2" and analyzer.get() == V2 and analyzer.get("v1") == V1
    # byte-identical to what v1 databases store (hand-written expectation)
    assert V1.searchable_text("Conventions: run `make docs-test` 中文!") == "conventions run make docs test u_4e2d u_6587 b_4e2d_6587"


@settings(max_examples=300, deadline=None)
@given(st.text())
@example("Café conventions ünïcode_ids 中文 u_4e2d")
def test_v1_object_equals_v1_functions_on_any_text(text):
    assert V1.searchable_text(text) == analyzer.searchable_text(text)
    assert V1.query_terms(text) == analyzer.query_terms(text)


def test_v2_stems_latin_terms_and_keeps_cjk_digits_and_other_scripts():
    assert V2.tokens("Conventions converted running runs 中文 3.12 Москвы") == [
        "convent", "convert", "run", "run", "u_4e2d", "u_6587", "b_4e2d_6587", "3", "12", "москвы"]


def test_v2_drops_stems_that_land_on_the_shared_stop_list():
    # "being" stems to "be", which OceanBase's parser never indexes
    assert "be" not in V2.tokens("being careful") and V2.tokens("being careful") == ["care"]


def test_rfc_scenario_query_matches_more_of_the_revised_entry_under_v2():
    def matched(a):
        stored = set(a.tokens(RFC_ENTRY))
        return [t for t in a.query_terms(RFC_QUERY) if t in stored]

    # 2 of 10 terms under v1 ("conventions" ≠ "convention"), 3 of 10 under v2
    assert matched(V1) == ["before", "documentation"]
    assert matched(V2) == ["convent", "befor", "document"]


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_v2_tokens_are_v1_tokens_stemmed_one_by_one(text):
    """Stemming never merges, splits or reorders v1 tokens; CJK tokens pass untouched."""
    v1, v2 = V1.tokens(text), V2.tokens(text)
    assert len(v2) <= len(v1)
    assert [t for t in v1 if t.startswith(("u_", "b_"))] == [t for t in v2 if t.startswith(("u_", "b_"))]
    assert all(" " not in t and t not in analyzer.STOPWORDS for t in v2)


def test_unknown_analyzer_is_a_typed_error():
    with pytest.raises(pc.InvalidMemoryRequestError, match="unknown analyzer 'v9'"):
        analyzer.get("v9")


@pytest.mark.parametrize("text, script", [
    ("Which port does the BFF dev server listen on?", "latin"),
    ("CI 的集成测试是不是还在用 postgres:15-alpine？", "cjk"),
    ("staging 的 Dagster UI 地址是 https://dagster.staging.atlas.internal，访问前要先连公司 VPN。", "cjk"),
    ("The user's note says 中文 once, in an otherwise English sentence about builds.", "latin"),
    ("Где лежит конфигурация?", "other"),
    ("3.12 / 5433", "none"),
    ("", "none"),
])
def test_script_is_the_dominant_writing_system(text, script):
    assert analyzer.script(text) == script


def _script_token_by_token(stored):
    """The rule of ``script_of_tokens`` spelled out per token, without its ASCII fast path."""
    cjk = latin = other = 0
    for token in stored:
        if token.startswith(("u_", "b_")) and analyzer._CJK_TOKEN.fullmatch(token):
            cjk += token.startswith("u_")
        elif analyzer._is_latin_word(token):
            latin += 1
        elif any(c.isalpha() for c in token):
            other += 1
    if cjk and cjk >= latin:
        return "cjk"
    if latin or other:
        return "latin" if latin >= other else "other"
    return "none"


@settings(max_examples=300)
@given(st.lists(st.one_of(
    st.text(max_size=8),
    st.sampled_from(["u_4e2d", "b_4e2d_6587", "u_", "b_x", "42", "port", "café", "Ωmega", "a_b", "x-1"]),
), max_size=12))
def test_the_script_of_stored_tokens_follows_the_per_token_rule(stored):
    # search computes every candidate's script from its stored tokens, on a fast path
    # for ASCII words: it must give the verdict the per-token rule gives
    assert analyzer.script_of_tokens(stored) == _script_token_by_token(stored)


@settings(max_examples=300)
@given(st.lists(st.one_of(
    st.text(alphabet="abcXYZ019_ \t-é中", max_size=8),
    st.sampled_from(["u_4e2d", "b_4e2d_6587", "42", "port", "café", "a_b", "x-1", "007"]),
), max_size=12))
def test_the_script_of_a_stored_text_follows_the_per_token_rule(stored):
    # search decides most candidates' scripts from the whole stored text at once
    # (ASCII letters and digits): the verdict must be the per-token rule's
    text = " ".join(stored)
    assert analyzer.script_of_stored(text) == _script_token_by_token(text.split())


@given(st.text(max_size=60))
def test_script_of_a_text_is_the_script_of_its_tokens(text):
    assert analyzer.script(text) == _script_token_by_token(analyzer.tokens(text))
