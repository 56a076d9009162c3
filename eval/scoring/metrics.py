"""Metric definitions: ranking metrics as ranx computes them, set metrics over the
admitted hits, abstention metrics, confidence intervals and paired tests.

The sweep computes every metric for thousands of (policy, limit) points at once, so
the per-row functions here work on arrays: ``gains[row, position]`` is the qrels grade
of the hit at that position (0 for an unjudged hit or an empty position). For the
ranking metrics the numbers are ranx's — same gain (Järvelin: linear grade), same
discount, same relevance level (grade ≥ 1), same cut-offs — and a test pins that
``row_metrics`` equals ``ranx.evaluate`` on random runs. The named policies of a
report are also evaluated by ranx itself (``ranx_scores``) and compared with
``ranx.compare``.

Populations: a *positive* query has at least one judgement (grade ≥ 1); an
*empty-answer* query has none (tags negative/forgotten, or a hard-negative with
nothing relevant): its ideal answer is empty and admitting anything is a false
admission.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "METRICS",
    "Metric",
    "bootstrap_ci",
    "bootstrap_ci_rows",
    "idcg",
    "nauc",
    "per_query_scoped",
    "paired_randomization_test",
    "ranx_compare",
    "ranx_scores",
    "row_metrics",
]

RANK_CUTOFF = 10  # nDCG@10, MRR@10


@dataclass(frozen=True)
class Metric:
    name: str
    population: str  # "positive", "empty" (empty-answer queries) or "all"
    higher_is_better: bool
    definition: str


METRICS: tuple[Metric, ...] = (
    Metric("ndcg@10", "positive", True,
           "ranx nDCG@10 (Järvelin–Kekäläinen: gain = qrels grade, discount log2(rank+1)) of the admitted hits in "
           "order, divided by the ideal DCG@10 of the query's judgements; mean over positive queries."),
    Metric("mrr@10", "positive", True,
           "ranx MRR@10: 1/rank of the first admitted hit with grade ≥ 1 within the first 10, 0 if none; mean over positive queries."),
    Metric("recall@1", "positive", True, "ranx recall@1: judged (grade ≥ 1) entries among the first hit / all judged entries."),
    Metric("recall@5", "positive", True, "ranx recall@5: judged entries among the first 5 hits / all judged entries."),
    Metric("recall@10", "positive", True, "ranx recall@10: judged entries among the first 10 hits / all judged entries."),
    Metric("precision@1", "positive", True, "ranx precision@1: 1 if the first hit is judged, else 0 (also 0 when nothing is admitted)."),
    Metric("precision@5", "positive", True, "ranx precision@5: judged entries among the first 5 hits / 5 (missing hits count as misses)."),
    Metric("set_precision", "all", True,
           "SetP: |admitted ∩ judged| / |admitted| over ALL hits returned (up to the limit); 1 when nothing is admitted "
           "(nothing wrong was said). Mean over all queries."),
    Metric("set_recall", "all", True,
           "SetR: |admitted ∩ judged| / |judged|; 1 when the query has no judgement. Mean over all queries."),
    Metric("set_f1", "all", True,
           "SetF: harmonic mean of SetP and SetR (0 when both are 0). With the conventions above an empty-answer query "
           "scores 1 when nothing is admitted and 0 otherwise; a positive query scores 0 when nothing is admitted."),
    Metric("false_admission", "empty", False,
           "False-admission rate: share of empty-answer queries (no judgement: negative, forgotten, empty hard-negative) "
           "for which at least one hit was admitted."),
    Metric("empty_answer", "positive", False,
           "Empty-answer rate: share of positive queries for which nothing was admitted (an over-strict threshold)."),
    Metric("hits", "all", False, "Mean number of admitted hits returned (≤ limit)."),
)
METRIC_NAMES = tuple(m.name for m in METRICS)
BY_NAME = {m.name: m for m in METRICS}
RANX_METRICS = ("ndcg@10", "mrr@10", "recall@1", "recall@5", "recall@10", "precision@1", "precision@5")


def _discount(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(1, k + 1) + 1)


def idcg(grades: Sequence[int], k: int = RANK_CUTOFF) -> float:
    """Ideal DCG@k (Järvelin) of a query's judgements, as ranx computes it."""
    g = np.sort(np.asarray([x for x in grades if x >= 1], dtype=np.float64))[::-1][:k]
    return float((g * _discount(len(g))).sum()) if len(g) else 0.0


