"""Cross-backend agreement measures and the recommendation rule, on small hand-made
tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from powercontext.eval.scoring.compare import jaccard, pool_agreement, rbo, vector_recall
from powercontext.eval.scoring.recommend import Objective, choose, choose_joint, policy_from
from powercontext.eval.scoring.grid import family_of
from powercontext.memory.admission import AdmissionPolicy


def test_jaccard_and_rbo_hand_values():
    assert jaccard(["a", "b"], ["b", "c"]) == pytest.approx(1 / 3)
    assert jaccard([], []) == 1.0 and jaccard(["a"], []) == 0.0
    assert rbo(list("abc"), list("abc")) == pytest.approx(1.0)
    # depth 1: overlap 0; depth 2: 2/2 → (0.09·1) / (0.1 + 0.09)
    assert rbo(["a", "b"], ["b", "a"]) == pytest.approx(0.09 / 0.19)
    assert rbo([], []) == 1.0 and rbo(["a"], []) == 0.0
    assert rbo(["a", "b"], ["a", "b", "c", "d"]) < 1.0  # a shorter complete list is disagreement


def _cand(backend, q, channel, entries, matched=None, cosine=None):
    return [dict(backend=backend, mode="hybrid", channel=channel, query_id=q, corpus_entry=e, rank=i + 1,
                 matched=(matched or {}).get(e, 1), cosine=(cosine or {}).get(e, 0.5)) for i, e in enumerate(entries)]


def test_pool_agreement_separates_order_membership_and_signals():
    rows = (_cand("sqlite", "q1", "fts", ["a", "b", "c"]) + _cand("oceanbase", "q1", "fts", ["b", "a", "c"])
            + _cand("sqlite", "q2", "fts", ["a", "b", "x"]) + _cand("oceanbase", "q2", "fts", ["a", "b", "y"])
            + _cand("sqlite", "q3", "fts", ["a"], matched={"a": 2}) + _cand("oceanbase", "q3", "fts", ["a"]))
    pools = pool_agreement(pd.DataFrame(rows), pool=2).set_index("query_id")
    assert pools.loc["q1", "same_set"] and not pools.loc["q1", "same_order"]
    assert pools.loc["q2", "same_set"] and not pools.loc["q2", "same_full_set"] and pools.loc["q2", "truncated"]
    assert pools.loc["q1", "signals_equal"] and not pools.loc["q3", "signals_equal"]


def test_vector_recall_against_exact_search():
    cands = pd.DataFrame(_cand("oceanbase", "q1", "vector", ["a", "c", "x"]) + _cand("sqlite", "q1", "vector", ["a", "b", "c"]))
    cands["mode"] = "vector"
    exact = pd.DataFrame([dict(corpus="c", query_id="q1", exact=("a", "b", "c"), exact_cosine=(0.9, 0.8, 0.7))])
    r = vector_recall(cands, exact, ks=(1, 3)).set_index(["backend", "k"])
    assert r.loc[("oceanbase", 3), "recall"] == pytest.approx(2 / 3)
    assert r.loc[("sqlite", 3), "recall"] == 1.0 and r.loc[("oceanbase", 1), "recall"] == 1.0


def _sweep(rows):
    base = dict(corpus="all", split="dev", limit=8, set_f1=0.5)
    return pd.DataFrame([{**base, **r} for r in rows])


def test_choose_maximises_the_metric_under_the_bound_on_every_backend():
    rows = []
    for backend, fa_shift in (("sqlite", 0.0), ("oceanbase", 0.05)):
        for cov, ndcg, fa in ((0.0, 0.70, 0.90), (0.25, 0.60, 0.16), (0.3, 0.597, 0.10), (0.5, 0.40, 0.02)):
            rows.append(dict(backend=backend, mode="fts", fts_min_terms=2, fts_min_coverage=cov,
                             vector_min_cosine=math.nan, **{"ndcg@10": ndcg, "false_admission": fa + fa_shift}))
    sweep = _sweep(rows)
    rec = choose(sweep, "fts", Objective(bound=0.20, tolerance=0.005))
    # 0.25 breaks the bound on oceanbase (0.21); 0.3 is the best feasible
    assert rec.feasible and rec.policy.fts_min_coverage == 0.3 and rec.objective == pytest.approx(0.597)
    within = choose(sweep, "fts", Objective(bound=0.30, tolerance=0.005))
    assert within.policy.fts_min_coverage == 0.3  # 0.25 is within tolerance of best but admits more falsely
    strict = choose(sweep, "fts", Objective(bound=0.30, tolerance=0.0))
    assert strict.policy.fts_min_coverage == 0.25
    none = choose(sweep, "fts", Objective(bound=0.01))
    assert not none.feasible and none.policy.fts_min_coverage == 0.5


def test_an_exact_tie_between_families_goes_to_the_simplest():
    """In fts mode the vector rule is never read, so ``floors`` and ``centred`` (and the
    +cross-script families without a cross-script query) score identically: the label
    must name the simplest family, whatever the names' alphabetical order."""
    rows = []
    for family in ("centred+cross-script", "centred", "floors+cross-script+coverage", "floors"):
        for cov, ndcg, fa in ((0.2, 0.6, 0.2), (0.3, 0.5, 0.1)):
            rows.append(dict(backend="sqlite", mode="fts", family=family, fts_min_terms=2, fts_min_coverage=cov,
                             vector_min_cosine=math.nan, **{"ndcg@10": ndcg, "false_admission": fa}))
    rec = choose(_sweep(rows), "fts", Objective(bound=0.3))
    assert rec.policy.fts_min_coverage == 0.2
    assert family_of(rec.policy) == "floors"
    rows = [r for r in rows if r["family"] != "floors"]
    assert family_of(choose(_sweep(rows), "fts", Objective(bound=0.3)).policy) == "centred"


