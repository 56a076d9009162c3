"""Cross-backend comparison: the same corpus, queries and policies on SQLite and
OceanBase, compared query by query rather than averaged.

* ``admitted_agreement``: per query, whether a policy admits the same candidates on
  both databases from the pool a search retrieves (before fusion cuts to the limit).
* ``hit_agreement``: per query and named policy, the Jaccard of the two hit sets at the
  limit, rank-biased overlap (RBO, p = 0.9, normalised) of the two rankings, and whether they are equal.
* ``metric_deltas``: per mode and policy, mean metric on each backend, the delta
  (OceanBase − SQLite) and a paired randomization p-value.
* ``pool_agreement``: per query and channel, how the retrieved candidate lists differ
  (same set? same order? do shared candidates carry identical signals?) — the part
  that explains the differences: admission is a pure function of each candidate's
  signals, so two backends can only disagree through which candidates their engines
  return within the pool and in which order.
* ``vector_recall``: recall@k of each backend's vector channel against exact cosine
  search over the same cached vectors (HNSW on OceanBase is approximate; sqlite-vec's
  vec0 KNN is exhaustive).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy

from .metrics import METRICS, paired_randomization_test
from ..running.retrieval import QueryChannels, query_channels

__all__ = ["admitted_agreement", "explain", "hit_agreement", "jaccard", "metric_deltas", "pool_agreement", "rbo",
           "vector_recall"]


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """|A ∩ B| / |A ∪ B|; two empty sets agree completely (1.0)."""
    sa, sb = set(a), set(b)
    return 1.0 if not sa and not sb else len(sa & sb) / len(sa | sb)


def rbo(a: Sequence[str], b: Sequence[str], p: float = 0.9) -> float:
    """Rank-biased overlap (Webber, Moffat & Zobel 2010) of two COMPLETE rankings:
    Σ_d (1−p)·p^(d−1)·|a[:d] ∩ b[:d]|/d over depths 1..max(len), normalised by its
    maximum so identical rankings score 1. A hit list is complete (nothing follows
    it), so a missing position counts as disagreement rather than being extrapolated.
    Two empty rankings score 1, exactly one empty scores 0."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    depth = max(len(a), len(b))
    total = norm = 0.0
    for d in range(1, depth + 1):
        weight = (1 - p) * p ** (d - 1)
        total += weight * len(set(a[:d]) & set(b[:d])) / d
        norm += weight
    return float(total / norm)


def admitted_agreement(candidates: pd.DataFrame, policy: AdmissionPolicy, limit: int = 8, a: str = "sqlite",
                       b: str = "oceanbase", queries: Sequence[tuple[str, str]] = (),
                       groups: Mapping[tuple[str, str, str], QueryChannels] | None = None) -> pd.DataFrame:
    """Per (mode, query): the corpus entries ``policy`` admits on each database from the
    pool a search with ``limit`` retrieves (``admission.admit`` over
    ``admission.within_pool``), before RRF and the limit — the sets the two databases
    must agree on (their engines' orders may still rank them differently). ``queries``:
    (mode, query id) pairs to report even where neither database retrieved anything.
    ``groups``: ``query_channels(candidates)`` when the caller has it already."""
    pool = policy.pool_size(limit)
    if groups is None:
        groups = query_channels(candidates[candidates["backend"].isin((a, b))])
    admitted: dict[tuple, frozenset] = {}
    for (backend, mode, query), (rows, rebuilt) in groups.items():
        if backend not in (a, b):
            continue
        channels = {name: admission.within_pool(c, pool) for name, c in rebuilt.items()}
        corpus_of = {(r["memory_artifact_id"], r["entry_id"]): r["corpus_entry"] for r in rows}
        admitted[(backend, mode, query)] = frozenset(
            corpus_of[(c.memory_ref.artifact_id, c.entry_id)]
            for chosen in admission.admit(channels, policy).values() for c in chosen)
    out = []
    for mode, query in sorted({(m, q) for _, m, q in admitted} | set(queries)):
        sa, sb = admitted.get((a, mode, query), frozenset()), admitted.get((b, mode, query), frozenset())
        out.append(dict(mode=mode, query_id=query, same=sa == sb, n_a=len(sa), n_b=len(sb)))
    return pd.DataFrame(out, columns=["mode", "query_id", "same", "n_a", "n_b"])


