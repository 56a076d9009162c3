"""How much of a question's *specific* content a candidate holds: the answerability
signal ``ChannelCandidate.support``, computed alike on both databases.

A near miss shares a question's topic words and misses its specific one ("Which port
does the metrics exporter listen on?" against "The metrics exporter is configured in
deploy/prom.yaml"). Plain coverage counts every query term alike; ``support`` weighs
each by its inverse document frequency among the searched Memories' active entries,
so the rare terms that make a question specific count most — the IDF-weighted query
term coverage of the IR literature (the idf is BM25's, Robertson & Zaragoza 2009; as a
query-performance predictor, the query's IDF mass, He & Ounis 2004).

The document frequencies come from the full-text read the search makes anyway: the
rows matching any query term (``retrieval.fts_fetch_size``: all of them when fewer
match than the read holds, which is exact; otherwise the engine's most relevant ones,
a lower bound on a term's frequency). A search that reads no full-text rows (vector
mode) has no support signal.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Iterable, Mapping

__all__ = ["held_share", "idf", "support", "term_weights"]


def idf(df: int, n: int) -> float:
    """BM25's inverse document frequency of a term held by ``df`` of ``n`` entries
    (never negative: a term in every entry still weighs a little)."""
    return math.log(1.0 + (max(n, df) - df + 0.5) / (df + 0.5))


def term_weights(terms: tuple[str, ...], df: Mapping[str, int] | Counter, n: int) -> dict[str, float] | None:
    """Each query term's share of the question's IDF mass, over the terms some searched
    entry holds; None when no searched entry holds any of them. Once per search: every
    candidate's support is then a sum over the terms it holds.

    A term no entry holds cannot tell candidates apart, and would weigh most of all
    (its IDF is the largest): question words ("which", "does") and words the memory
    never uses would swamp the ones that make the question specific."""
    weights = {t: idf(df[t], n) for t in dict.fromkeys(terms) if df.get(t, 0) > 0}
    total = sum(weights.values())
    if not weights or total <= 0:
        return None
    return {t: w / total for t, w in weights.items()}


def held_share(held: Iterable[str], weights: Mapping[str, float] | None) -> float | None:
    """The support of a candidate holding the terms ``held``, in [0, 1] (None: no weights)."""
    if weights is None:
        return None
    return sum(weights.get(t, 0.0) for t in set(held))


def support(held: Iterable[str], terms: tuple[str, ...], df: Mapping[str, int] | Counter, n: int) -> float | None:
    """The IDF-weighted share of the query's distinct ``terms`` that a candidate holds
    (``held``), in [0, 1], over the terms some searched entry holds; None when no
    searched entry holds any of them."""
    return held_share(held, term_weights(terms, df, n))
