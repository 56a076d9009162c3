"""k-fold cross-validation of the recommendation, by query.

On a small corpus one dev/test split is noisy: half of 120 queries holds a dozen
negatives, and which dozen decides the false-admission rate. Cross-validation uses
every query for choosing AND for reporting, never both at once:

1. queries are dealt into k stratified folds (``splits.assign``, seeded, per corpus);
2. for each fold f the recommender (``recommend.choose`` / ``choose_joint``, exactly
   the rule and objective of the run) picks a policy on the other k − 1 folds;
3. that policy's metrics are read on fold f, which it never saw.

The held-out estimate is reported as the mean over folds with its spread (standard
deviation of the k fold means), next to the pooled value (every query scored once,
by the fold that held it out). The policy a user should take is the one the same
rule picks on ALL queries; the cross-validated figures say what to expect of it on
queries it was not tuned on, and how many different policies the folds chose says
how stable the choice is.

Nothing here knows the policy parameters: folds are just more query groups of the
same sweep (``analysis.sweep_table``), and a chosen point is looked up by the
parameters ``recommend`` reports. A new admission family that extends the sweep and
the recommender is cross-validated without changes here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

import numpy as np
import pandas as pd

from .recommend import Objective, Recommendation, _read_by, choose, choose_joint, point_rows
from ..corpora.splits import DEFAULT_SEED, fold_table

__all__ = ["SMALL_CORPUS", "DEFAULT_FOLDS", "crossvalidate", "fold_count", "fold_groups"]

#: Below this many queries a run recommends by k-fold cross-validation by default.
SMALL_CORPUS = 200
DEFAULT_FOLDS = 5


def fold_count(folds: int | str | None, queries: int) -> int:
    """k for a run: ``"auto"``/None → 5 below ``SMALL_CORPUS`` queries (as many as there
    are queries when fewer than 5), else 0 (dev/test); 0 forces dev/test; k ≥ 2 forces k folds."""
    if folds is None or folds == "auto":
        if queries >= SMALL_CORPUS or queries < 2:
            return 0
        return min(DEFAULT_FOLDS, queries)
    k = int(folds)
    if k == 1 or k < 0:
        raise ValueError(f"folds must be 0 (dev/test split), 'auto' or at least 2, got {folds!r}")
    if k > queries:
        raise ValueError(f"{k} folds need at least {k} queries, the run has {queries}")
    return k


def fold_groups(queries: pd.DataFrame, k: int, seed: int = DEFAULT_SEED) -> tuple[np.ndarray, list[tuple[str, str]], np.ndarray]:
    """Membership columns for the sweep: per fold, its training queries and its
    held-out queries (corpus label "all"). Returns (matrix [Q, 2k], labels, fold of each query)."""
    fold = fold_table(list(queries["query_id"]), list(queries["positive"]), list(queries["tags"]),
                      list(queries["corpus"]), k, seed)
    columns, labels = [], []
    for f in range(k):
        columns += [(fold != f).astype(np.float64), (fold == f).astype(np.float64)]
        labels += [("all", train_label(f)), ("all", heldout_label(f))]
    return np.stack(columns, 1), labels, fold


def train_label(f: int) -> str:
    return f"fold{f + 1}-train"


def heldout_label(f: int) -> str:
    return f"fold{f + 1}-heldout"


def crossvalidate(table: pd.DataFrame, modes: Sequence[str], objective: Objective, k: int) -> pd.DataFrame:
    """Per fold × mode (and ``joint``) × backend: the policy chosen on the training
    folds and its metrics on the held-out fold. ``table`` is a sweep over the fold
    groups of ``fold_groups`` (at least at ``objective.limit``)."""
    rows = []
    metrics = [objective.metric, objective.constraint, objective.secondary]
    for f in range(k):
        train = replace(objective, split=train_label(f))
        # the rows each choice and look-up reads, filtered once per fold, not again by each
        trained = _read_by(table, train)
        heldout = _read_by(table, replace(objective, split=heldout_label(f)))
        recs: dict[str, Recommendation] = {m: choose(trained, m, train) for m in modes}
        recs["joint"] = choose_joint(trained, modes, train)
        for name, rec in recs.items():
            for mode in (modes if name == "joint" else [name]):
                held = point_rows(heldout, rec.policy, mode, objective.limit, split=heldout_label(f))
                for r in held.to_dict("records"):
                    rows.append(dict(fold=f + 1, recommendation=name, mode=mode, backend=r["backend"], label=rec.label,
                                     fts_min_terms=rec.policy.fts_min_terms,
                                     fts_min_coverage=rec.policy.fts_min_coverage,
                                     vector_min_cosine=rec.policy.vector_min_cosine, feasible=rec.feasible,
                                     train_objective=rec.objective, train_constraint=rec.constraint,
                                     n_positive=int(r["n_positive"]), n_empty=int(r["n_empty"]), n_all=int(r["n_all"]),
                                     **{m: float(r[m]) for m in metrics}))
    return pd.DataFrame(rows)


def summarise(folds: pd.DataFrame, objective: Objective) -> pd.DataFrame:
    """Per recommendation × mode × backend: held-out mean over folds, its spread (sd of
    the fold means), the pooled held-out value, and how many distinct policies the
    folds chose."""
    from . import metrics as M

    rows = []
    for (rec, mode, backend), g in folds.groupby(["recommendation", "mode", "backend"], sort=False):
        row = dict(recommendation=rec, mode=mode, backend=backend, folds=len(g),
                   policies_chosen=int(g["label"].nunique()), feasible_folds=int(g["feasible"].sum()))
        for metric in (objective.metric, objective.constraint, objective.secondary):
            values = g[metric].to_numpy(float)
            weights = g[f"n_{M.BY_NAME[metric].population}"].to_numpy(float)
            ok = ~np.isnan(values) & (weights > 0)
            row[f"{metric}_mean"] = float(values[ok].mean()) if ok.any() else math.nan
            row[f"{metric}_sd"] = float(values[ok].std(ddof=1)) if ok.sum() > 1 else math.nan
            row[f"{metric}_pooled"] = float((values[ok] * weights[ok]).sum() / weights[ok].sum()) if ok.any() else math.nan
        rows.append(row)
    return pd.DataFrame(rows)