def hit_agreement(per_query: pd.DataFrame, a: str = "sqlite", b: str = "oceanbase") -> pd.DataFrame:
    """Per (mode, policy, query): Jaccard, RBO and equality of the two backends' hits."""
    keys = ["mode", "policy", "corpus", "query_id"]

    def side(backend: str) -> dict[tuple, tuple]:  # key → (ranking, positive); dicts, not .at per key
        d = per_query[per_query["backend"] == backend]
        return dict(zip(zip(*(d[k].tolist() for k in keys)), zip(d["ranking"].tolist(), d["positive"].tolist())))

    left, right = side(a), side(b)
    rows = []
    for key, (ranking_a, positive) in left.items():
        if key not in right:
            continue
        ha, hb = list(ranking_a), list(right[key][0])
        rows.append(dict(zip(keys, key), jaccard=jaccard(ha, hb), rbo=rbo(ha, hb), identical=ha == hb,
                         same_set=set(ha) == set(hb), positive=bool(positive),
                         hits_a=len(ha), hits_b=len(hb)))
    return pd.DataFrame(rows)


def metric_deltas(per_query: pd.DataFrame, a: str = "sqlite", b: str = "oceanbase",
                  metrics: Sequence[str] = ("ndcg@10", "mrr@10", "recall@10", "set_f1", "false_admission", "empty_answer")) -> pd.DataFrame:
    """Per (mode, policy, metric, split): the two means, the delta b − a and a paired
    randomization p-value over the metric's population."""
    by_name = {m.name: m for m in METRICS}
    rows = []
    for (mode, policy), group in per_query.groupby(["mode", "policy"], sort=False):
        pa = group[group["backend"] == a].set_index("query_id")
        pb = group[group["backend"] == b].set_index("query_id")
        common = pa.index.intersection(pb.index)
        for split in ("all", "dev", "test"):
            ids = common if split == "all" else common[pa.loc[common, "split"].to_numpy() == split]
            for name in metrics:
                pop = by_name[name].population
                mask = np.ones(len(ids), bool) if pop == "all" else (pa.loc[ids, "positive"].to_numpy() == (pop == "positive"))
                ids_m = ids[mask]
                va, vb = pa.loc[ids_m, name].to_numpy(float), pb.loc[ids_m, name].to_numpy(float)
                rows.append(dict(mode=mode, policy=policy, split=split, metric=name, n=len(ids_m),
                                 **{a: va.mean() if len(va) else np.nan, b: vb.mean() if len(vb) else np.nan},
                                 delta=(vb.mean() - va.mean()) if len(va) else np.nan,
                                 p_value=paired_randomization_test(vb, va) if len(va) else np.nan))
    return pd.DataFrame(rows)


def pool_agreement(candidates: pd.DataFrame, pool: int, a: str = "sqlite", b: str = "oceanbase") -> pd.DataFrame:
    """Per (mode, channel, query): how the two candidate lists (the ``pool`` a search at
    the default limit retrieves: ``admission.within_pool``) relate."""
    rows = []
    # (backend, mode, channel, query) -> [(entry, signal, place)] by rank; place: the
    # full-text pool order (pool_rank), else the position
    lists: dict[tuple, list[tuple[str, float, float]]] = {}
    ordered = candidates[candidates["backend"].isin((a, b))].sort_values("rank", kind="stable")
    signal = np.where(ordered["channel"] == "fts", ordered["matched"].astype(float),
                      pd.to_numeric(ordered["cosine"], errors="coerce").astype(float))
    place = (pd.to_numeric(ordered["pool_rank"], errors="coerce").to_numpy(float) if "pool_rank" in ordered.columns
             else np.full(len(ordered), np.nan))
    for key, entry, value, at in zip(zip(ordered["backend"], ordered["mode"], ordered["channel"], ordered["query_id"]),
                                     ordered["corpus_entry"], signal, place):
        lists.setdefault(key, []).append((entry, value, at))
    keys = {(m, c, q) for (_, m, c, q) in lists}

    def in_pool(rows: list[tuple[str, float, float]]) -> list[str]:
        return [e for i, (e, _, at) in enumerate(rows)
                if admission.in_pool(i, None if np.isnan(at) else int(at), pool)]

    for mode, channel, query in sorted(keys):
        ga, gb = lists.get((a, mode, channel, query), []), lists.get((b, mode, channel, query), [])
        la, lb = in_pool(ga), in_pool(gb)
        sig_a, sig_b = {e: v for e, v, _ in ga[::-1]}, {e: v for e, v, _ in gb[::-1]}  # an entry's first (best-ranked) row
        shared = sig_a.keys() & sig_b.keys()
        va = np.array([sig_a[e] for e in shared], dtype=float)
        vb = np.array([sig_b[e] for e in shared], dtype=float)
        signal_equal = bool(np.array_equal(va, vb)) if channel == "fts" else bool(np.allclose(va, vb, atol=1e-4))
        rows.append(dict(mode=mode, channel=channel, query_id=query, n_a=len(la), n_b=len(lb),
                         same_set=set(la) == set(lb), same_order=la == lb, jaccard=jaccard(la, lb),
                         truncated=max(len(ga), len(gb)) > pool, same_full_set=sig_a.keys() == sig_b.keys(),
                         signals_equal=signal_equal, shared=len(shared)))
    return pd.DataFrame(rows)


