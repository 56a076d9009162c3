"""Analyzers v1 and v2: the one function that turns text into search terms.

The same function produces the stored ``searchable_text`` and the query terms, so the
database full-text engines only ever see space-separated, ASCII-safe or letter-only
tokens and never raw user input:

* NFC, then Unicode case folding;
* Latin diacritics are folded (``café`` → ``cafe``): OceanBase's collation matches
  accent-insensitively and FTS5 (configured with ``remove_diacritics 0``) would not, so
  folding here keeps both databases on identical terms;
* a token is a maximal run of letters, marks, digits or private-use characters; every
  other character (punctuation, symbols, spaces, ``_``) separates tokens — except that
  a word that already is a CJK token (``u_4e2d``, ``b_4e2d_6587``, naming real CJK
  code points) stays whole, so analyzing stored ``searchable_text`` again is a fixed
  point (``ob_hnsw_ef`` still splits into ``ob hnsw ef``);
* runs of CJK ideographs become unigrams ``u_4e2d`` and adjacent-pair bigrams
  ``b_4e2d_6587`` (so ``中文`` → ``u_4e2d u_6587 b_4e2d_6587``);
* English stop words are dropped: OceanBase's full-text parser has a built-in stop
  list that cannot be disabled, so the analyzer removes the same words for both
  databases and admission counts identical terms on both;
* tokens longer than ``MAX_TOKEN_CHARS`` (hashes, base64 blobs) are dropped: they are
  not what people search for, and index engines cap token length differently.

Analyzer v2 is v1 plus Snowball English stemming of Latin terms (``conventions`` and
``convention`` both become ``convent``); CJK tokens, digits and other scripts are left
as v1 makes them. A database records the analyzer that built its ``searchable_text``
and refuses another one: switching is a migration that rebuilds the full-text
projection.

Changing any rule of a version changes stored ``searchable_text``: add a version
instead, and rebuild the projections (``svc.rebuild_projections()``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

ANALYZER_VERSION = "v2"
"""The analyzer of NEW databases (``open(..., analyzer=...)`` picks another). v2 since
the admission study (reports/admission_study): with the centred-cosine admission it
gains +0.026 nDCG@10 leave-one-corpus-out at the same false-admission bound, and the
RFC scenario's ``conventions`` finds ``convention``. A database keeps the analyzer it
records, so files created as v1 open as v1."""
ANALYZER_VERSIONS = ("v1", "v2")
MAX_TOKEN_CHARS = 64

# The default stop list of the OceanBase/MySQL full-text parser (measured on seekdb:
# these words are never indexed there), applied to both databases for parity.
STOPWORDS = frozenset(
    """a about an are as at be by com de en for from how i in is it la of on or that
    the this to was what when where who will with und www""".split()
)

_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FA1F),
)


def is_cjk(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


def _is_token_char(ch: str) -> bool:
    cat = unicodedata.category(ch)
    return cat[0] in "LNM" or cat == "Co" or ch == "_"


_CJK_TOKEN = re.compile(r"u_([0-9a-f]{4,5})|b_([0-9a-f]{4,5})_([0-9a-f]{4,5})")


def _split_word(word: str) -> list[str]:
    """Underscores separate words unless the word is itself a CJK analyzer token."""
    if "_" not in word:  # nearly every word: no token pattern to try
        return [word]
    match = _CJK_TOKEN.fullmatch(word)
    if match and all(is_cjk(chr(int(g, 16))) for g in match.groups() if g):
        return [word]
    return [part for part in word.split("_") if part]


class _CharClasses(dict):
    """Code point -> one-letter class, filled on first sight (``str.translate`` asks a
    mapping for each character; a dict subclass's ``__missing__`` answers). One C-level
    pass over a text then replaces a Python call per character: the per-character loops
    were two thirds of a 50k-entry first load's time (issue 48)."""

    def __init__(self, classify: Callable[[str], str]) -> None:
        super().__init__()
        self._classify = classify

    def __missing__(self, code_point: int) -> str:
        letter = self[code_point] = self._classify(chr(code_point))
        return letter


def _fold_class(ch: str) -> str:
    # "n": a nonspacing mark; "L": a Latin base (what folding removes marks after); "o": else
    if unicodedata.category(ch) == "Mn":
        return "n"
    return "L" if ord(ch) < 0x0250 or 0x1E00 <= ord(ch) <= 0x1EFF else "o"


def _token_class(ch: str) -> str:
    # "c": CJK ideograph; "m": a mark (a token character, but not a word's first);
    # "w": any other token character; "s": a separator
    if is_cjk(ch):
        return "c"
    if unicodedata.category(ch)[0] == "M":
        return "m"
    return "w" if _is_token_char(ch) else "s"


_FOLD_CLASSES = _CharClasses(_fold_class)
_TOKEN_CLASSES = _CharClasses(_token_class)
# Marks directly after a Latin base (or after marks removed so): what folding drops.
_FOLDED_MARKS = re.compile(r"(?<=L)n+")
# A word: token characters between separators and CJK runs, its leading marks dropped;
# or a run of CJK ideographs.
_WORD_OR_CJK = re.compile(r"m*(w[wm]*)|(c+)")


def _fold_latin_diacritics(text: str) -> str:
    """NFD, then drop the nonspacing marks that follow a Latin base, then NFC."""
    decomposed = unicodedata.normalize("NFD", text)
    classes = decomposed.translate(_FOLD_CLASSES)
    if "n" in classes:
        kept, at = [], 0
        for match in _FOLDED_MARKS.finditer(classes):
            kept.append(decomposed[at:match.start()])
            at = match.end()
        kept.append(decomposed[at:])
        decomposed = "".join(kept)
    return unicodedata.normalize("NFC", decomposed)


class _HexDigits(dict):
    """Code point -> its 4- or 5-digit hex and a space, for ``str.translate``: a CJK
    run's code points in one C-level pass, not an f-string per character and pair."""

    def __missing__(self, code_point: int) -> str:
        digits = self[code_point] = f"{code_point:04x} "
        return digits


_HEX_DIGITS = _HexDigits()


def _cjk_tokens(run: str) -> list[str]:
    digits = run.translate(_HEX_DIGITS).split()
    return [*map("u_".__add__, digits), *map("b_{}_{}".format, digits, digits[1:])]


# ASCII text needs none of the Unicode steps: NFC, diacritic folding and case folding
# leave it as ``lower()`` does, and its token characters (categories L, N, and ``_``)
# are exactly these. Queries and most stored texts are ASCII; the per-character loop
# below cost a hybrid search at 1k entries more than its authoritative check.
_ASCII_WORD = re.compile(r"[a-z0-9_]+")


def tokens(text: str) -> list[str]:
    """Every analyzer token of ``text`` in order of appearance (duplicates kept)."""
    if text.isascii():
        words = _ASCII_WORD.findall(text.lower())
        if "_" not in text:  # most texts: every word is its own one token
            return [word for word in words if word not in STOPWORDS and len(word) <= MAX_TOKEN_CHARS]
        return [token for word in words
                for token in ((word,) if "_" not in word else _split_word(word))
                if token not in STOPWORDS and len(token) <= MAX_TOKEN_CHARS]
    return _unicode_tokens(text)


def _unicode_tokens(text: str) -> list[str]:
    text = _fold_latin_diacritics(unicodedata.normalize("NFC", text).casefold())
    out: list[str] = []
    append = out.append
    for match in _WORD_OR_CJK.finditer(text.translate(_TOKEN_CLASSES)):
        start, end = match.span(1)
        if start >= 0:
            # A combining mark with no base in its word (it followed a separator) is
            # dropped: in stored text it would follow a space, whose Latin-base folding
            # removes it, so keeping it here would make a second analysis differ.
            word = text[start:end]
            if "_" not in word:  # nearly every word: no call for it (a 50k load has ~600k)
                if word not in STOPWORDS and len(word) <= MAX_TOKEN_CHARS:
                    append(word)
                continue
            for token in _split_word(word):
                if token not in STOPWORDS and len(token) <= MAX_TOKEN_CHARS:
                    append(token)
        else:
            out += _cjk_tokens(text[match.start(2):match.end(2)])
    return out


def searchable_text(text: str) -> str:
    """What the full-text projection stores: analyzer tokens joined by single spaces."""
    return " ".join(tokens(text))


def query_terms(text: str) -> tuple[str, ...]:
    """Distinct analyzer terms of a query, in first-appearance order. Admission
    counts coverage over exactly these terms."""
    return tuple(dict.fromkeys(tokens(text)))


# ------------------------------------------------------------------------ versions


def _is_latin_word(token: str) -> bool:
    """A v1 token made of Latin letters (and digits), with at least one letter: what
    the English stemmer may touch. CJK tokens (``u_4e2d``) never qualify."""
    if token.isascii():  # the same rule by C string methods: letters and digits, not only digits
        return token.isalnum() and not token.isdigit()
    return (not token.startswith(("u_", "b_")) and any(c.isalpha() for c in token)
            and all(c.isdigit() or (c.isalpha() and (ord(c) < 0x0250 or 0x1E00 <= ord(c) <= 0x1EFF)) for c in token))


@lru_cache(maxsize=1)
def _english_stemmer() -> Callable[[str], str]:
    try:
        import Stemmer  # PyStemmer: the Snowball C library
    except ImportError as exc:
        from .errors import CapabilityNotSupportedError

        raise CapabilityNotSupportedError(
            "analyzer v2 needs the Snowball stemmer: pip install 'powercontext[stem]' (PyStemmer)"
        ) from exc
    stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWord


def _stemmed(token: str) -> str:
    """A v1 token as v2 keeps it: Latin words stemmed, anything else as it is."""
    return _english_stemmer()(token) if _is_latin_word(token) else token


class _Stems(dict):
    """Token -> ``_stemmed(token)``, learnt on first sight: a load's texts repeat their
    words, and a dict lookup by ``map`` costs half an ``lru_cache`` call (~0.25 s of a
    50k-entry load). Cleared when full, so a long-lived process stays bounded."""

    LIMIT = 1 << 16

    def __missing__(self, token: str) -> str:
        if len(self) >= self.LIMIT:
            self.clear()
        stem = self[token] = _stemmed(token)
        return stem


_STEMS = _Stems()


@dataclass(frozen=True)
class Analyzer:
    """One analyzer version: what a database's ``searchable_text`` and every query's
    terms are made with. ``v1`` is the module functions above; ``v2`` stems."""

    version: str

    def __post_init__(self) -> None:
        if self.version not in ANALYZER_VERSIONS:
            from .errors import InvalidMemoryRequestError

            raise InvalidMemoryRequestError(
                f"unknown analyzer {self.version!r}: use one of {', '.join(ANALYZER_VERSIONS)}"
            )
        if self.version == "v2":
            _english_stemmer()  # fail now, with the install hint, not at the first write

    def tokens(self, text: str) -> list[str]:
        out = tokens(text)
        if self.version == "v1":
            return out
        stems = map(_STEMS.__getitem__, out)
        # A stem can land on OceanBase's unindexable stop list ("being" → "be"): drop it
        # here too, so both databases still count identical terms.
        return [t for t in stems if t not in STOPWORDS]

    def searchable_text(self, text: str) -> str:
        return " ".join(self.tokens(text))

    def query_terms(self, text: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.tokens(text)))


