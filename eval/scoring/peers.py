"""Where peers' defaults land: every reference policy (``references.REFERENCES``)
replayed on a run's cached candidates, beside this project's default and the run's
recommendation, per backend × mode × corpus × split.

The replay is the one every sweep point goes through (``Replay.evaluate``), so a
peer's figures are what an online search with its mapped policy and top-k returns on
this run's databases and embedding profile. ``SweepResult.peers`` holds the frame;
the report's "Peers' defaults" section and the ThresholdTuner's named points read it.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from powercontext.memory.admission import AdmissionPolicy

from . import metrics as M
from .grid import point_values, policy_label
from .references import REFERENCES, Reference

__all__ = ["CI_METRICS", "peers_frame", "peers_side_by_side", "peers_table"]

#: The rates given a 95 % bootstrap CI (the frontier's two axes).
CI_METRICS = ("ndcg@10", "false_admission")


def _groups(queries: pd.DataFrame) -> list[tuple[str, str, np.ndarray]]:
    """(corpus, split, member mask) for every corpus and all of them pooled, × all/dev/test."""
    out = []
    for corpus in ["all", *sorted(queries["corpus"].unique())]:
        in_corpus = np.ones(len(queries), bool) if corpus == "all" else (queries["corpus"] == corpus).to_numpy()
        for split in ("all", "dev", "test"):
            in_split = np.ones(len(queries), bool) if split == "all" else (queries["split"] == split).to_numpy()
            out.append((corpus, split, in_corpus & in_split))
    return out


def _entries(mode: str, run_limit: int, references: tuple[Reference, ...],
             named: Mapping[str, AdmissionPolicy]) -> list[tuple[str, str, AdmissionPolicy, int]]:
    """(name, kind, policy, limit) of what is replayed in ``mode``: each reference that
    maps onto it, then this project's named policies at the run's limit."""
    out = [(r.name, "peer", r.policy, r.limit_in(run_limit)) for r in references if mode in r.modes]
    out += [(name, "this project", policy, run_limit) for name, policy in named.items()]
    return out


def peers_frame(replays: Mapping[tuple[str, str], object], queries: pd.DataFrame, max_limit: int, run_limit: int,
                named: Mapping[str, Mapping[str, AdmissionPolicy]] | None = None,
                references: tuple[Reference, ...] = REFERENCES) -> pd.DataFrame:
    """One row per backend × mode × reference × corpus (each, and ``all`` pooled) ×
    split: every metric's mean over its population, 95 % bootstrap CIs of nDCG@10 and
    false admission, the query counts, and the point's parameters (``point_values``:
    where the reference sits on a threshold axis).

    ``replays``: the run's (backend, mode) replays, queries in ``queries`` order;
    ``max_limit``: the largest limit the candidates were retrieved for (a reference's
    top-k above it is replayed at it: ``limit_used``; nDCG@10 and the admission rates do
    not change while it stays ≥ 10); ``run_limit``: the run's objective limit (a
    reference without its own, and ``named``); ``named``: {mode: {name: policy}} of this
    project's policies to show beside the peers."""
    named = named or {}
    rows = []
    groups = _groups(queries)
    positive = queries["positive"].to_numpy(bool)
    for (backend, mode), replay in replays.items():
        entries = _entries(mode, run_limit, references, named.get(mode, {}))
        values = []
        for name, kind, policy, limit in entries:
            used = min(limit, max_limit)
            v = replay.evaluate([policy], [used])
            values.append({m: v[m][0, 0] for m in M.METRIC_NAMES})
        for corpus, split, member in groups:
            pos, neg = member & positive, member & ~positive
            bounds = {}
            for metric in CI_METRICS:
                mask = pos if M.BY_NAME[metric].population == "positive" else neg
                bounds[metric] = M.bootstrap_ci_rows(np.stack([v[metric][mask] for v in values]))
            for i, ((name, kind, policy, limit), v) in enumerate(zip(entries, values)):
                label = policy_label(policy, mode).replace("cos≥-1", "cos: no cutoff")
                row = dict(backend=backend, mode=mode, reference=name, kind=kind, label=label,
                           corpus=corpus, split=split, positive=int(pos.sum()), empty=int(neg.sum()),
                           library_limit=limit, limit_used=min(limit, max_limit))
                for metric in M.METRIC_NAMES:
                    population = M.BY_NAME[metric].population
                    mask = pos if population == "positive" else neg if population == "empty" else member
                    row[metric] = float(v[metric][mask].mean()) if mask.any() else float("nan")
                for metric in CI_METRICS:
                    row[f"{metric}_lo"], row[f"{metric}_hi"] = float(bounds[metric][0][i]), float(bounds[metric][1][i])
                row.update({k: val for k, val in point_values(policy, mode, limit).items() if k != "limit"})
                rows.append(row)
    return pd.DataFrame(rows)


