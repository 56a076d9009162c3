"""Embedding models side by side: the same corpora swept once per embedding profile
(one database per backend × profile, each profile's vectors cached per role), and
the figures put next to each other.

A model is part of what is measured, not a constant: each profile's run chooses its
own thresholds and its own family (``harness.analyse``), so the comparison is between
each model at its best policy — not between two models forced through one threshold,
which would only say which model that threshold was tuned for. Three views:

* ``side_by_side``: per backend × mode × policy (the profile's shipped default, its
  run's recommendation, the RFC's constants) nDCG@10, false admission and
  positive-empty per profile on the test split, and each family's
  leave-one-corpus-out figure;
* ``winners``: per profile and mode, the family with the best mean held-out nDCG@10
  among those whose held-out false admission stays within the bound on every corpus;
* ``paired``: per backend × mode, each pair of profiles' chosen policies on the SAME
  queries — the mean difference of nDCG@10 (answerable queries) and of false
  admission (unanswerable ones) with a paired bootstrap CI and a paired
  randomisation p-value.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from ..scoring import metrics as M
from ..scoring.peers import peers_side_by_side
from ..private import private_dir, write_private_text
from ..runfolder import write_csv

METRICS = ("ndcg@10", "false_admission", "empty_answer")
POLICIES = ("default", "recommended", "initial")
PAIRED_POLICIES = ("recommended", "default")


def _split(result: Any) -> str:
    return "all" if result.folds else "test"


def side_by_side(results: dict[str, Any]) -> pd.DataFrame:
    """One row per backend × mode × policy, a column per profile × metric (and the
    policy's label per profile)."""
    frames = []
    for name, result in results.items():
        split = _split(result)
        s = result.summary
        s = s[(s["split"] == split) & s["policy"].isin(POLICIES)]
        rows = s[["backend", "mode", "policy", "label", *METRICS]].assign(profile=name, split=split)
        loo = result.transfer
        if len(loo):
            held = (loo[loo["tuned"]].groupby(["backend", "mode", "family"], as_index=False)
                    .agg(**{"ndcg@10": ("ndcg@10", "mean"), "false_admission": ("false_admission", "max"),
                            "label": ("policy", lambda p: " | ".join(dict.fromkeys(p)))}))
            held = held.assign(policy="leave-one-out: " + held["family"], empty_answer=np.nan, profile=name,
                               split="held-out corpora")
            rows = pd.concat([rows, held.drop(columns=["family"])], ignore_index=True)
        frames.append(rows)
    long = pd.concat(frames, ignore_index=True)
    index = ["backend", "mode", "policy", "split"]
    wide = long.drop_duplicates([*index, "profile"]).set_index([*index, "profile"])[[*METRICS, "label"]]
    wide = wide.unstack("profile")
    wide.columns = [f"{column} {profile}" for column, profile in wide.columns]
    order = [f"{c} {p}" for c in (*METRICS, "label") for p in results if f"{c} {p}" in wide.columns]
    return wide[order].reset_index().sort_values(index, kind="stable").reset_index(drop=True)


def winners(results: dict[str, Any], bound: float | None = None) -> pd.DataFrame:
    """Per profile × backend × mode: the family whose leave-one-corpus-out policy has
    the best mean held-out nDCG@10 while its false admission stays ≤ ``bound`` (the
    run's objective bound) on every held-out corpus, with its per-corpus policies."""
    rows = []
    for name, result in results.items():
        loo = result.transfer
        if not len(loo):
            continue
        limit = result.objective.bound if bound is None else bound
        tuned = loo[loo["tuned"]]
        for (backend, mode), part in tuned.groupby(["backend", "mode"], sort=True):
            by = part.groupby("family").agg(ndcg=("ndcg@10", "mean"), worst_far=("false_admission", "max"),
                                            policies=("policy", lambda p: " | ".join(dict.fromkeys(p))))
            ok = by[by["worst_far"] <= limit + 1e-12]
            pool = ok if len(ok) else by
            best = pool["ndcg"].idxmax()
            rows.append(dict(profile=name, backend=backend, mode=mode, family=best,
                             mean_heldout_ndcg=float(pool.loc[best, "ndcg"]),
                             worst_heldout_false_admission=float(pool.loc[best, "worst_far"]),
                             within_bound=bool(len(ok)), policies=pool.loc[best, "policies"]))
    return pd.DataFrame(rows)


def paired(results: dict[str, Any], policies: Sequence[str] = PAIRED_POLICIES, seed: int = 0) -> pd.DataFrame:
    """Per pair of profiles (a, b) × backend × mode × policy name: mean of a − b on the
    same queries of the run's reporting split, with a 95 % paired bootstrap CI and a
    paired randomisation p-value; nDCG@10 over answerable queries, false admission
    over unanswerable ones."""
    rows = []
    for (a, ra), (b, rb) in itertools.combinations(results.items(), 2):
        split = _split(ra)
        pa, pb = ra.per_query, rb.per_query
        if split != "all":
            pa, pb = pa[pa["split"] == split], pb[pb["split"] == split]
        keys = ["backend", "mode", "policy", "query_id"]
        for metric, positive in (("ndcg@10", True), ("false_admission", False)):
            left = pa[(pa["positive"] == positive) & pa["policy"].isin(policies)][[*keys, metric, "label"]]
            right = pb[(pb["positive"] == positive) & pb["policy"].isin(policies)][[*keys, metric, "label"]]
            both = left.merge(right, on=keys, suffixes=(" a", " b"))
            for (backend, mode, policy), g in both.groupby(["backend", "mode", "policy"], sort=True):
                x, y = g[f"{metric} a"].to_numpy(float), g[f"{metric} b"].to_numpy(float)
                lo, hi = M.bootstrap_ci(x - y, seed=seed) if len(x) else (np.nan, np.nan)
                rows.append(dict(a=a, b=b, backend=backend, mode=mode, policy=policy, metric=metric, queries=len(x),
                                 mean_a=float(x.mean()) if len(x) else np.nan,
                                 mean_b=float(y.mean()) if len(y) else np.nan,
                                 diff=float((x - y).mean()) if len(x) else np.nan, diff_lo=lo, diff_hi=hi,
                                 p_value=M.paired_randomization_test(x, y, seed=seed) if len(x) else np.nan,
                                 label_a=g["label a"].iloc[0], label_b=g["label b"].iloc[0]))
    return pd.DataFrame(rows)


def _md(table: pd.DataFrame, columns: Sequence[str]) -> str:
    shown = table[list(columns)].copy()
    for col in shown.columns:
        if shown[col].dtype.kind == "f":
            shown[col] = shown[col].map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
    head = "| " + " | ".join(columns) + " |"
    rule = "|" + "---|" * len(columns)
    body = ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in shown.to_dict("records")]
    return "\n".join([head, rule, *body])