def row_metrics(gains: np.ndarray, n_admitted: np.ndarray, n_rel: np.ndarray, ideal: np.ndarray, limit: int) -> dict[str, np.ndarray]:
    """Every metric of ``METRICS`` for each row of ranked gains, at ``limit``.

    ``gains[r, i]``: grade of the i-th hit (0 when unjudged or past the admitted hits),
    at least ``limit`` columns wide; ``n_admitted[r]``: admitted candidates before the
    limit; ``n_rel[r]``: judged entries (grade ≥ 1) of the query; ``ideal[r]``: IDCG@10.
    """
    gains = gains[:, :limit].astype(np.float64, copy=False)
    rel = gains >= 1
    hits = np.minimum(n_admitted, limit)
    out: dict[str, np.ndarray] = {}
    kk = min(limit, RANK_CUTOFF)
    dcg = (gains[:, :kk] * _discount(kk)).sum(1)
    out["ndcg@10"] = dcg / np.where(ideal == 0, 1.0, ideal)
    first = rel[:, :kk]
    any_rel = first.any(1)
    out["mrr@10"] = np.where(any_rel, 1.0 / (first.argmax(1) + 1), 0.0)
    safe_rel = np.where(n_rel == 0, 1, n_rel)
    for k in (1, 5, 10):
        tp = rel[:, : min(limit, k)].sum(1)
        out[f"recall@{k}"] = np.where(n_rel == 0, 0.0, tp / safe_rel)
    for k in (1, 5):
        out[f"precision@{k}"] = rel[:, : min(limit, k)].sum(1) / k
    tp = rel.sum(1)
    p = np.where(hits > 0, tp / np.maximum(hits, 1), 1.0)
    r = np.where(n_rel > 0, tp / safe_rel, 1.0)
    out["set_precision"] = p
    out["set_recall"] = r
    out["set_f1"] = np.where(p + r > 0, 2 * p * r / np.where(p + r > 0, p + r, 1.0), 0.0)
    out["false_admission"] = (hits > 0).astype(np.float64)
    out["empty_answer"] = (hits == 0).astype(np.float64)
    out["hits"] = hits.astype(np.float64)
    return out


def per_query_scoped(frame: "pd.DataFrame") -> "pd.DataFrame":
    """A per-query table with each abstention rate left blank (NaN) outside the
    queries it is defined on: ``false_admission`` only for questions with an empty
    ideal answer, ``empty_answer`` only for answerable ones. A row reading "false
    admission 1" for a question that has an answer misled readers of the run folder.
    (``row_metrics`` keeps 0/1 everywhere: the sweep's weighted sums need numbers.)"""
    positive = frame["positive"].astype(bool)
    frame.loc[positive, "false_admission"] = math.nan
    frame.loc[~positive, "empty_answer"] = math.nan
    return frame


# ---------------------------------------------------------------------------- ranx


def _cache_numba_containers() -> None:
    """Keep numba's typed Dict and List compiled on disk, as ranx keeps its own functions.

    ranx fills ``numba.typed`` containers from Python (``Qrels.from_dict``, ``Run``): each
    new key/value type compiles the containers' methods, and numba compiles them without
    its on-disk cache, so every process that scored anything paid 15-40 s of JIT (each
    sweep, each notebook kernel, each test worker) to score a handful of queries. With
    caching on, the first process writes the compiled methods next to numba's own
    sources (in the venv, like ranx's cache) and later ones load them in a second.
    Where the cache cannot be written, numba compiles as before."""
    if getattr(_cache_numba_containers, "done", False):
        return
    from numba.core.registry import CPUDispatcher
    from numba.typed import typeddict, typedlist

    for module in (typeddict, typedlist):
        for function in vars(module).values():
            if isinstance(function, CPUDispatcher):
                try:
                    function.enable_caching()
                except RuntimeError:  # no writable cache location: compiled per process, as before
                    pass
    _cache_numba_containers.done = True


