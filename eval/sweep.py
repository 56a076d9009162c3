"""Offline replay of ``admission.admit`` + ``admission.rrf`` over cached candidates, for
thousands of policies at once.

``admission.fuse`` decides one candidate at a time; calling it for every (policy,
limit, query) of a sweep costs more than retrieving the queries did. The replay here
is the same computation arranged as array operations, and keeps its semantics by
construction and by test (``tests/eval/test_sweep_equivalence.py`` checks it against
``admission.fuse`` over many random policies, and against an online
``MemoryService.search`` on both databases):

* FTS admission uses the policy's own ``required_terms(N)`` (the library function) for
  every distinct query term count N, then compares matched-term counts; a query with
  no terms admits nothing (``decide`` needs N > 0).
* Vector admission is ``cosine >= vector_min_cosine``; a missing cosine is never
  admitted (NaN compares false).
* A limit L sees only the first ``policy.pool_size(L)`` candidates of each channel
  (what an online search with limit L retrieves); the cache holds a longer prefix.
* RRF: rank = 1-based position among a channel's admitted candidates (repeated rows
  count for the rank; a key contributes once, from its first admitted row), score =
  Σ 1/(k + rank) added in channel order fts, vector — the same float operations in
  the same order, so scores are bit-identical — and hits are sorted by (−score, memory_artifact_id, entry_id,
  entry_version_id as UTF-8), truncated to L.

Two observations make it cheap. (1) Admitted sets are threshold sets of one signal, so
they are nested: per query a policy's admitted set is identified by how many
candidates pass, and the many policies that admit the same sets share one ranking
row. (2) All limits with the same pool share one ranking; a smaller limit is a prefix.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.memory.admission import INITIAL_POLICY, NO_ADMISSION, AdmissionPolicy
from powercontext.model import ArtifactRef, MemoryHit

from . import metrics as M

__all__ = ["INITIAL", "NAMED_POLICIES", "Grid", "Replay", "policy_label"]

#: The RFC's initial constants, kept here verbatim: the library default may move once
#: the harness has measured it, and the report always compares against these.
INITIAL = INITIAL_POLICY
NAMED_POLICIES = {"initial": INITIAL, "no-admission": NO_ADMISSION}
MODES = ("fts", "vector", "hybrid")
MODE_CHANNELS = {"fts": ("fts",), "vector": ("vector",), "hybrid": ("fts", "vector")}
POINT_COLUMNS = ["fts_min_terms", "fts_min_coverage", "vector_min_cosine", "limit"]


def policy_label(policy: AdmissionPolicy, mode: str) -> str:
    """The parameters that matter in ``mode``, e.g. ``terms≥2 cov≥0.25 cos≥0.3``."""
    parts = []
    if "fts" in MODE_CHANNELS[mode]:
        parts.append(f"terms≥{policy.fts_min_terms} cov≥{policy.fts_min_coverage:g}")
    if "vector" in MODE_CHANNELS[mode]:
        parts.append(f"cos≥{policy.vector_min_cosine:g}")
    return " ".join(parts)


@dataclass(frozen=True)
class Grid:
    """The policy grid of a sweep. Each mode varies only the thresholds it uses: fts
    sweeps (terms × coverage), vector sweeps cosine, hybrid sweeps all three; every
    mode sweeps ``limits``. The initial constants and NO_ADMISSION are always on it."""

    fts_min_terms: tuple[int, ...] = (1, 2, 3, 4)
    fts_min_coverage: tuple[float, ...] = (0.0, 0.1, 0.2, 0.25, 0.3, 0.34, 0.4, 0.5, 0.6, 0.67, 0.75, 1.0)
    vector_min_cosine: tuple[float, ...] = (-1.0, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5,
                                            0.55, 0.6, 0.65, 0.7)
    limits: tuple[int, ...] = (1, 3, 5, 8, 10)

    def _axes(self) -> tuple[list[int], list[float], list[float]]:
        named = NAMED_POLICIES.values()
        terms = sorted(set(self.fts_min_terms) | {p.fts_min_terms for p in named})
        cov = sorted(set(self.fts_min_coverage) | {p.fts_min_coverage for p in named})
        cos = sorted(set(self.vector_min_cosine) | {p.vector_min_cosine for p in named})
        return terms, cov, cos

    def policies(self, mode: str) -> list[AdmissionPolicy]:
        """The distinct policies of ``mode`` (parameters a mode ignores keep the
        library default; they never influence that mode's result)."""
        terms, cov, cos = self._axes()
        base = AdmissionPolicy()
        if mode == "fts":
            return [AdmissionPolicy(t, c, base.vector_min_cosine) for t, c in itertools.product(terms, cov)]
        if mode == "vector":
            return [AdmissionPolicy(base.fts_min_terms, base.fts_min_coverage, x) for x in cos]
        if mode == "hybrid":
            return [AdmissionPolicy(t, c, x) for t, c, x in itertools.product(terms, cov, cos)]
        raise ValueError(f"unknown mode {mode!r}")

    def size(self, mode: str) -> int:
        """Number of (policy, limit) points of ``mode``."""
        return len(self.policies(mode)) * len(self.limits)

    @property
    def max_limit(self) -> int:
        return max(self.limits)


def point_values(policy: AdmissionPolicy, mode: str, limit: int) -> dict[str, Any]:
    """A point's parameters, with NaN for the thresholds ``mode`` does not use."""
    uses = MODE_CHANNELS[mode]
    return {
        "fts_min_terms": policy.fts_min_terms if "fts" in uses else math.nan,
        "fts_min_coverage": policy.fts_min_coverage if "fts" in uses else math.nan,
        "vector_min_cosine": policy.vector_min_cosine if "vector" in uses else math.nan,
        "limit": limit,
    }


@dataclass
class _Slot:
    key: tuple[str, str, str]
    memory_ref: ArtifactRef
    text: str
    kind: str
    corpus_entry: str


@dataclass
class Replay:
    """Cached candidates of one backend and mode, arranged for the array replay.

    ``candidates``: rows of ``retrieval.CANDIDATE_COLUMNS`` for this backend and mode;
    ``queries``: one row per query (``query_id``, ``query_term_count``), in the order
    every result array uses; ``qrels``: {query_id: {corpus entry id: grade}}.
    """

    mode: str
    query_ids: list[str]
    F: np.ndarray  # [Q, Cf] matched distinct terms per fts candidate, -1 = padding
    V: np.ndarray  # [Q, Cv] cosine per vector candidate, NaN = padding / missing
    n_terms: np.ndarray  # [Q]
    kf: np.ndarray  # [D, Q, S] fts position of the d-th row of each key slot (slots in tie-break order), -1 = none
    kv: np.ndarray  # [D, Q, S] the same for the vector channel (D > 1 only if a backend repeats a row)
    gain: np.ndarray  # [Q, S] qrels grade of the slot's entry, 0 = unjudged / padding
    n_rel: np.ndarray  # [Q] judged entries (grade ≥ 1)
    ideal: np.ndarray  # [Q] IDCG@10
    slots: pd.DataFrame = field(repr=False)  # one row per (query, key slot): ids, text, kind, corpus entry
    _slot_rows: dict | None = field(default=None, repr=False)

    @classmethod
    def build(cls, candidates: pd.DataFrame, queries: pd.DataFrame, qrels: Mapping[str, Mapping[str, int]],
              mode: str, min_width: int = 1) -> "Replay":
        query_ids = list(queries["query_id"])
        if len(set(query_ids)) != len(query_ids):
            raise ValueError("query ids must be unique within a replay")
        Q = len(query_ids)
        n_terms = queries["query_term_count"].to_numpy(dtype=np.int64)
        channels = MODE_CHANNELS[mode]
        c = candidates[candidates["channel"].isin(channels)]
        qi = pd.Index(query_ids).get_indexer(c["query_id"])
        c = c.assign(qi=qi)[qi >= 0].sort_values(["qi", "channel", "rank"], kind="stable")
        c["pos"] = c.groupby(["qi", "channel"], sort=False).cumcount().to_numpy()
        key = ["memory_artifact_id", "entry_id", "entry_version_id"]
        c["occurrence"] = c.groupby(["qi", "channel", *key], sort=False).cumcount().to_numpy()
        fts, vec = c[c["channel"] == "fts"], c[c["channel"] == "vector"]
        cf = int(fts["pos"].max()) + 1 if len(fts) else 0
        cv = int(vec["pos"].max()) + 1 if len(vec) else 0
        F = np.full((Q, cf), -1, dtype=np.int64)
        F[fts["qi"].to_numpy(), fts["pos"].to_numpy()] = fts["matched"].to_numpy(dtype=np.int64)
        V = np.full((Q, cv), np.nan, dtype=np.float64)
        V[vec["qi"].to_numpy(), vec["pos"].to_numpy()] = pd.to_numeric(vec["cosine"], errors="coerce").to_numpy(dtype=np.float64)
        # Key slots per query in tie-break order: UTF-8 byte order equals code point
        # order, which is how Python (and pandas) compare str, so sorting the id strings
        # sorts by admission.tie_break_key.
        slots = c.drop_duplicates(["qi", *key]).sort_values(["qi", *key], kind="stable")
        slots = slots.assign(slot=slots.groupby("qi", sort=False).cumcount().to_numpy())
        S = max(int(slots["slot"].max()) + 1 if len(slots) else 0, min_width, 1)
        rows = c.merge(slots[["qi", *key, "slot"]], on=["qi", *key], how="left")
        occ = {}
        for channel in ("fts", "vector"):
            part = rows[rows["channel"] == channel]
            depth = int(part["occurrence"].max()) + 1 if len(part) else 1
            target = np.full((depth, Q, S), -1, dtype=np.int64)
            target[part["occurrence"].to_numpy(), part["qi"].to_numpy(), part["slot"].to_numpy()] = part["pos"].to_numpy()
            occ[channel] = target
        kf, kv = occ["fts"], occ["vector"]
        grade = {(q, e): g for q, judged in qrels.items() for e, g in judged.items()}
        gain = np.zeros((Q, S), dtype=np.int64)
        slot_q = [query_ids[i] for i in slots["qi"]]
        gain[slots["qi"].to_numpy(), slots["slot"].to_numpy()] = [grade.get(k, 0) for k in zip(slot_q, slots["corpus_entry"])]
        n_rel = np.array([sum(1 for g in qrels.get(q, {}).values() if g >= 1) for q in query_ids], dtype=np.int64)
        ideal = np.array([M.idcg(list(qrels.get(q, {}).values())) for q in query_ids], dtype=np.float64)
        return cls(mode, query_ids, F, V, n_terms, kf, kv, gain, n_rel, ideal, slots)

    def _slot(self, qi: int, s: int) -> _Slot:
        if self._slot_rows is None:
            table = self.slots
            self._slot_rows = {(int(r["qi"]), int(r["slot"])): r for r in table.to_dict("records")}
        r = self._slot_rows[(qi, s)]
        return _Slot((r["memory_artifact_id"], r["entry_id"], r["entry_version_id"]),
                     ArtifactRef(r["memory_artifact_id"], int(r["memory_revision"])), r["text"], r["kind"], r["corpus_entry"])

    # ------------------------------------------------------------------ rows

    def _rows(self, policies: Sequence[AdmissionPolicy]):
        """Group (policy, query) pairs that admit the same candidate sets.

        Returns per-row query index, FTS required-term threshold and cosine threshold,
        and ``row_of[p, q]``."""
        P, Q = len(policies), len(self.query_ids)
        nmax = int(self.n_terms.max(initial=0))
        # required[p, q] via the policy's own rule, once per distinct (fts params, N)
        distinct_n = np.unique(self.n_terms)
        req = np.empty((P, Q), dtype=np.int64)
        cache: dict[tuple, np.ndarray] = {}
        for p, policy in enumerate(policies):
            key = (policy.fts_min_terms, policy.fts_min_coverage, policy.short_query_terms)
            row = cache.get(key)
            if row is None:
                by_n = {int(n): (policy.required_terms(int(n)) if n > 0 else nmax + 1) for n in distinct_n}
                row = cache[key] = np.array([by_n[int(n)] for n in self.n_terms], dtype=np.int64)
            req[p] = row
        req = np.minimum(req, nmax + 1)
        cos = np.array([p.vector_min_cosine for p in policies], dtype=np.float64)
        Cf, Cv = self.F.shape[1], self.V.shape[1]
        # nested threshold sets: the number of passing candidates identifies the set
        thresholds = np.arange(nmax + 2)
        count_f = (self.F[:, :, None] >= thresholds[None, None, :]).sum(1)  # [Q, nmax+2]
        sig_f = count_f[np.arange(Q)[None, :], req]  # [P, Q]
        t_values, t_index = np.unique(cos, return_inverse=True)
        with np.errstate(invalid="ignore"):
            count_v = (self.V[:, :, None] >= t_values[None, None, :]).sum(1)  # [Q, T]
        sig_v = count_v[:, t_index].T  # [P, Q]
        width = (Cf + 1) * (Cv + 1)
        combined = np.arange(Q)[None, :] * width + sig_f * (Cv + 1) + sig_v
        unique, first, inverse = np.unique(combined.ravel(), return_index=True, return_inverse=True)
        q_row = unique // width
        p_rep = first // Q
        return q_row, req[p_rep, q_row], cos[p_rep], inverse.reshape(P, Q)

    def _rank(self, q: np.ndarray, r: np.ndarray, t: np.ndarray, pool: int, depth: int, k: int):
        """RRF over the admitted candidates of each row: slot order, scores, counts and
        which channels admitted each slot."""
        R, S = len(q), self.kf.shape[2]
        score = np.zeros((R, S), dtype=np.float64)
        admitted = np.zeros((R, S), dtype=bool)
        by_channel = {}
        for name, signal, occurrences, thr in (("fts", self.F, self.kf, r), ("vector", self.V, self.kv, t)):
            width = min(pool, signal.shape[1])
            slot_adm = np.zeros((R, S), dtype=bool)
            if width == 0:
                by_channel[name] = slot_adm
                continue
            with np.errstate(invalid="ignore"):
                adm = signal[q, :width] >= thr[:, None]
            rank = np.cumsum(adm, axis=1)  # repeated rows count for the rank …
            with np.errstate(divide="ignore"):  # k = 0 at unadmitted rank-0 positions, never read
                contrib = 1.0 / (k + rank)
            slot_score = np.zeros((R, S), dtype=np.float64)
            for occ in occurrences:  # … but only a key's first admitted row contributes
                pos = occ[q]
                inside = (pos >= 0) & (pos < width)
                safe = np.where(inside, pos, 0)
                hit = inside & np.take_along_axis(adm, safe, 1) & ~slot_adm
                slot_score = np.where(hit, np.take_along_axis(contrib, safe, 1), slot_score)
                slot_adm |= hit
            score = score + slot_score
            admitted |= slot_adm
            by_channel[name] = slot_adm
        neg = np.where(admitted, -score, np.inf)
        order = np.argsort(neg, axis=1, kind="stable")[:, :depth]  # slots are in tie-break order
        return order, admitted.sum(1), np.take_along_axis(score, order, 1), by_channel

    @staticmethod
    def _groups(policies: Sequence[AdmissionPolicy]) -> dict[tuple[int, int, int], list[int]]:
        groups: dict[tuple[int, int, int], list[int]] = {}
        for i, p in enumerate(policies):
            groups.setdefault((p.rrf_k, p.min_pool, p.pool_factor), []).append(i)
        return groups

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, policies: Sequence[AdmissionPolicy], limits: Sequence[int],
                 weights: Mapping[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """Every metric for every (policy, limit, query).

        Without ``weights``: {metric: array [P, L, Q]} of per-query values. With
        ``weights`` {population: 0/1 matrix [Q, G]}: {metric: [P, L, G]} sums over the
        queries of each group that belong to the metric's population."""
        policies, limits = list(policies), list(limits)
        P, L, Q = len(policies), len(limits), len(self.query_ids)
        out_w = Q if weights is None else next(iter(weights.values())).shape[1]
        out = {m: np.zeros((P, L, out_w), dtype=np.float64) for m in M.METRIC_NAMES}
        for (k, _, _), members in self._groups(policies).items():
            group = [policies[i] for i in members]
            q_row, r_row, t_row, row_of = self._rows(group)
            by_pool: dict[int, list[int]] = {}
            for j, limit in enumerate(limits):
                by_pool.setdefault(group[0].pool_size(limit), []).append(j)
            for pool, js in by_pool.items():
                depth = max(limits[j] for j in js)
                order, n_adm, _, _ = self._rank(q_row, r_row, t_row, pool, depth, k)
                valid = np.arange(order.shape[1])[None, :] < n_adm[:, None]
                gains = np.take_along_axis(self.gain[q_row], order, 1) * valid
                if gains.shape[1] < depth:
                    gains = np.pad(gains, ((0, 0), (0, depth - gains.shape[1])))
                for j in js:
                    values = M.row_metrics(gains, n_adm, self.n_rel[q_row], self.ideal[q_row], limits[j])
                    for name, v in values.items():
                        per_query = v[row_of]  # [P_group, Q]
                        if weights is not None:
                            per_query = per_query @ weights[M.BY_NAME[name].population]
                        out[name][members, j] = per_query
        return out

    def populations(self) -> dict[str, np.ndarray]:
        """0/1 masks [Q] of each metric population."""
        positive = (self.n_rel > 0).astype(np.float64)
        return {"positive": positive, "empty": 1.0 - positive, "all": np.ones_like(positive)}

    def aggregate(self, policies: Sequence[AdmissionPolicy], limits: Sequence[int], groups: np.ndarray) -> dict[str, np.ndarray]:
        """Group means {metric: [P, L, G]} (NaN where a group has no query of the
        metric's population) and {"n_<population>": [G]} query counts; ``groups`` is
        a 0/1 membership matrix [Q, G]."""
        pops = self.populations()
        weights = {name: groups * mask[:, None] for name, mask in pops.items()}
        counts = {name: w.sum(0) for name, w in weights.items()}
        sums = self.evaluate(policies, limits, weights)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = {m.name: sums[m.name] / counts[m.population][None, None, :] for m in M.METRICS}
        return means | {f"n_{name}": c for name, c in counts.items()}

    def hits(self, policy: AdmissionPolicy, limit: int) -> dict[str, tuple[MemoryHit, ...]]:
        """The exact hits an online search with ``policy`` and ``limit`` returns, per query."""
        q_row, r_row, t_row, row_of = self._rows([policy])
        order, n_adm, scores, by_channel = self._rank(q_row, r_row, t_row, policy.pool_size(limit), limit, policy.rrf_k)
        out: dict[str, tuple[MemoryHit, ...]] = {}
        for qi, qid in enumerate(self.query_ids):
            row = row_of[0, qi]
            hits = []
            for pos in range(min(int(n_adm[row]), limit, order.shape[1])):
                s = int(order[row, pos])
                slot = self._slot(qi, s)
                matched_by = tuple(name for name in ("fts", "vector") if by_channel[name][row, s])
                hits.append(MemoryHit(memory_ref=slot.memory_ref, entry_id=slot.key[1], entry_version_id=slot.key[2],
                                      text=slot.text, score=float(scores[row, pos]), matched_by=matched_by,
                                      kind=slot.kind))
            out[qid] = tuple(hits)
        return out

    def ranking(self, policy: AdmissionPolicy, limit: int) -> dict[str, list[str]]:
        """Corpus entry ids of the hits, in order, per query (what ranx evaluates)."""
        q_row, r_row, t_row, row_of = self._rows([policy])
        order, n_adm, _, _ = self._rank(q_row, r_row, t_row, policy.pool_size(limit), limit, policy.rrf_k)
        entries = np.full(self.gain.shape, "", dtype=object)
        entries[self.slots["qi"].to_numpy(), self.slots["slot"].to_numpy()] = self.slots["corpus_entry"].to_numpy()
        out = {}
        for qi, qid in enumerate(self.query_ids):
            row = row_of[0, qi]
            n = min(int(n_adm[row]), limit, order.shape[1])
            out[qid] = list(entries[qi, order[row, :n]])
        return out