def format_table(table: pd.DataFrame, profiles: Sequence[str], mode: str | None = "hybrid") -> str:
    """The console / markdown view: nDCG@10 and false admission per profile."""
    shown = table if mode is None else table[table["mode"] == mode]
    cols = ["backend", "mode", "policy", *[f"{m} {p}" for m in ("ndcg@10", "false_admission") for p in profiles]]
    return _md(shown, [c for c in cols if c in shown.columns])


def write(results: dict[str, Any], out: Path, seed: int = 0) -> dict[str, pd.DataFrame]:
    """``embeddings.csv`` (side by side), ``embedding_winners.csv``,
    ``embedding_paired.csv`` and ``embeddings.md`` in ``out``; returns the three tables."""
    out = private_dir(out)
    profiles = list(results)
    tables = {"side_by_side": side_by_side(results), "winners": winners(results), "paired": paired(results, seed=seed)}
    write_csv(tables["side_by_side"], out / "embeddings.csv")
    write_csv(tables["winners"], out / "embedding_winners.csv")
    write_csv(tables["paired"], out / "embedding_paired.csv")
    peers = peers_side_by_side(results)
    if len(peers):
        write_csv(peers, out / "embedding_peers.csv")
    described = "\n".join(f"- `{name}`: {r.collected.embedding.get('model', '')} profile "
                          f"`{r.collected.profile_id}`, run folder `{name}/` (report `{name}/report.html`)"
                          for name, r in results.items())
    hybrid = tables["paired"][tables["paired"]["mode"] == "hybrid"] if len(tables["paired"]) else tables["paired"]
    text = [f"# Embedding models: {' vs '.join(profiles)}", "", described, "",
            "Each profile's run tunes its own thresholds and family; figures are on the test split unless a run "
            "chose by k folds.", "", "## Hybrid, side by side", "", format_table(tables["side_by_side"], profiles), "",
            "## The family that wins leave-one-corpus-out (per profile)", "",
            _md(tables["winners"], ["profile", "backend", "mode", "family", "mean_heldout_ndcg",
                                    "worst_heldout_false_admission", "within_bound"]) if len(tables["winners"])
            else "(needs two or more corpora)", "",
            "## Paired test on the same queries (a − b), hybrid", "",
            _md(hybrid, ["a", "b", "backend", "policy", "metric", "queries", "mean_a", "mean_b", "diff", "diff_lo",
                         "diff_hi", "p_value"]) if len(hybrid) else "(no hybrid mode in these runs)", "",
            "## Peers' defaults under each profile (corpora pooled)", "",
            "Other libraries' default cutoffs replayed at their own top-k (`powercontext.eval.scoring.references`): a cosine "
            "cutoff chosen for one model admits a different set under another.", "",
            _md(peers, list(peers.columns)) if len(peers) else "(no vector or hybrid mode in these runs)", ""]
    write_private_text(out / "embeddings.md", "\n".join(text))
    return tables