def vector_recall(candidates: pd.DataFrame, exact: pd.DataFrame, ks: Sequence[int] = (8, 32)) -> pd.DataFrame:
    """Per backend and k: mean recall@k of the vector channel (mode "vector") against
    exact cosine top-k over the same vectors, and the share of queries with recall 1."""
    if exact.empty:
        return pd.DataFrame(columns=["backend", "k", "recall", "perfect", "queries"])
    truth = {q: list(e) for q, e in zip(exact["query_id"], exact["exact"])}
    vec = candidates[(candidates["mode"] == "vector") & (candidates["channel"] == "vector")]
    rows = []
    for backend, group in vec.groupby("backend"):
        lists = {q: list(g.sort_values("rank")["corpus_entry"]) for q, g in group.groupby("query_id")}
        for k in ks:
            recalls = []
            for q, ex in truth.items():
                top = ex[:k]
                if top:
                    recalls.append(len(set(lists.get(q, [])[:k]) & set(top)) / len(top))
            r = np.asarray(recalls)
            rows.append(dict(backend=backend, k=k, recall=float(r.mean()) if len(r) else np.nan,
                             perfect=float((r == 1).mean()) if len(r) else np.nan, queries=len(r)))
    return pd.DataFrame(rows)


def explain(pools: pd.DataFrame, agreement: pd.DataFrame, recall: pd.DataFrame,
            admitted: pd.DataFrame | None = None) -> list[str]:
    """Plain-language findings behind the cross-backend differences."""
    notes = []
    for (mode, channel), g in pools.groupby(["mode", "channel"]):
        n = len(g)
        differ = g[~g["same_order"]]
        sets = g[~g["same_set"]]
        msg = (f"{mode}/{channel}: {n - len(differ)}/{n} queries retrieve the identical candidate list on both "
               f"backends; {len(differ)} differ in order")
        if len(sets):
            msg += (f", {len(sets)} in membership within the pool ({int(sets['truncated'].sum())} of those match more "
                    f"candidates than the pool holds, so the engines' different relevance orders cut at different places"
                    f"; {int((~sets['same_full_set']).sum())} still differ over all cached rows, i.e. even the wider "
                    f"retrieval pool of the sweep holds different candidates)")
        msg += "."
        if not g["signals_equal"].all():
            bad = int((~g["signals_equal"]).sum())
            msg += f" Shared candidates carry DIFFERENT signals in {bad} queries — investigate."
        elif channel == "fts":
            msg += (" Every shared candidate has the same matched terms on both (one analyzer, one stored "
                    "searchable_text), so FTS admission decisions agree candidate by candidate. The pool is chosen "
                    "by a rule both databases compute alike (most matched terms first), so only the engines' order "
                    "(BM25 in FTS5 vs OceanBase's natural-language relevance) differs: it moves RRF ranks, and with "
                    "them which admitted candidates make the limit.")
        else:
            msg += " Shared candidates have the same cosine (±1e-4) on both: one cached vector per text."
        notes.append(msg)
    if admitted is not None and len(admitted):
        for mode, g in admitted.groupby("mode"):
            notes.append(f"{mode}, default policy: the admitted candidates (before the limit) are identical on both "
                         f"databases for {int(g['same'].sum())}/{len(g)} queries.")
    if not agreement.empty:
        for (mode, policy), g in agreement.groupby(["mode", "policy"]):
            notes.append(f"{mode}, {policy}: hits at the limit identical as sets in {g['same_set'].mean():.0%} of queries, "
                         f"rankings identical in {g['identical'].mean():.0%}; mean Jaccard {g['jaccard'].mean():.3f}, "
                         f"mean RBO {g['rbo'].mean():.3f}.")
    for row in recall.itertuples():
        notes.append(f"vector recall@{row.k} vs exact search on {row.backend}: {row.recall:.4f} "
                     f"({row.perfect:.0%} of {row.queries} queries exact).")
    return notes