def get(version: str | None = None) -> Analyzer:
    """The analyzer of ``version`` (default: ``ANALYZER_VERSION``)."""
    return Analyzer(version or ANALYZER_VERSION)


# ------------------------------------------------------------------------- scripts

SCRIPTS = ("latin", "cjk", "other", "none")


def script(text: str) -> str:
    """The writing system a text is mostly in: ``cjk`` when it has at least as many CJK
    characters as Latin words (Chinese prose with English identifiers is Chinese to an
    English-only embedding model), ``latin`` when Latin words dominate, ``other`` for
    other letters (Cyrillic, Greek …), ``none`` for digits and punctuation only."""
    return script_of_tokens(tokens(text))


def script_of_tokens(stored: "list[str] | tuple[str, ...]") -> str:
    """``script`` from analyzer tokens (each CJK character is one ``u_`` unigram), e.g.
    a projection's stored ``searchable_text`` split: what search reads, so a candidate's
    script costs no re-analysis. Equal to ``script(text)`` for v1 tokens; v2 tokens
    can differ only where a stem lands on the stop list (one Latin word fewer)."""
    cjk = latin = other = 0
    for token in stored:
        # Search asks this of every candidate's every token: plain ASCII words and
        # numbers (nearly all of them) are decided by C string methods alone.
        if token.isascii() and token.isalnum() and not token.startswith(("u_", "b_")):
            latin += not token.isdigit()  # a Latin word has a letter; a number is no script
            continue
        if token.startswith(("u_", "b_")) and _CJK_TOKEN.fullmatch(token):
            cjk += token.startswith("u_")
        elif _is_latin_word(token):
            latin += 1
        elif any(c.isalpha() for c in token):
            other += 1
    if cjk and cjk >= latin:
        return "cjk"
    if latin or other:
        return "latin" if latin >= other else "other"
    return "none"


def script_of_stored(searchable_text: str) -> str:
    """``script_of_tokens(searchable_text.split())``, for a projection's stored text.
    Search asks it of every candidate it has not seen (~80 per hybrid search; at 50k
    entries most are new), and nearly all are ASCII words and numbers: such a text is
    decided by two C string scans, not a Python step per token. A text of ASCII letters
    and digits only (spaces aside) has no CJK token (those hold ``_``) and no "other"
    token: it is ``latin`` if it holds a letter, else ``none``."""
    letters_and_digits = searchable_text.replace(" ", "")
    if searchable_text.isascii() and letters_and_digits.isalnum():
        return "none" if letters_and_digits.isdigit() else "latin"
    return script_of_tokens(searchable_text.split())


def fts5_match_expression(terms: tuple[str, ...]) -> str:
    """An FTS5 MATCH expression: each term double-quoted (a string, never syntax),
    joined with OR. Terms come from the analyzer, so they contain no quotes."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
