"""Offline replay of ``admission.admit`` + ``fusion.rrf`` over cached candidates, for
thousands of policies at once.

``admission.fuse`` decides one candidate at a time; calling it for every (policy,
limit, query) of a sweep costs more than retrieving the queries did. The replay here
is the same computation arranged as array operations, and keeps its semantics by
construction and by test (``tests/eval/test_sweep_equivalence.py`` checks it against
``admission.fuse`` over many random policies, and against an online
``MemoryService.search`` on both databases):

* FTS admission uses the policy's own ``required_terms(N, hybrid)`` (the library
  function) for every distinct query term count N, then compares matched-term counts;
  a candidate in another script than the query also passes on
  ``cross_script_min_terms``; a query with no terms admits nothing (``decide`` needs
  N > 0).
* Vector admission is ``cosine >= vector_min_cosine`` or, with ``vector_min_centred``,
  ``centred >= vector_min_centred`` (and the raw floor when it is above −1); outside
  the profile's scripts ``vector_uncovered`` refuses or re-thresholds; a missing
  signal is never admitted (NaN compares false).
* Support (``vector_min_support``, ``fts_min_support``): a vector candidate with
  0 < support < the floor is refused, a full-text one below ``fts_min_support``; a
  candidate without the signal (NaN) is not affected, as ``decide`` skips it.
* Probability (``min_probability``): a candidate with a calibrated probability is
  admitted iff it reaches the threshold, whatever the raw rules say; one without (NaN)
  keeps the raw rules' verdict (``calibration.probability_verdict``). A hybrid
  candidate's probability depends on what both pools hold, so a replay given the
  calibration (``Replay.build(..., calibration=)``) recomputes the probabilities per pool
  with the library's ``annotate`` (``pooled_probability``).
* The whole-query gate reads the best signal of the pool a limit retrieves (for
  ``spread``: the population standard deviation of its ``SPREAD_TOP`` best cosines),
  so it is decided per pool.
* A limit L sees only the candidates an online search with limit L retrieves
  (``admission.within_pool``): the first ``policy.pool_size(L)`` by rank of the vector
  channel, and the full-text candidates whose pool order is below it; the cache holds
  a larger pool.
* RRF: rank = 1-based position among a channel's admitted candidates (repeated rows
  count for the rank; a key contributes once, from its first admitted row), score =
  Σ 1/(k + rank) added in channel order fts, vector — the same float operations in
  the same order, so scores are bit-identical — and hits are sorted by (−score, memory_artifact_id, entry_id,
  entry_version_id as UTF-8), truncated to L.

Two observations make it cheap. (1) Policies differ in few channel rules: each distinct
FTS rule and each distinct vector rule is decided once for every candidate, and the
many (policy, query) pairs whose admitted sets are equal share one ranking row. (2)
All limits with the same pool share one ranking; a smaller limit is a prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from powercontext.memory.admission import INITIAL_POLICY, AdmissionPolicy, spread
from powercontext.memory.calibration import Calibration
from powercontext.model import ArtifactRef, MemoryHit

from . import metrics as M
from ..running.retrieval import records
from .pooled_probability import pool_probabilities
from .grid import (  # noqa: F401 - re-exported: the grid is part of the sweep's API
    MODE_CHANNELS, MODES, NAMED_POLICIES, POINT_COLUMNS, Grid, point_values, policy_label,
)

__all__ = ["INITIAL", "NAMED_POLICIES", "Grid", "Replay", "point_values", "policy_label"]

#: The RFC's initial constants, kept here verbatim: the library default may move once
#: the harness has measured it, and the report always compares against these.
INITIAL = INITIAL_POLICY


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
    Z: np.ndarray  # [Q, Cv] centred cosine per vector candidate, NaN = padding / missing
    U: np.ndarray  # [Q, Cv] the profile does not cover the query's or the candidate's script (covered is False)
    X: np.ndarray  # [Q, Cf] the fts candidate is in another script than the query
    kf: np.ndarray  # [D, Q, S] fts position of the d-th row of each key slot (slots in tie-break order), -1 = none
    kv: np.ndarray  # [D, Q, S] the same for the vector channel (D > 1 only if a backend repeats a row)
    gain: np.ndarray  # [Q, S] qrels grade of the slot's entry, 0 = unjudged / padding
    n_rel: np.ndarray  # [Q] judged entries (grade ≥ 1)
    ideal: np.ndarray  # [Q] IDCG@10
    slots: pd.DataFrame = field(repr=False)  # one row per (query, key slot): ids, text, kind, corpus entry
    _slot_rows: dict | None = field(default=None, repr=False)
    # [Q, Cf] each fts candidate's place in the pool order (ChannelCandidate.pool_rank;
    # its position where none was recorded): a pool of P holds the places below P.
    PF: np.ndarray | None = field(default=None, repr=False)
    # [Q, Cf] / [Q, Cv] each candidate's support signal, NaN = not measured / padding
    SF: np.ndarray | None = field(default=None, repr=False)
    SV: np.ndarray | None = field(default=None, repr=False)
    # [Q, Cf] / [Q, Cv] each candidate's calibrated probability, NaN = none / padding
    PrF: np.ndarray | None = field(default=None, repr=False)
    PrV: np.ndarray | None = field(default=None, repr=False)
    # with a calibration: the probabilities are recomputed per pool from these rows
    calibration: Calibration | None = field(default=None, repr=False)
    _cal_rows: pd.DataFrame | None = field(default=None, repr=False)
    _by_pool: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, candidates: pd.DataFrame, queries: pd.DataFrame, qrels: Mapping[str, Mapping[str, int]],
              mode: str, min_width: int = 1, calibration: Calibration | None = None) -> "Replay":
        """``calibration``: the artefact the search annotates with (the profile's shipped
        one for a harness run); without it the cached ``probability`` column is read as
        is, which is exact only where the pool does not change it (fts, vector)."""
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
        PF = np.full((Q, cf), np.iinfo(np.int64).max, dtype=np.int64)
        place = (pd.to_numeric(fts["pool_rank"], errors="coerce") if "pool_rank" in fts.columns
                 else pd.Series(np.nan, index=fts.index))
        PF[fts["qi"].to_numpy(), fts["pos"].to_numpy()] = np.where(place.isna(), fts["pos"], place).astype(np.int64)
        V = np.full((Q, cv), np.nan, dtype=np.float64)
        V[vec["qi"].to_numpy(), vec["pos"].to_numpy()] = pd.to_numeric(vec["cosine"], errors="coerce").to_numpy(dtype=np.float64)
        Z = np.full((Q, cv), np.nan, dtype=np.float64)
        U = np.zeros((Q, cv), dtype=bool)
        X = np.zeros((Q, cf), dtype=bool)
        if "centred" in c.columns:
            Z[vec["qi"].to_numpy(), vec["pos"].to_numpy()] = pd.to_numeric(vec["centred"], errors="coerce").to_numpy(dtype=np.float64)
            U[vec["qi"].to_numpy(), vec["pos"].to_numpy()] = vec["covered"].map(_covered_false).to_numpy(bool)
            X[fts["qi"].to_numpy(), fts["pos"].to_numpy()] = _cross_script(fts["script"], fts["query_script"])
        # Key slots per query in tie-break order: UTF-8 byte order equals code point
        # order, which is how Python (and pandas) compare str, so sorting the id strings
        # sorts by fusion.tie_break_key.
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
        SF = np.full((Q, cf), np.nan, dtype=np.float64)
        SV = np.full((Q, cv), np.nan, dtype=np.float64)
        if "support" in c.columns:
            SF[fts["qi"].to_numpy(), fts["pos"].to_numpy()] = pd.to_numeric(fts["support"], errors="coerce").to_numpy(np.float64)
            SV[vec["qi"].to_numpy(), vec["pos"].to_numpy()] = pd.to_numeric(vec["support"], errors="coerce").to_numpy(np.float64)
        PrF, PrV = _channel_values(fts, Q, cf, "probability"), _channel_values(vec, Q, cv, "probability")
        return cls(mode, query_ids, F, V, n_terms, Z, U, X, kf, kv, gain, n_rel, ideal, slots, PF=PF, SF=SF, SV=SV,
                   PrF=PrF, PrV=PrV, calibration=calibration, _cal_rows=None if calibration is None else c)

    def _probabilities(self, pool: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(PrF, PrV) a search with ``pool`` reads."""
        if self.calibration is None:
            return self.PrF, self.PrV
        if pool not in self._by_pool:
            self._by_pool[pool] = pool_probabilities(self._cal_rows, len(self.query_ids), (self.F.shape[1], self.V.shape[1]),
                                                     MODE_CHANNELS[self.mode], pool, self.calibration)
        return self._by_pool[pool]

    def _members(self, channel: str, pool: int) -> np.ndarray:
        """[Q, C]: the cached candidates a search with ``pool`` retrieves — full-text by
        pool order (``admission.within_pool``), vector by rank."""
        if channel == "fts" and self.PF is not None:
            return self.PF < pool
        width = (self.F if channel == "fts" else self.V).shape[1]
        return np.broadcast_to(np.arange(width) < pool, (len(self.query_ids), width))

    def _slot(self, qi: int, s: int) -> _Slot:
        if self._slot_rows is None:
            table = self.slots
            self._slot_rows = {(int(r["qi"]), int(r["slot"])): r for r in records(table)}
        r = self._slot_rows[(qi, s)]
        return _Slot((r["memory_artifact_id"], r["entry_id"], r["entry_version_id"]),
                     ArtifactRef(r["memory_artifact_id"], int(r["memory_revision"])), r["text"], r["kind"], r["corpus_entry"])

    # ------------------------------------------------------------------ rows

    def _fts_masks(self, policies: Sequence[AdmissionPolicy], cache: dict, pool: int) -> np.ndarray:
        """Per policy, the index (into ``cache["fts"]``) of its FTS admission mask
        [Q, Cf]: one mask per distinct FTS rule."""
        hybrid = self.mode == "hybrid"
        nmax = int(self.n_terms.max(initial=0))
        distinct_n = np.unique(self.n_terms)
        masks, index = cache.setdefault("fts", ([], {}))
        out = np.empty(len(policies), dtype=np.int64)
        for p, policy in enumerate(policies):
            key = (policy.fts_floors(hybrid), policy.short_query_terms, policy.cross_script_min_terms,
                   policy.fts_min_support, policy.min_probability, self._pool_key(policy, pool))
            if key not in index:
                # required terms via the library's own rule, once per distinct N
                by_n = {int(n): (policy.required_terms(int(n), hybrid) if n > 0 else nmax + 1) for n in distinct_n}
                need = np.array([by_n[int(n)] for n in self.n_terms], dtype=np.int64)
                mask = self.F >= need[:, None]  # padding (-1) never passes: need ≥ 1
                xs = policy.cross_script_min_terms
                if xs is not None:
                    mask |= self.X & (self.F >= xs) & (self.n_terms[:, None] > 0)
                if policy.fts_min_support is not None and self.SF is not None:
                    with np.errstate(invalid="ignore"):
                        mask &= ~(self.SF < policy.fts_min_support)  # NaN: no signal, no rule
                if policy.min_probability is not None:
                    mask = _by_probability(mask, self._probabilities(pool)[0], policy.min_probability)
                index[key] = len(masks)
                masks.append(mask)
            out[p] = index[key]
        return out

    def _pool_key(self, policy: AdmissionPolicy, pool: int) -> int | None:
        """The pool, where a probability mask depends on it (recomputed per pool)."""
        return pool if self.calibration is not None and policy.min_probability is not None else None

    def _vector_masks(self, policies: Sequence[AdmissionPolicy], cache: dict, pool: int) -> np.ndarray:
        """Per policy, the index (into ``cache["vector"]``) of its vector admission
        mask [Q, Cv], decided as ``admission._decide_vector`` decides."""
        masks, index = cache.setdefault("vector", ([], {}))
        out = np.empty(len(policies), dtype=np.int64)
        for p, policy in enumerate(policies):
            key = (policy.vector_min_cosine, policy.vector_min_centred, policy.vector_uncovered,
                   policy.vector_min_support, policy.min_probability, self._pool_key(policy, pool))
            if key not in index:
                index[key] = len(masks)
                mask = self._vector_mask(policy)
                if policy.min_probability is not None:
                    mask = _by_probability(mask, self._probabilities(pool)[1], policy.min_probability)
                masks.append(mask)
            out[p] = index[key]
        return out

    def _vector_mask(self, policy: AdmissionPolicy) -> np.ndarray:
        uncovered = self.U
        rethreshold = not isinstance(policy.vector_uncovered, str)
        with np.errstate(invalid="ignore"):
            if policy.vector_min_centred is None:
                threshold = np.where(uncovered, policy.vector_uncovered, policy.vector_min_cosine) if rethreshold \
                    else policy.vector_min_cosine
                mask = self.V >= threshold
            else:
                mask = ~np.isnan(self.V)  # no cosine: no vector signal at all
                if policy.vector_min_cosine > -1.0:
                    mask &= self.V >= policy.vector_min_cosine
                threshold = np.where(uncovered, policy.vector_uncovered, policy.vector_min_centred) if rethreshold \
                    else policy.vector_min_centred
                mask &= self.Z >= threshold
        if policy.vector_uncovered == "refuse":
            mask &= ~uncovered
        if policy.vector_min_support is not None and self.SV is not None:
            with np.errstate(invalid="ignore"):  # admission.topic_only: 0 < support < floor
                mask &= ~((self.SV > 0.0) & (self.SV < policy.vector_min_support))
        return mask

    def _gated(self, policies: Sequence[AdmissionPolicy], pool: int) -> np.ndarray:
        """[P, Q]: the whole-query gate refuses the query (``admission.gate`` over the
        pool a search with this pool retrieves)."""
        P, Q = len(policies), len(self.query_ids)
        out = np.zeros((P, Q), dtype=bool)
        best: dict[str, np.ndarray | None] = {}
        channels = MODE_CHANNELS[self.mode]
        for p, policy in enumerate(policies):
            if policy.gate_min is None:
                continue
            signal = policy.gate_signal
            if signal not in best:
                channel = "fts" if signal == "coverage" else "vector"
                if channel not in channels:
                    best[signal] = None  # the gate's channel was not retrieved: it does not apply
                else:
                    if signal == "coverage":
                        values = np.where((self.F >= 0) & self._members("fts", pool),
                                          self.F / np.maximum(self.n_terms, 1)[:, None], np.nan)
                        values = np.where(self.n_terms[:, None] > 0, values, np.where(np.isnan(values), np.nan, 0.0))
                    elif signal == "spread":
                        best[signal] = self._spread(pool)
                        if best[signal] is not None:
                            out[p] = best[signal] < policy.gate_min
                        continue
                    else:
                        width = min(pool, self.V.shape[1])
                        values = (self.V if signal == "cosine" else self.Z)[:, :width]
                    with np.errstate(invalid="ignore"):
                        has = ~np.isnan(values)
                        best[signal] = np.where(has.any(1), np.nanmax(np.where(has, values, -np.inf), 1), -np.inf) \
                            if values.shape[1] else np.full(Q, -np.inf)
            if best[signal] is not None:
                out[p] = best[signal] < policy.gate_min
        return out

    def _spread(self, pool: int) -> np.ndarray:
        """[Q] ``admission.gate_value(…, "spread")`` (``admission.spread`` itself) of
        each query's pool, −inf for none."""
        width = min(pool, self.V.shape[1])
        out = np.full(len(self.query_ids), -np.inf)
        for qi in range(len(self.query_ids)):
            values = self.V[qi, :width]
            values = values[~np.isnan(values)].tolist()
            if values:
                out[qi] = spread(values)
        return out

    def _rows(self, policies: Sequence[AdmissionPolicy], pool: int, cache: dict | None = None):
        """Group (policy, query) pairs that admit the same candidate sets.

        Returns per-row query index and FTS / vector admission masks, and
        ``row_of[p, q]``."""
        cache = {} if cache is None else cache
        P, Q = len(policies), len(self.query_ids)
        channels = MODE_CHANNELS[self.mode]
        fi = self._fts_masks(policies, cache, pool) if "fts" in channels else np.zeros(P, dtype=np.int64)
        vi = self._vector_masks(policies, cache, pool) if "vector" in channels else np.zeros(P, dtype=np.int64)
        fmasks = np.stack(cache["fts"][0]) if "fts" in channels else np.zeros((1, Q, self.F.shape[1]), bool)
        vmasks = np.stack(cache["vector"][0]) if "vector" in channels else np.zeros((1, Q, self.V.shape[1]), bool)
        # per (mask, query): an id of the admitted set, equal ids = equal sets
        fid = _set_ids(fmasks)  # [Kf, Q]
        vid = _set_ids(vmasks)  # [Kv, Q]
        gated = self._gated(policies, pool)
        nv = int(vid.max(initial=0)) + 1
        nf = int(fid.max(initial=0)) + 1
        combined = np.where(gated, nf * nv + np.arange(Q)[None, :], fid[fi] * nv + vid[vi])
        unique, first, inverse = np.unique(combined.ravel(), return_index=True, return_inverse=True)
        p_rep, q_row = first // Q, first % Q
        off = gated[p_rep, q_row]
        adm_f = np.where(off[:, None], False, fmasks[fi[p_rep], q_row])
        adm_v = np.where(off[:, None], False, vmasks[vi[p_rep], q_row])
        return q_row, adm_f, adm_v, inverse.reshape(P, Q)

    def _rank(self, q: np.ndarray, adm_f: np.ndarray, adm_v: np.ndarray, pool: int, depth: int, k: int):
        """RRF over the admitted candidates of each row: slot order, scores, counts and
        which channels admitted each slot."""
        R, S = len(q), self.kf.shape[2]
        score = np.zeros((R, S), dtype=np.float64)
        admitted = np.zeros((R, S), dtype=bool)
        by_channel = {}
        for name, full, occurrences in (("fts", adm_f, self.kf), ("vector", adm_v, self.kv)):
            slot_adm = np.zeros((R, S), dtype=bool)
            if full.shape[1] == 0:
                by_channel[name] = slot_adm
                continue
            member = self._members(name, pool)[q]
            adm = full & member
            rank = np.cumsum(adm, axis=1)  # repeated rows count for the rank …
            with np.errstate(divide="ignore"):  # k = 0 at unadmitted rank-0 positions, never read
                contrib = 1.0 / (k + rank)
            slot_score = np.zeros((R, S), dtype=np.float64)
            for occ in occurrences:  # … but only a key's first admitted row contributes
                pos = occ[q]
                inside = pos >= 0
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
                 weights: Mapping[str, np.ndarray] | None = None, chunk: int | None = None,
                 done: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
        """Every metric for every (policy, limit, query).

        Without ``weights``: {metric: array [P, L, Q]} of per-query values. With
        ``weights`` {population: 0/1 matrix [Q, G]}: {metric: [P, L, G]} sums over the
        queries of each group that belong to the metric's population.

        ``chunk``: replay at most this many policies at once. The arrays of one pass are
        [policies, queries]; a whole hybrid grid (~28k policies × 1,173 queries) in one
        pass held ~1.5 GB of them at once. ``done(n)`` is called after each pass with
        the number of policies it finished (a progress line)."""
        policies, limits = list(policies), list(limits)
        P, L, Q = len(policies), len(limits), len(self.query_ids)
        out_w = Q if weights is None else next(iter(weights.values())).shape[1]
        out = {m: np.zeros((P, L, out_w), dtype=np.float64) for m in M.METRIC_NAMES}
        cache: dict = {}
        step = chunk or max(P, 1)
        blocks = [(k, members[i:i + step]) for (k, _, _), members in self._groups(policies).items()
                  for i in range(0, len(members), step)]
        for k, members in blocks:
            group = [policies[i] for i in members]
            by_pool: dict[int, list[int]] = {}
            for j, limit in enumerate(limits):
                by_pool.setdefault(group[0].pool_size(limit), []).append(j)
            for pool, js in by_pool.items():
                q_row, adm_f, adm_v, row_of = self._rows(group, pool, cache)
                depth = max(limits[j] for j in js)
                order, n_adm, _, _ = self._rank(q_row, adm_f, adm_v, pool, depth, k)
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
            if done is not None:
                done(len(members))
        return out

    def populations(self) -> dict[str, np.ndarray]:
        """0/1 masks [Q] of each metric population."""
        positive = (self.n_rel > 0).astype(np.float64)
        return {"positive": positive, "empty": 1.0 - positive, "all": np.ones_like(positive)}

    def aggregate(self, policies: Sequence[AdmissionPolicy], limits: Sequence[int], groups: np.ndarray,
                  chunk: int | None = None, done: Callable[[int], None] | None = None) -> dict[str, np.ndarray]:
        """Group means {metric: [P, L, G]} (NaN where a group has no query of the
        metric's population) and {"n_<population>": [G]} query counts; ``groups`` is
        a 0/1 membership matrix [Q, G]."""
        pops = self.populations()
        weights = {name: groups * mask[:, None] for name, mask in pops.items()}
        counts = {name: w.sum(0) for name, w in weights.items()}
        sums = self.evaluate(policies, limits, weights, chunk, done)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = {m.name: sums[m.name] / counts[m.population][None, None, :] for m in M.METRICS}
        return means | {f"n_{name}": c for name, c in counts.items()}

    def hits(self, policy: AdmissionPolicy, limit: int) -> dict[str, tuple[MemoryHit, ...]]:
        """The exact hits an online search with ``policy`` and ``limit`` returns, per query."""
        pool = policy.pool_size(limit)
        q_row, adm_f, adm_v, row_of = self._rows([policy], pool)
        order, n_adm, scores, by_channel = self._rank(q_row, adm_f, adm_v, pool, limit, policy.rrf_k)
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
        pool = policy.pool_size(limit)
        q_row, adm_f, adm_v, row_of = self._rows([policy], pool)
        order, n_adm, _, _ = self._rank(q_row, adm_f, adm_v, pool, limit, policy.rrf_k)
        entries = np.full(self.gain.shape, "", dtype=object)
        entries[self.slots["qi"].to_numpy(), self.slots["slot"].to_numpy()] = self.slots["corpus_entry"].to_numpy()
        out = {}
        for qi, qid in enumerate(self.query_ids):
            row = row_of[0, qi]
            n = min(int(n_adm[row]), limit, order.shape[1])
            out[qid] = list(entries[qi, order[row, :n]])
        return out


