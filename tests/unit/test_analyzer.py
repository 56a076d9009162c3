import apsw
from hypothesis import example, given, settings, strategies as st

from powercontext import analyzer
from powercontext.backends.sqlite.backend import FTS_TOKENIZE


def test_english_terms_are_casefolded_and_split_on_punctuation():
    assert analyzer.tokens("Run `make test`, then make-check!") == ["run", "make", "test", "then", "make", "check"]


def test_chinese_runs_become_unigrams_and_bigrams():
    assert analyzer.tokens("中文") == ["u_4e2d", "u_6587", "b_4e2d_6587"]
    assert analyzer.tokens("中文字") == ["u_4e2d", "u_6587", "u_5b57", "b_4e2d_6587", "b_6587_5b57"]


def test_mixed_chinese_and_latin():
    assert analyzer.tokens("端口8080由Vite使用") == [
        "u_7aef", "u_53e3", "b_7aef_53e3", "8080", "u_7531", "vite", "u_4f7f", "u_7528", "b_4f7f_7528",
    ]


def test_cjk_extension_b_uses_full_code_point():
    assert analyzer.tokens("\U00020000") == ["u_20000"]


def test_underscore_splits_identifiers_but_keeps_cjk_tokens_whole():
    assert analyzer.tokens("ob_hnsw_ef_search __init__") == ["ob", "hnsw", "ef", "search", "init"]
    assert analyzer.tokens("u_4e2d b_4e2d_6587 u_0041") == ["u_4e2d", "b_4e2d_6587", "u", "0041"]


def test_latin_diacritics_fold_but_other_scripts_keep_marks():
    assert analyzer.tokens("Café NAÏVE") == ["cafe", "naive"]
    assert analyzer.tokens("が") == ["が"]  # kana keeps its voicing mark


def test_stopwords_and_overlong_tokens_are_dropped():
    assert analyzer.tokens("The port of the API") == ["port", "api"]
    assert analyzer.tokens("x" * 65 + " ok") == ["ok"]


def test_query_terms_are_distinct_in_first_appearance_order():
    assert analyzer.query_terms("make test make docs test") == ("make", "test", "docs")


def test_searchable_text_is_space_joined_tokens():
    assert analyzer.searchable_text("中文 Docs") == "u_4e2d u_6587 b_4e2d_6587 docs"


def test_match_expression_quotes_every_term():
    assert analyzer.fts5_match_expression(("make", "u_4e2d")) == '"make" OR "u_4e2d"'


_con = apsw.Connection(":memory:")
_con.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize=\"{FTS_TOKENIZE}\")")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_unicode_query_is_safe_in_fts5_match(text):
    terms = analyzer.query_terms(text)
    if terms:
        _con.execute("SELECT rowid FROM t WHERE t MATCH ?", (analyzer.fts5_match_expression(terms),)).fetchall()


@settings(max_examples=300, deadline=None)
@given(st.text())
@example("0\u07b2\u0300")          # a combining mark whose base is a separator
@example("\u4e2d\u0300x")          # ... or a CJK ideograph
def test_analyzing_twice_is_stable(text):
    once = analyzer.searchable_text(text)
    assert analyzer.searchable_text(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(categories=("L", "N", "M", "Zs", "P")), max_size=40))
def test_fts5_indexes_analyzer_tokens_whole(text):
    """Each stored token is findable by itself: FTS5's tokenizer agrees with ours."""
    stored = analyzer.searchable_text(text)
    _con.execute("DELETE FROM t")
    _con.execute("INSERT INTO t (rowid, x) VALUES (1, ?)", (stored,))
    for term in set(stored.split()):
        hits = _con.execute("SELECT rowid FROM t WHERE t MATCH ?", (analyzer.fts5_match_expression((term,)),)).fetchall()
        assert hits == [(1,)], term


# ASCII words, identifiers, CJK-token look-alikes, stop words, an overlong token, and
# every ASCII punctuation/control character as a separator
_ASCII_PIECES = st.sampled_from(
    ["Run", "make", "TEST", "the", "u_4e2d", "b_4e2d_6587", "u_0041", "b_4e2d", "ob_hnsw_ef", "__init__",
     "8080", "v2", "x" * 65, "café".encode("ascii", "ignore").decode()]
) | st.text(alphabet=st.characters(max_codepoint=127), max_size=12)


@settings(max_examples=400, deadline=None)
@given(st.lists(_ASCII_PIECES, max_size=12).map("".join))
@example("Run `make test`, then make-check! u_4e2d_x __init__ A_B")
def test_the_ascii_path_makes_the_tokens_the_unicode_rules_make(text):
    assert analyzer.tokens(text) == analyzer._unicode_tokens(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=10))
@example("u_4e2d")
@example("2024")
@example("")
def test_the_ascii_rule_for_stemmable_words_is_the_general_one(token):
    general = (not token.startswith(("u_", "b_")) and any(c.isalpha() for c in token)
               and all(c.isdigit() or (c.isalpha() and ord(c) < 0x0250) for c in token))
    assert analyzer._is_latin_word(token) == general