#: Hex digits of a document's stand-in id (below): room for 4 billion documents.
_STAND_IN_WIDTH = 8


def _stand_ins(qrels: Mapping[str, Mapping[str, int]], runs: Sequence[Mapping[str, Sequence[str]]]) -> dict[str, str]:
    """Each document id of ``qrels`` and ``runs`` → a fixed-width stand-in (``00000000``,
    ``00000001`` …), one mapping for all of them.

    ranx keeps document ids in numpy arrays whose dtype is the longest id's width (``<U8``
    for ``atl-0007``), and numba compiles its functions once per width: each corpus whose
    longest id had a new length paid ~40 s of JIT on its first scoring in a venv (a
    test's ``d0``…``d24`` after setup had compiled ``a``, ``b``). Through stand-ins of
    one width, what ``compile_ranx`` caches at setup serves every corpus. The mapping is
    one-to-one and the same for qrels and runs, and a run's scores are strictly
    decreasing, so every match, rank and metric is what the real ids give."""
    every = dict.fromkeys(itertools.chain((doc for judged in qrels.values() for doc in judged),
                                          (doc for run in runs for docs in run.values() for doc in docs)))
    return {doc: format(i, f"0{_STAND_IN_WIDTH}x") for i, doc in enumerate(every)}


def _ranx_qrels(qrels: Mapping[str, Mapping[str, int]], ids: Mapping[str, str]):
    from ranx import Qrels

    _cache_numba_containers()
    return Qrels.from_dict({q: {ids[d]: g for d, g in judged.items()} for q, judged in qrels.items() if judged})


def _ranx_run(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Mapping[str, int]], name: str,
              ids: Mapping[str, str]):
    from ranx import Run

    _cache_numba_containers()
    # Strictly decreasing scores that keep our order (ranx re-sorts by score).
    scores = {q: {ids[doc]: float(len(docs) - i) for i, doc in enumerate(docs)} for q, docs in run.items()
              if q in qrels}
    r = Run.from_dict({q: d for q, d in scores.items() if d}, name=name) if any(scores.values()) else Run(name=name)
    return r


