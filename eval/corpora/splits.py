"""Seeded, stratified assignment of queries to a dev/test split or to k folds.

A corpus that ships no split gets one here, and small corpora are cross-validated over
k folds by query (``crossval``); both use the same dealing so they agree on what
"stratified" means:

1. every query gets a stratum key: whether its ideal answer is empty (no judgement of
   grade ≥ 1), then its tags ordered rarest first (corpus frequency, then name), so
   the queries of a rare tag sit together;
2. queries are ordered by that key, ties broken by a seeded random permutation of the
   query ids (sorted first, so the file's line order does not matter);
3. the ordered list is dealt round-robin: the i-th query goes to fold ``i mod k``.

Each stratum, being contiguous, is spread over the folds within one query of even, and
the fold sizes differ by at most one. With k = 2, fold 0 is ``dev`` and fold 1 ``test``.
The same corpus, seed and k always give the same assignment; the harness writes it
into the run folder (``splits.csv``) so a run can be reproduced and audited.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from .corpus import SPLITS, Corpus

__all__ = ["Stratified", "assign", "complete", "stratum"]

DEFAULT_SEED = 0


class Stratified(NamedTuple):
    """What the dealing needs of a query."""

    id: str
    positive: bool
    tags: tuple[str, ...]


def stratum(item: Stratified, frequency: Counter) -> tuple:
    rarest_first = tuple(sorted(item.tags, key=lambda t: (frequency[t], t)))
    return (item.positive, rarest_first)


def assign(items: Iterable[Stratified], k: int, seed: int = DEFAULT_SEED) -> dict[str, int]:
    """``{query id: fold}`` with folds 0..k-1, stratified as the module describes."""
    if k < 2:
        raise ValueError(f"k must be at least 2, got {k}")
    items = sorted(items, key=lambda it: it.id)
    frequency = Counter(t for it in items for t in it.tags)
    tie = np.random.default_rng(seed).permutation(len(items))
    order = sorted(range(len(items)), key=lambda i: (stratum(items[i], frequency), tie[i]))
    return {items[i].id: n % k for n, i in enumerate(order)}


def complete(corpus: Corpus, seed: int = DEFAULT_SEED) -> Corpus:
    """``corpus`` with every query in dev or test: as given when the file has splits,
    else a seeded stratified half each (``split_origin = "assigned"``)."""
    if all(q.split is not None for q in corpus.queries):
        return corpus
    folds = assign((Stratified(q.id, q.is_positive, q.tags) for q in corpus.queries), 2, seed)
    queries = tuple(replace(q, split=SPLITS[folds[q.id]]) for q in corpus.queries)
    return replace(corpus, queries=queries, split_origin="assigned")


def fold_table(ids: Sequence[str], positive: Sequence[bool], tags: Sequence[Sequence[str]],
               groups: Sequence[str], k: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """Fold (0..k-1) of each query, assigned within each group (a corpus), in input order."""
    fold = np.empty(len(ids), dtype=np.int64)
    by_group: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        by_group.setdefault(g, []).append(i)
    for members in by_group.values():
        folds = assign((Stratified(ids[i], bool(positive[i]), tuple(tags[i])) for i in members), k, seed)
        for i in members:
            fold[i] = folds[ids[i]]
    return fold