def test_choose_joint_combines_modes_and_keeps_the_bound_in_each():
    rows = []
    for cov, ndcg, fa in ((0.0, 0.7, 0.5), (0.3, 0.5, 0.1)):
        rows.append(dict(backend="sqlite", mode="fts", fts_min_terms=2, fts_min_coverage=cov, vector_min_cosine=math.nan,
                         **{"ndcg@10": ndcg, "false_admission": fa}))
    for cos, ndcg, fa in ((0.3, 0.8, 0.6), (0.5, 0.6, 0.15)):
        rows.append(dict(backend="sqlite", mode="vector", fts_min_terms=math.nan, fts_min_coverage=math.nan,
                         vector_min_cosine=cos, **{"ndcg@10": ndcg, "false_admission": fa}))
    for cov in (0.0, 0.3):
        for cos in (0.3, 0.5):
            fa = 0.1 if (cov, cos) == (0.3, 0.5) else 0.5
            rows.append(dict(backend="sqlite", mode="hybrid", fts_min_terms=2, fts_min_coverage=cov, vector_min_cosine=cos,
                             **{"ndcg@10": 0.65 + cos - cov, "false_admission": fa}))
    joint = choose_joint(_sweep(rows), ("fts", "vector", "hybrid"), Objective(bound=0.2))
    assert joint.feasible
    assert (joint.policy.fts_min_coverage, joint.policy.vector_min_cosine) == (0.3, 0.5)
    assert joint.objective == pytest.approx(np.mean([0.5, 0.6, 0.85]))


def test_policy_from_keeps_defaults_for_unused_thresholds():
    p = policy_from({"fts_min_terms": math.nan, "fts_min_coverage": math.nan, "vector_min_cosine": 0.45}, "vector")
    assert p == AdmissionPolicy.floors(vector_min_cosine=0.45)  # a row without a family is the RFC's floors
    assert policy_from({"fts_min_terms": 3.0, "fts_min_coverage": 0.4, "vector_min_cosine": 0.9}, "fts") == \
        AdmissionPolicy.floors(fts_min_terms=3, fts_min_coverage=0.4)
    # a family row: the family's base, with what the mode reads
    row = {"family": "centred+cross-script+coverage", "hybrid_fts_min_terms": 4.0, "hybrid_fts_min_coverage": 0.34,
           "vector_min_cosine": -1.0, "vector_min_centred": 0.31, "cross_script_min_terms": 2.0,
           "vector_uncovered": "refuse", "fts_min_terms": math.nan, "gate_min": math.nan}
    assert policy_from(row, "hybrid") == AdmissionPolicy()
