"""The analyzer's character classes (issue 48: a first load of 50k entries spent most of
its time in per-character Python calls) give exactly the tokens of the per-character
rules they replace. The rules are restated here as the oracle, one character at a time,
as the module docstring words them."""

import json
import unicodedata
from pathlib import Path

from hypothesis import example, given, settings, strategies as st

from powercontext import analyzer

from .calls import python_calls

ROOT = Path(__file__).resolve().parents[2]


def _oracle_fold(text: str) -> str:
    out, base_is_latin = [], False
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.category(ch) == "Mn" and base_is_latin:
            continue
        base_is_latin = ord(ch) < 0x0250 or 0x1E00 <= ord(ch) <= 0x1EFF
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def _oracle_tokens(text: str) -> list[str]:
    text = _oracle_fold(unicodedata.normalize("NFC", text).casefold())
    out, word, cjk = [], [], []

    def flush_word():
        while word and unicodedata.category(word[0])[0] == "M":
            word.pop(0)
        if word:
            out.extend(t for t in analyzer._split_word("".join(word))
                       if t not in analyzer.STOPWORDS and len(t) <= analyzer.MAX_TOKEN_CHARS)
            word.clear()

    def flush_cjk():
        if cjk:
            out.extend(analyzer._cjk_tokens("".join(cjk)))
            cjk.clear()

    for ch in text:
        if analyzer.is_cjk(ch):
            flush_word()
            cjk.append(ch)
        elif unicodedata.category(ch)[0] in "LNM" or unicodedata.category(ch) == "Co" or ch == "_":
            flush_cjk()
            word.append(ch)
        else:
            flush_word()
            flush_cjk()
    flush_word()
    flush_cjk()
    return out


# Latin with and without precomposed accents, bare combining marks, CJK, kana with its
# voicing marks, Cyrillic, Devanagari (spacing marks), digits, '_' and punctuation.
ALPHABET = st.sampled_from(list("aAzZéÉïñßİĳǅ0129_ -.,;:!?/\\'\"()[]{}中文字端口ひがガЖжक़ि्ा\u0301\u0308\u0327\u20dd\u200d\ue000\t\n")
                           + ["\U00020000", "ﬁ", "Ω", "ǰ", "ẞ", "ḁ", "\u0345"])


@settings(max_examples=400, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
@example("\u0301abc")  # a leading mark is dropped
@example("中\u0301a")  # a mark after CJK starts no word
@example("e\u0301\u0301\u0308 ı\u0307")  # marks after marks after a Latin base
@example("क\u093f\u0301")  # a spacing mark, then a nonspacing one after a non-Latin base
@example("u_4e2d_x b_4e2d_6587 ﬁ_ﬁ")
def test_classes_give_the_per_character_rules_tokens(text):
    assert analyzer._unicode_tokens(text) == _oracle_tokens(text)
    assert analyzer.tokens(text) == _oracle_tokens(text)


def test_every_bundled_text_analyzes_as_the_per_character_rules_say():
    texts = [json.loads(line)["text"] for path in sorted((ROOT / "datasets").glob("*/*.jsonl"))
             for line in path.open() if line.strip()]
    assert sum(not t.isascii() for t in texts) > 100
    v2 = analyzer.get("v2")
    stem = analyzer._english_stemmer()
    for text in texts:
        expected = _oracle_tokens(text)
        assert analyzer.tokens(text) == expected, text
        stems = [stem(t) if analyzer._is_latin_word(t) else t for t in expected]
        assert v2.tokens(text) == [t for t in stems if t not in analyzer.STOPWORDS], text


def test_a_long_non_ascii_text_is_analyzed_without_a_call_per_character():
    text = "Le café naïve 端口8080由Vite使用, ob_hnsw_ef → done. " * 200  # ~9,000 characters
    analyzer.tokens(text)  # classes of these characters learnt
    # per word, not per character: ~2,000 words here; the per-character loop made ~40,000 calls
    assert python_calls(analyzer.tokens, text) < 4_000
    v2 = analyzer.get("v2")
    v2.tokens(text)
    assert python_calls(v2.tokens, text) < 4_000


def test_a_non_ascii_text_makes_a_python_call_per_cjk_run_or_identifier_not_per_word():
    """A 50k-entry load analyzes ~600k words: a call for each (``_split_word``, the CJK
    token comprehensions) was a third of the analyzer's time (issue 48 item 2)."""
    text = "Le café naïve 端口8080由Vite使用, ob_hnsw_ef → done. " * 200
    analyzer.tokens(text)
    # per repetition: 3 CJK runs, 1 identifier with "_" (and its split): ~5 calls, not ~17
    assert python_calls(analyzer.tokens, text) < 1_400
    v2 = analyzer.get("v2")
    v2.tokens(text)
    assert python_calls(v2.tokens, text) < 1_400