def _set_ids(masks: np.ndarray) -> np.ndarray:
    """[K, Q] ids of the admitted sets of K masks [K, Q, C], equal within a query only
    when the sets are equal (ids are unique across queries too)."""
    K, Q, C = masks.shape
    packed = np.packbits(masks, axis=2) if C else np.zeros((K, Q, 1), np.uint8)
    rows = np.concatenate([np.broadcast_to(np.arange(Q, dtype=np.int64)[None, :, None], (K, Q, 1)),
                           packed.astype(np.int64)], axis=2).reshape(K * Q, -1)
    _, inverse = np.unique(rows, axis=0, return_inverse=True)
    return inverse.reshape(K, Q)


def _channel_values(rows: pd.DataFrame, Q: int, width: int, column: str) -> np.ndarray | None:
    """[Q, width] of a numeric signal column (NaN = missing / padding); None without it."""
    if column not in rows.columns:
        return None
    out = np.full((Q, width), np.nan, dtype=np.float64)
    out[rows["qi"].to_numpy(), rows["pos"].to_numpy()] = pd.to_numeric(rows[column], errors="coerce").to_numpy(np.float64)
    return out


def _by_probability(mask: np.ndarray, probability: np.ndarray | None, threshold: float | None) -> np.ndarray:
    """``admission.admitted``'s probability rule over a raw-rule mask: where a candidate
    has a probability it alone decides (``calibration.probability_verdict``), elsewhere
    the raw rules stand."""
    if threshold is None or probability is None:
        return mask
    has = ~np.isnan(probability)
    with np.errstate(invalid="ignore"):
        return np.where(has, probability >= threshold, mask)


def _covered_false(value: Any) -> bool:
    return value is not None and not (isinstance(value, float) and np.isnan(value)) and not bool(value)


def _cross_script(script: pd.Series, query_script: pd.Series) -> np.ndarray:
    """``admission._cross_script`` per row: both scripts known (not None / "none") and different."""
    a = script.map(lambda v: v if isinstance(v, str) else "none").to_numpy(object)
    b = query_script.map(lambda v: v if isinstance(v, str) else "none").to_numpy(object)
    return (a != "none") & (b != "none") & (a != b)