def peers_table(peers: pd.DataFrame, split: str, backend: str | None = None, mode: str | None = None) -> pd.DataFrame:
    """The peers as the report prints them: one row per backend × mode × reference, one
    column per corpus (and ``all`` pooled) with ``nDCG@10 / false admission``, plus the
    pooled empty-answer rate and both pooled CIs, on ``split``."""
    if peers is None or peers.empty:
        return pd.DataFrame()
    p = peers[peers["split"] == split]
    if backend is not None:
        p = p[p["backend"] == backend]
    if mode is not None:
        p = p[p["mode"] == mode]
    keys = ["backend", "mode", "reference"]
    p = p.assign(cell=[f"{a:.3f} / {b:.3f}" for a, b in zip(p["ndcg@10"], p["false_admission"])])
    wide = p.pivot_table(index=keys, columns="corpus", values="cell", aggfunc="first", sort=False)
    corpora = [c for c in wide.columns if c != "all"]
    wide = wide[[*corpora, "all"]].rename(columns={"all": "pooled"})
    pooled = p[p["corpus"] == "all"].set_index(keys)

    def ci(metric: str) -> list[str]:
        return [f"[{a:.3f}, {b:.3f}]" for a, b in zip(pooled[f"{metric}_lo"], pooled[f"{metric}_hi"])]

    extra = pd.DataFrame({
        "k": [f"{k}" if k == used else f"{k} (replayed at {used})"
              for k, used in zip(pooled["library_limit"].astype(int), pooled["limit_used"].astype(int))],
        "policy": pooled["label"], "nDCG@10 95% CI": ci("ndcg@10"), "FA 95% CI": ci("false_admission"),
        "empty answer": pooled["empty_answer"],
    }, index=pooled.index)
    out = extra.join(wide).reset_index()
    return out[["backend", "mode", "reference", "k", "policy", *[c for c in (*corpora, "pooled") if c in out.columns],
                "nDCG@10 95% CI", "FA 95% CI", "empty answer"]]


def peers_side_by_side(results: Mapping[str, object]) -> pd.DataFrame:
    """Peers under each embedding profile of a comparison (``harness.compare_embeddings``):
    one row per backend × mode × reference, ``nDCG@10 / false admission`` pooled over the
    corpora per profile (each run's test split, or all queries for a cross-validated
    one). A cosine cutoff lands differently under each model: this is where it shows."""
    frames = []
    for profile, result in results.items():
        peers = getattr(result, "peers", None)
        if peers is None or peers.empty:
            continue
        split = "all" if getattr(result, "folds", 0) else "test"
        p = peers[(peers["corpus"] == "all") & (peers["split"] == split)]
        frames.append(p.assign(profile=profile,
                               cell=[f"{a:.3f} / {b:.3f}" for a, b in zip(p["ndcg@10"], p["false_admission"])]))
    if not frames:
        return pd.DataFrame()
    long = pd.concat(frames, ignore_index=True)
    keys = ["backend", "mode", "reference"]
    wide = long.pivot_table(index=keys, columns="profile", values="cell", aggfunc="first", sort=False)
    wide = wide[[p for p in results if p in wide.columns]]
    wide.columns = [f"nDCG / FA {p}" for p in wide.columns]
    k = long.drop_duplicates(keys).set_index(keys)["library_limit"].astype(int).rename("k")
    return wide.join(k).reset_index()[[*keys, "k", *wide.columns]]
