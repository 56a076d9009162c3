"""Counting a validated corpus for its datasheet (pure: a Corpus in, numbers and
Markdown out). ``datasets`` checks a bundled corpus's datasheet with it and
``datasheet`` (the command line) writes the counts into README.md; neither needs the
other for that.

The tables list the bundled vocabulary (memories ``repo``/``user``, the FORMAT.md tags …)
when a corpus uses only that, and whatever values a corpus does use otherwise, so an
imported corpus gets a truthful datasheet too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields

from .corpus import KINDS, LANGUAGE_NAMES, LANGS, MEMORIES, SPLITS, STATES, TAGS, Corpus

__all__ = ["BEGIN", "END", "Counts", "counts", "measures", "render", "shortfalls", "with_counts"]

BEGIN, END = "<!-- counts:begin -->", "<!-- counts:end -->"
SEARCHED = ("repo", "user", "team", "repo+user", "repo+team", "user+team", "repo+user+team")
UNASSIGNED = "none (the harness assigns one)"
# Entry languages counted beyond English and Chinese (which every bundled corpus has).
MORE_LANGS = tuple(lang for lang in LANGS if lang not in ("en", "zh"))

# FORMAT.md, "Targets per corpus" (bundled style); totals are these times the corpora.
MIN_ENTRIES, MIN_QUERIES = 210, 140
MIN_COUNTS = {"history": 15, "inactive": 12, "multi": 10, "forgotten": 6, "stale": 6,
              "hard-negative": 10, "repo+user": 10}
MIN_SHARES = {"chinese entries": 0.08, "paraphrase": 0.25, "cjk or cross-lingual": 0.10,
              "negative": 0.15}


@dataclass(frozen=True, eq=False)
class Counts:
    """Plain counters for one corpus, or summed over several with ``+``."""

    corpora: int = 0
    entries: int = 0
    queries: int = 0
    judgements: int = 0
    chinese: int = 0  # entries in Chinese (CJK ideographs and no kana)
    with_history: int = 0
    positive: int = 0  # queries with at least one judgement
    cjk_or_cross_lingual: int = 0  # queries tagged cjk, cross-lingual or both
    memory: Counter = field(default_factory=Counter)
    text_lang: Counter = field(default_factory=Counter)  # entries by language (datasets.language)
    kind: Counter = field(default_factory=Counter)
    state: Counter = field(default_factory=Counter)
    tag: Counter = field(default_factory=Counter)
    lang: Counter = field(default_factory=Counter)
    split: Counter = field(default_factory=Counter)
    searched: Counter = field(default_factory=Counter)  # "repo", "user", "repo+user"
    grade: Counter = field(default_factory=Counter)
    tag_split: Counter = field(default_factory=Counter)  # (tag, split) -> queries

    def __add__(self, other: Counts) -> Counts:
        summed = {f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(Counts)}
        return Counts(**summed)

    def share(self, tag: str) -> float:
        """Fraction of queries carrying ``tag`` (tags overlap, shares do not sum to 1)."""
        return self.tag[tag] / self.queries if self.queries else 0.0


def counts(corpus: Corpus) -> Counts:
    """Count one validated corpus."""
    queries = corpus.queries
    return Counts(
        corpora=1,
        entries=len(corpus.memories),
        queries=len(queries),
        judgements=sum(len(g) for g in corpus.qrels.values()),
        chinese=sum(e.is_chinese for e in corpus.memories),
        with_history=sum(bool(e.history) for e in corpus.memories),
        positive=sum(q.is_positive for q in queries),
        cjk_or_cross_lingual=sum(bool({"cjk", "cross-lingual"} & set(q.tags)) for q in queries),
        memory=Counter(e.memory for e in corpus.memories),
        text_lang=Counter(e.language for e in corpus.memories),
        kind=Counter(e.kind for e in corpus.memories),
        state=Counter(e.state for e in corpus.memories),
        tag=Counter(t for q in queries for t in q.tags),
        lang=Counter(q.lang for q in queries),
        split=Counter(q.split or UNASSIGNED for q in queries),
        searched=Counter(_searched(q.memories) for q in queries),
        grade=Counter(g for grades in corpus.qrels.values() for g in grades.values()),
        tag_split=Counter((t, q.split or UNASSIGNED) for q in queries for t in q.tags),
    )


def _searched(memories: tuple[str, ...]) -> str:
    """``repo+user`` (``repo+team`` …) for the bundled names (in that order), else the names as searched."""
    if set(memories) <= set(MEMORIES):
        return "+".join(m for m in MEMORIES if m in memories)
    return "+".join(memories)


def measures(c: Counts) -> tuple[dict[str, int], dict[str, float]]:
    """The counts and shares the FORMAT.md targets are stated in."""
    counts_ = {"history": c.with_history, "inactive": c.state["inactive"], "repo+user": c.searched["repo+user"],
               **{tag: c.tag[tag] for tag in ("multi", "forgotten", "stale", "hard-negative")}}
    shares = {"chinese entries": c.chinese / c.entries if c.entries else 0.0,
              "paraphrase": c.share("paraphrase"),
              "cjk or cross-lingual": c.cjk_or_cross_lingual / c.queries if c.queries else 0.0,
              "negative": c.share("negative")}
    return counts_, shares


def shortfalls(c: Counts, corpora: int = 1) -> list[str]:
    """Where ``c`` (summed over ``corpora`` corpora) falls short of the FORMAT.md targets."""
    counts_, shares = measures(c)
    short = [f"{name}: {counts_[name]} < {corpora * low}" for name, low in MIN_COUNTS.items()
             if counts_[name] < corpora * low]
    short += [f"{name}: {shares[name]:.1%} < {low:.0%}" for name, low in MIN_SHARES.items() if shares[name] < low]
    if c.entries < corpora * MIN_ENTRIES:
        short.append(f"entries: {c.entries} < {corpora * MIN_ENTRIES}")
    if c.queries < corpora * MIN_QUERIES:
        short.append(f"queries: {c.queries} < {corpora * MIN_QUERIES}")
    return short


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "–"


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]]) -> list[str]:
    align = ["---"] + ["---:"] * (len(header) - 1)  # labels left, numbers right
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _keys(counter: Counter, vocabulary: tuple) -> tuple:
    """The bundled vocabulary when a corpus uses only that (zero rows included, as the
    bundled datasheets show them), else the values it does use, most frequent first."""
    if set(counter) <= set(vocabulary):
        return vocabulary
    return tuple(k for k, _ in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0]))))


def render(c: Counts) -> str:
    """The counts as Markdown (the text placed between the README markers)."""
    n, q = c.entries, c.queries
    others = "".join(f", {c.text_lang[lang]} in {LANGUAGE_NAMES[lang]}" for lang in MORE_LANGS if c.text_lang[lang])
    out = [
        f"**{n} entries** ({c.state['inactive']} inactive, {c.chinese} in Chinese{others}, "
        f"{c.with_history} with history) and **{q} queries** ({c.positive} with judgements, "
        f"{q - c.positive} with an empty ideal answer; {c.judgements} judgements).",
        "",
        "### Entries",
        "",
    ]
    rows: list[tuple[object, ...]] = []
    rows += [(f"memory `{m}`", c.memory[m], _pct(c.memory[m], n)) for m in _keys(c.memory, MEMORIES)]
    rows += [(f"kind `{k}`", c.kind[k], _pct(c.kind[k], n)) for k in KINDS]
    rows += [(f"state `{s}`", c.state[s], _pct(c.state[s], n)) for s in STATES]
    rows += [("Chinese text", c.chinese, _pct(c.chinese, n))]
    rows += [(f"{LANGUAGE_NAMES[lang]} text", c.text_lang[lang], _pct(c.text_lang[lang], n)) for lang in MORE_LANGS]
    rows += [("with history", c.with_history, _pct(c.with_history, n))]
    rows += [("**total**", n, _pct(n, n))]
    out += _table(("entries", "count", "share"), rows)

    overlap = "Tags overlap: a query may carry several, so tag shares do not add up."
    out += ["### Queries", "", overlap, ""]
    tags = _keys(c.tag, TAGS)
    rows = [(f"tag `{t}`", c.tag[t], _pct(c.tag[t], q)) for t in tags]
    either = c.cjk_or_cross_lingual
    if tags == TAGS:
        rows += [("tag `cjk` or `cross-lingual`", either, _pct(either, q))]
    rows += [(f"lang `{lang}`", c.lang[lang], _pct(c.lang[lang], q)) for lang in _keys(c.lang, LANGS)]
    rows += [(f"split `{s}`", c.split[s], _pct(c.split[s], q)) for s in _keys(c.split, SPLITS)]
    rows += [(f"searches `{s}`", c.searched[s], _pct(c.searched[s], q)) for s in _keys(c.searched, SEARCHED)]
    rows += [("**total**", q, _pct(q, q))]
    out += _table(("queries", "count", "share"), rows)

    out += ["### Judgements (qrels)", ""]
    grades = (3, 2, 1) if set(c.grade) <= {1, 2, 3} else tuple(sorted(c.grade, reverse=True))
    rows = [(f"grade {g}", c.grade[g], _pct(c.grade[g], c.judgements)) for g in grades]
    rows += [("**total**", c.judgements, _pct(c.judgements, c.judgements))]
    out += _table(("judgements", "count", "share"), rows)

    out += ["### Tags by split", ""]
    splits = _keys(c.split, SPLITS)
    rows = [(f"`{t}`", *(c.tag_split[t, s] for s in splits), c.tag[t]) for t in tags]
    out += _table(("tag", *splits, "total"), rows)
    return "\n".join(out)


def with_counts(text: str, corpus: Corpus) -> str:
    """``text`` (a README) with the section between the markers regenerated from
    ``corpus``; ValueError when the markers are missing."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"missing {BEGIN} ... {END} markers")
    return text[:start] + f"{BEGIN}\n{render(counts(corpus))}\n{END}" + text[end + len(END):]