def ranx_scores(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Sequence[str]],
                metrics: Sequence[str] = RANX_METRICS, name: str = "run") -> dict[str, dict[str, float]]:
    """Per-query ranx scores {metric: {query_id: value}} over the queries in ``qrels``
    (positive queries); an empty or missing ranking scores 0."""
    from ranx import evaluate

    ids = _stand_ins(qrels, [run])
    q = _ranx_qrels(qrels, ids)
    r = _ranx_run(run, qrels, name, ids).make_comparable(q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evaluate(q, r, list(metrics), make_comparable=False)
    return {m: dict(r.scores[m]) for m in metrics}


def ranx_compare(qrels: Mapping[str, Mapping[str, int]], runs: Mapping[str, Mapping[str, Sequence[str]]],
                 metrics: Sequence[str] = ("ndcg@10", "mrr@10", "recall@10"), stat_test: str = "student",
                 max_p: float = 0.05):
    """``ranx.compare`` of named runs on the positive queries: mean scores and pairwise
    p-values (paired Student's t by default, as ranx computes them). Returns the ranx
    Report; ``report.to_dict()`` has the numbers."""
    from ranx import compare

    ids = _stand_ins(qrels, list(runs.values()))
    q = _ranx_qrels(qrels, ids)
    ranx_runs = [_ranx_run(run, qrels, name, ids).make_comparable(q) for name, run in runs.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compare(qrels=q, runs=ranx_runs, metrics=list(metrics), stat_test=stat_test, max_p=max_p,
                       make_comparable=False, rounding_digits=4)


def compile_ranx() -> None:
    """Compile what scoring runs through numba (ranx's metrics and paired test, numba's
    typed Dict and List) into the on-disk cache, on a two-query example — through the
    stand-in ids every scoring uses, so it serves every corpus. ``make setup``
    calls it once per venv: without it the first process that scores anything — the
    first sweep, notebook kernel or test worker — spends ~80 s of CPU compiling (measured
    on this project's 2-core machine), and two processes starting together both do."""
    qrels = {"q1": {"a": 1, "b": 2}, "q2": {"c": 1}}
    ranx_scores(qrels, {"q1": ["a", "x"], "q2": ["c"]})
    ranx_compare(qrels, {"x": {"q1": ["a"], "q2": ["c"]}, "y": {"q1": ["b", "a"], "q2": []}}, RANX_METRICS)


# ---------------------------------------------------------------------------- statistics


def bootstrap_ci(values: Sequence[float], n: int = 2000, alpha: float = 0.05, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean (NaN-free input)."""
    x = np.asarray(values, dtype=np.float64)
    if len(x) == 0:
        return (math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), size=(n, len(x)))].mean(1)
    return (float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2)))


def bootstrap_ci_rows(values: np.ndarray, n: int = 2000, alpha: float = 0.05, seed: int = 0
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``bootstrap_ci`` of every row of ``values`` (rows of equal length, e.g. several
    policies' per-query values over the same queries) at once: the same resamples (one
    draw per row length, as ``bootstrap_ci`` makes it), each turned into a count
    matrix so every row's resampled means are one matrix product. Equal to
    ``bootstrap_ci`` row by row up to float rounding; a breakdown by tag and language
    needs thousands of intervals."""
    x = np.atleast_2d(np.asarray(values, dtype=np.float64))
    rows, size = x.shape
    if size == 0:
        return np.full(rows, math.nan), np.full(rows, math.nan)
    idx = np.random.default_rng(seed).integers(0, size, size=(n, size))
    counts = np.bincount((np.arange(n)[:, None] * size + idx).ravel(), minlength=n * size).reshape(n, size)
    means = (counts @ x.T) / size  # [resample, row]
    return np.quantile(means, alpha / 2, axis=0), np.quantile(means, 1 - alpha / 2, axis=0)


def paired_randomization_test(a: Sequence[float], b: Sequence[float], n: int = 10000, seed: int = 0) -> float:
    """Two-sided p-value of mean(a − b) ≠ 0 by sign flipping of the paired differences
    (Fisher's randomization test, the one ranx offers as ``stat_test="fisher"``)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if len(d) == 0 or not np.any(d):
        return 1.0
    rng = np.random.default_rng(seed)
    observed = abs(d.mean())
    signs = rng.choice((-1.0, 1.0), size=(n, len(d)))
    flipped = np.abs((signs * d).mean(1))
    return float((1 + (flipped >= observed - 1e-12).sum()) / (n + 1))


def nauc(confidence: Sequence[float], utility: Sequence[float], rates: Sequence[float] | None = None) -> float:
    """MTEB-style normalized AUC of abstention (Gisserot-Boukhlef et al., 2024; MTEB's
    ``nAUC``): abstain on the least confident queries first; the curve is the mean
    utility of the answered queries at abstention rates 0, 0.1, …, 0.9; its area is
    normalized between a random abstainer (flat at the mean, 0) and an oracle that
    abstains in order of utility (1). Negative means worse than random."""
    conf = np.asarray(confidence, dtype=np.float64)
    util = np.asarray(utility, dtype=np.float64)
    rates = np.linspace(0, 1, 11)[:-1] if rates is None else np.asarray(rates, dtype=np.float64)

    if len(util) == 0:
        return math.nan

    def curve(order_by: np.ndarray) -> np.ndarray:
        order = np.argsort(order_by)
        return np.array([util[order[min(round(r * len(util)), len(util) - 1):]].mean() for r in rates])

    area = lambda y: float(np.trapezoid(y, rates))  # noqa: E731
    flat_auc = util.mean() * (rates[-1] - rates[0])
    oracle_auc = area(curve(util))
    if oracle_auc == flat_auc:
        return math.nan
    return (area(curve(conf)) - flat_auc) / (oracle_auc - flat_auc)
