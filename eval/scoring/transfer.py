"""Leave-one-corpus-out per admission family: does a family's tuned policy hold on a
corpus it never saw?

A library default meets corpora it was not tuned on, so a family is judged by how its
tuned policy transfers, not by its in-corpus score. For each family, mode and corpus c
of a run with at least two corpora:

1. the family's policy is chosen on ALL queries of the other corpora, by the run's
   objective (best nDCG@10 — pooled over the tuning corpora, averaged over the
   backends — with the false-admission rate ≤ the bound on EVERY tuning corpus and
   backend: a rule that must hold on each corpus it saw is likelier to hold on one it
   did not);
2. that policy is replayed on every query of c;
3. a paired bootstrap CI (per-query nDCG@10 of c's answerable queries, seeded)
   compares it with the family that did best on c.

The library default and the RFC's initial constants are reported beside them, not
tuned. Everything is read from the run's sweep table and replays: no database.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.memory.admission import INITIAL_POLICY, AdmissionPolicy

from .grid import policy_from, policy_label
from .recommend import Objective, _keys, _pick

__all__ = ["BOOTSTRAP", "leave_one_out", "transfer_table"]

BOOTSTRAP = 2000


def _tune(sweep: pd.DataFrame, mode: str, family: str, corpora: Sequence[str], objective: Objective):
    """The family's policy chosen on ``corpora`` (all their queries) at the bound."""
    rows = sweep[(sweep["mode"] == mode) & (sweep["family"] == family) & (sweep["split"] == "all")
                 & (sweep["limit"] == objective.limit) & sweep["corpus"].isin(corpora)]
    if rows.empty:
        return None
    keys = _keys(rows)
    metric, constraint, secondary = objective.metric, objective.constraint, objective.secondary
    rows = rows.assign(_w=rows["n_positive"].astype(float), _wm=rows[metric] * rows["n_positive"],
                       _ws=rows[secondary].fillna(0.0) * rows["n_all"], _wa=rows["n_all"].astype(float))
    per_backend = rows.groupby([*keys, "backend"], dropna=False, sort=True).agg(
        wm=("_wm", "sum"), w=("_w", "sum"), ws=("_ws", "sum"), wa=("_wa", "sum"), far=(constraint, "max"))
    per_backend["objective"] = per_backend["wm"] / per_backend["w"]
    per_backend["secondary"] = per_backend["ws"] / per_backend["wa"]
    table = per_backend.reset_index().groupby(keys, dropna=False, sort=True).agg(
        objective=("objective", "mean"), constraint=("far", "max"), secondary=("secondary", "mean")).reset_index()
    best, feasible, _ = _pick(table, objective)
    return policy_from(best, mode), float(best["objective"]), float(best["constraint"]), feasible


def _paired_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    if not len(a):
        return math.nan, math.nan
    idx = rng.integers(0, len(a), size=(BOOTSTRAP, len(a)))
    d = (a[idx] - b[idx]).mean(1)
    return float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))


def leave_one_out(sweep: pd.DataFrame, replays: Mapping, queries: pd.DataFrame, objective: Objective,
                  modes: Sequence[str] | None = None, seed: int = 0,
                  default: AdmissionPolicy | None = None) -> pd.DataFrame:
    """One row per mode × held-out corpus × backend × family (plus the untuned
    ``default`` — the run's profile's shipped one, ``AdmissionPolicy()`` if None — and
    ``initial``): the policy tuned on the other corpora, its tuning figures, its
    held-out nDCG@10 / false admission, and the paired bootstrap CI of its nDCG@10
    minus the best family's on that corpus. Empty with fewer than two corpora."""
    default = default if default is not None else AdmissionPolicy()
    corpora = sorted(queries["corpus"].unique())
    if len(corpora) < 2 or "family" not in sweep.columns:
        return pd.DataFrame()
    modes = list(modes or sorted({m for _, m in replays}))
    families = list(dict.fromkeys(sweep["family"]))
    positive = queries["positive"].to_numpy(bool)
    rows, per_query = [], {}
    for mode in modes:
        for held in corpora:
            others = [c for c in corpora if c != held]
            in_held = (queries["corpus"] == held).to_numpy()
            chosen: dict[str, tuple] = {}
            for family in families:
                tuned = _tune(sweep, mode, family, others, objective)
                if tuned is not None:
                    chosen[family] = tuned
            chosen["default (not tuned)"] = (default, math.nan, math.nan, True)
            chosen["initial (not tuned)"] = (INITIAL_POLICY, math.nan, math.nan, True)
            for backend in sorted({b for b, m in replays if m == mode}):
                replay = replays[(backend, mode)]
                for family, (policy, t_obj, t_con, feasible) in chosen.items():
                    values = replay.evaluate([policy], [objective.limit])
                    nd = values[objective.metric][0, 0]
                    fa = values[objective.constraint][0, 0]
                    pos, neg = in_held & positive, in_held & ~positive
                    per_query[(mode, held, backend, family)] = nd[pos]
                    rows.append(dict(
                        mode=mode, corpus=held, backend=backend, family=family, policy=policy_label(policy, mode),
                        tuned_on="+".join(others), tuned=not family.endswith("(not tuned)"), feasible=feasible,
                        tuned_ndcg=t_obj, tuned_false_admission=t_con,
                        **{objective.metric: float(nd[pos].mean()) if pos.any() else math.nan,
                           objective.constraint: float(fa[neg].mean()) if neg.any() else math.nan},
                        positive=int(pos.sum()), empty=int(neg.sum())))
    table = pd.DataFrame(rows)
    rng = np.random.default_rng(seed)
    lo, hi, best_of = [], [], []
    tuned = table[table["tuned"]]
    best = tuned.loc[tuned.groupby(["mode", "corpus", "backend"])[objective.metric].idxmax()].set_index(
        ["mode", "corpus", "backend"])["family"]
    for r in table.itertuples():
        b = best.get((r.mode, r.corpus, r.backend))
        a_q, b_q = per_query[(r.mode, r.corpus, r.backend, r.family)], per_query[(r.mode, r.corpus, r.backend, b)]
        ci = _paired_ci(a_q, b_q, rng)
        lo.append(ci[0])
        hi.append(ci[1])
        best_of.append(b)
    return table.assign(vs_best=best_of, diff_lo=lo, diff_hi=hi)


def transfer_table(loo: pd.DataFrame, metric: str = "ndcg@10", constraint: str = "false_admission",
                   mode: str = "hybrid") -> pd.DataFrame:
    """The report's table: one row per family (and backend), per held-out corpus
    ``nDCG / FA [CI vs best]``, and the mean held-out nDCG; best mean first."""
    if loo.empty:
        return loo
    part = loo[loo["mode"] == mode]
    if part.empty:
        return part
    out = part.assign(cell=[f"{n:.3f} / {f:.3f} [{lo:+.3f}, {hi:+.3f}]" for n, f, lo, hi in
                            zip(part[metric], part[constraint], part["diff_lo"], part["diff_hi"])])
    wide = out.pivot_table(index=["backend", "family"], columns="corpus", values="cell", aggfunc="first")
    wide["mean nDCG@10"] = part.groupby(["backend", "family"])[metric].mean()
    wide = wide.reset_index().sort_values(["backend", "mean nDCG@10"], ascending=[True, False], kind="stable")
    wide.columns.name = None
    return wide.reset_index(drop=True)
