"""Offline admission study: which policy family holds on corpora it was not tuned on?

    .venv/bin/python benchmarks/admission_study.py [--out results/admission_study]

An independent replay of search over the bundled corpora, for both analyzers, that
needs no Memory database: each corpus's active entries go into an in-memory SQLite FTS5
table built exactly as the SQLite backend builds its projection (same tokenizer, same
``ORDER BY rank`` and id tie-break, same pool), and the vector channel is the exact
cosine top-k over MiniLM vectors (the SQLite backend's vec0 KNN is exact too). Every
candidate carries the signals of every family: matched terms, cosine, centred cosine
``cos − q·c̄`` (c̄ = mean vector of the searched memories' active entries), scripts,
profile coverage, and a late-interaction MaxSim over MiniLM token embeddings. A sample of
policies is replayed through ``admission.fuse`` itself to show the vectorised replay
here equals the library.

Protocol (nothing is ever tuned on a test split or on the corpus it is reported on):

* in-corpus held-out: tune on the corpus's dev split, report on its test split;
* leave-one-corpus-out: tune on ALL queries of the other corpora, report on every
  query of the one left out;
* bundled test: tune on the dev splits of all corpora, report on their test splits.

"Tune" = the policy of the family's grid with the highest nDCG@10 whose false-admission
rate on the tuning queries is ≤ the bound (0.30), at limit 8, hybrid mode. Paired
bootstrap CIs compare each family with the best one per held-out corpus.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import apsw
import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from powercontext import analyzer  # noqa: E402
from powercontext.backends.sqlite.backend import FTS_TOKENIZE  # noqa: E402
from powercontext.embedding import MINILM_PROFILE, minilm_path  # noqa: E402
from powercontext.memory import admission, fusion  # noqa: E402
from powercontext.memory.admission import AdmissionPolicy  # noqa: E402
from powercontext.model import ArtifactRef, ChannelCandidate  # noqa: E402

LIMIT = 8
BOUND = 0.30
POOL = AdmissionPolicy.floors().pool_size(LIMIT)
MEMORY_ORDER = ("repo", "user")  # the harness loads (and so mints ids for) repo first


# ---------------------------------------------------------------------------- corpora


def read_corpus(folder: Path) -> dict:
    memories = [json.loads(line) for line in (folder / "memories.jsonl").read_text().splitlines() if line.strip()]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines() if line.strip()]
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "qrels.trec").read_text().splitlines():
        if line.strip():
            qid, _, doc, grade = line.split()
            qrels.setdefault(qid, {})[doc] = int(grade)
    active = [m for m in memories if m.get("state", "active") == "active"]
    active.sort(key=lambda m: (MEMORY_ORDER.index(m["memory"]) if m["memory"] in MEMORY_ORDER else 9,
                               memories.index(m)))
    return dict(name=folder.name, active=active, queries=queries, qrels=qrels)


# ---------------------------------------------------------------------------- model


class MiniLM:
    """all-MiniLM-L6-v2, sentence vectors and token vectors, cached on disk."""

    def __init__(self, cache: Path) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(minilm_path(), device="cpu")
        self.cache = cache
        self.sentence: dict[str, np.ndarray] = {}
        self.tokens: dict[str, np.ndarray] = {}
        if cache.is_file():
            data = pd.read_pickle(cache)
            self.sentence, self.tokens = data["sentence"], data["tokens"]

    def prefetch(self, texts: list[str]) -> None:
        missing = sorted({t for t in texts if t not in self.sentence})
        if not missing:
            return
        vecs = self.model.encode(missing, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
        toks = self.model.encode(missing, batch_size=32, output_value="token_embeddings")
        for text, v, t in zip(missing, vecs, toks):
            t = t.numpy().astype(np.float32)
            self.sentence[text] = v.astype(np.float64)
            self.tokens[text] = t / np.linalg.norm(t, axis=1, keepdims=True)
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        pd.to_pickle(dict(sentence=self.sentence, tokens=self.tokens), self.cache)


def maxsim(q: np.ndarray, d: np.ndarray) -> float:
    """ColBERT-style late interaction: mean over query tokens of the best document token."""
    return float((q @ d.T).max(1).mean())


# ---------------------------------------------------------------------------- retrieval


@dataclass
class QueryCandidates:
    corpus: str
    qid: str
    split: str
    positive: bool
    channels: dict  # {"fts": [ChannelCandidate], "vector": [...]} in backend order
    maxsim: dict  # entry id -> MaxSim, vector pool only
    gains: dict  # corpus entry id -> grade
    ideal: float


def retrieve(corpus: dict, version: str, model: MiniLM) -> list[QueryCandidates]:
    an = analyzer.get(version)
    con = apsw.Connection(":memory:")
    con.execute(f'CREATE VIRTUAL TABLE f USING fts5(searchable_text, tokenize="{FTS_TOKENIZE}")')
    entries = corpus["active"]
    for rowid, e in enumerate(entries, start=1):
        con.execute("INSERT INTO f (rowid, searchable_text) VALUES (?, ?)", (rowid, an.searchable_text(e["text"].strip())))
    stored = [set(an.tokens(e["text"].strip())) for e in entries]
    scripts = [analyzer.script(e["text"]) for e in entries]
    matrix = np.stack([model.sentence[e["text"].strip()] for e in entries])
    memory = np.array([e["memory"] for e in entries])
    ref = {m: ArtifactRef(f"mem_art_{i}_{m}", 1) for i, m in enumerate(MEMORY_ORDER)}
    out = []
    for q in corpus["queries"]:
        terms = an.query_terms(q["text"])
        qscript = analyzer.script(q["text"])
        mask = np.isin(memory, q["memories"])
        idx = np.flatnonzero(mask)
        placeholders = ",".join("?" * len(q["memories"]))

        def cand(channel, rank, i, **signals):
            e = entries[i]
            return ChannelCandidate(channel, rank, ref[e["memory"]], f"{i:05d}", e["id"], "0" * 64, e["kind"], e["id"],
                                    script=scripts[i], query_script=qscript, **signals)

        fts = []
        if terms:
            rows = con.execute(
                "SELECT f.rowid FROM f WHERE f MATCH ? AND f.rowid IN "
                f"(SELECT value FROM json_each(?)) ORDER BY f.rank, f.rowid LIMIT ?",
                (analyzer.fts5_match_expression(terms), json.dumps([int(i) + 1 for i in idx]), POOL),
            ).fetchall()
            for rank, (rowid,) in enumerate(rows, start=1):
                i = rowid - 1
                fts.append(cand("fts", rank, i, matched_terms=tuple(t for t in terms if t in stored[i]),
                                query_term_count=len(terms)))
        qv = model.sentence[q["text"]]
        sims = matrix[idx] @ qv
        centre = matrix[idx].mean(0) @ qv
        order = idx[np.argsort(-sims, kind="stable")[:POOL]]
        vec, ms = [], {}
        for rank, i in enumerate(order, start=1):
            cos = float(matrix[i] @ qv)
            covered = MINILM_PROFILE.covers(scripts[i]) and MINILM_PROFILE.covers(qscript)
            vec.append(cand("vector", rank, int(i), cosine=cos, centred=cos - float(centre), covered=covered))
            ms[entries[i]["id"]] = maxsim(model.tokens[q["text"]], model.tokens[entries[i]["text"].strip()])
        judged = corpus["qrels"].get(q["id"], {})
        grades = sorted((g for g in judged.values() if g >= 1), reverse=True)[:10]
        ideal = sum(g / math.log2(r + 2) for r, g in enumerate(grades))
        out.append(QueryCandidates(corpus["name"], q["id"], q.get("split", "all"), bool(judged),
                                   {"fts": fts, "vector": vec}, ms, judged, ideal))
    return out


# ---------------------------------------------------------------------------- vectorised replay


class Table:
    """Per-query candidate signals as padded arrays, for fast replay of many policies."""

    def __init__(self, queries: list[QueryCandidates]) -> None:
        self.queries = queries
        Q = len(queries)
        cf = max([len(q.channels["fts"]) for q in queries] + [1])
        cv = max([len(q.channels["vector"]) for q in queries] + [1])
        slots = [sorted({c.key for ch in q.channels.values() for c in ch}, key=fusion.tie_break_key) for q in queries]
        S = max(len(s) for s in slots) + 1
        self.S = S
        self.m = np.full((Q, cf), -1)
        self.n = np.zeros(Q, int)
        self.cross = np.zeros((Q, cf), bool)
        self.sf = np.full((Q, cf), S - 1)
        self.cos = np.full((Q, cv), np.nan)
        self.cen = np.full((Q, cv), np.nan)
        self.ms = np.full((Q, cv), np.nan)
        self.cov = np.ones((Q, cv), bool)
        self.sv = np.full((Q, cv), S - 1)
        self.gain = np.zeros((Q, S))
        self.ideal = np.array([q.ideal for q in queries])
        self.positive = np.array([q.positive for q in queries])
        for qi, q in enumerate(queries):
            where = {k: s for s, k in enumerate(slots[qi])}
            for s, k in enumerate(slots[qi]):
                self.gain[qi, s] = q.gains.get(k[2], 0)
            for j, c in enumerate(q.channels["fts"]):
                self.m[qi, j] = len(c.matched_terms)
                self.n[qi] = c.query_term_count
                self.cross[qi, j] = admission._cross_script(c)
                self.sf[qi, j] = where[c.key]
            for j, c in enumerate(q.channels["vector"]):
                self.cos[qi, j], self.cen[qi, j], self.cov[qi, j] = c.cosine, c.centred, c.covered
                self.ms[qi, j] = q.maxsim[c.key[2]]
                self.sv[qi, j] = where[c.key]
        self.n_fts = np.where(self.n == 0, 0, 1)

    def masks(self, p: AdmissionPolicy, maxsim: float | None = None, mode: str = "hybrid"):
        """Admission masks of ``p`` (plus the study-only MaxSim vector rule)."""
        hybrid = mode == "hybrid"
        req = np.array([p.required_terms(int(n), hybrid) if n > 0 else 10**6 for n in self.n])
        fts = (self.m >= req[:, None]) & (self.m >= 0)
        if p.cross_script_min_terms is not None:
            fts |= self.cross & (self.m >= p.cross_script_min_terms) & (self.n[:, None] > 0)
        with np.errstate(invalid="ignore"):
            if maxsim is not None:
                signal, thr = self.ms, maxsim
            elif p.vector_min_centred is not None:
                signal, thr = self.cen, p.vector_min_centred
            else:
                signal, thr = self.cos, p.vector_min_cosine
            thr = np.where(self.cov, thr, thr if p.vector_uncovered == "admit" else
                           np.inf if p.vector_uncovered == "refuse" else p.vector_uncovered)
            vec = (signal >= thr) & (self.cos >= p.vector_min_cosine)
            if p.gate_min is not None:
                values = {"centred": self.cen, "cosine": self.cos}.get(p.gate_signal)
                if values is not None and mode != "fts":
                    best = np.nanmax(np.where(np.isnan(values), -np.inf, values), axis=1)
                    keep = best >= p.gate_min
                    fts &= keep[:, None]
                    vec &= keep[:, None]
        if mode == "fts":
            vec[:] = False
        if mode == "vector":
            fts[:] = False
        return fts, vec

    def evaluate(self, p: AdmissionPolicy, maxsim: float | None = None, mode: str = "hybrid"):
        """Per-query nDCG@10, any-hit flag and hit order at LIMIT."""
        fts, vec = self.masks(p, maxsim, mode)
        k = p.rrf_k
        Q = len(self.queries)
        score = np.zeros((Q, self.S))
        rows = np.arange(Q)[:, None]
        for adm, slots in ((fts, self.sf), (vec, self.sv)):
            rank = np.cumsum(adm, 1)
            contrib = np.where(adm, 1.0 / (k + np.maximum(rank, 1)), 0.0)
            np.add.at(score, (np.broadcast_to(rows, slots.shape), slots), contrib)
        score[:, -1] = 0.0
        admitted = score > 0
        order = np.argsort(np.where(admitted, -score, np.inf), axis=1, kind="stable")[:, :LIMIT]
        n_hits = np.minimum(admitted.sum(1), LIMIT)
        valid = np.arange(LIMIT)[None, :] < n_hits[:, None]
        gains = np.take_along_axis(self.gain, order, 1) * valid
        dcg = (gains / np.log2(np.arange(2, LIMIT + 2))).sum(1)
        ndcg = dcg / np.where(self.ideal == 0, 1, self.ideal)
        return ndcg, n_hits > 0, order, n_hits


def metrics(table: Table, sel: np.ndarray, ndcg: np.ndarray, any_hit: np.ndarray) -> dict:
    pos, neg = sel & table.positive, sel & ~table.positive
    return dict(ndcg=float(ndcg[pos].mean()) if pos.any() else math.nan,
                far=float(any_hit[neg].mean()) if neg.any() else math.nan,
                pos_empty=float((~any_hit[pos]).mean()) if pos.any() else math.nan)


def check_against_library(table: Table, policies: list[AdmissionPolicy], rng: np.random.Generator) -> int:
    """The replay above equals ``admission.fuse`` (hit identity and order) on sampled policies."""
    checked = 0
    for p in policies:
        _, _, order, n_hits = table.evaluate(p)
        for qi in rng.choice(len(table.queries), size=40, replace=False):
            q = table.queries[qi]
            want = [h.entry_id for h in admission.fuse(q.channels, p, LIMIT)]
            slots = sorted({c.key for ch in q.channels.values() for c in ch}, key=fusion.tie_break_key)
            got = [slots[s][1] for s in order[qi, : n_hits[qi]]]
            if want != got:
                raise AssertionError(f"replay differs from admission.fuse for {p} on {q.qid}: {got} vs {want}")
            checked += 1
    return checked


# ---------------------------------------------------------------------------- families

TERMS = (1, 2, 3, 4)
COVERAGE = (0.0, 0.2, 0.25, 0.3, 0.34, 0.4, 0.5, 0.6, 0.75, 1.0)
COSINE = tuple(np.round(np.arange(0.20, 0.76, 0.025), 3))
CENTRED = tuple(np.round(np.arange(0.05, 0.51, 0.02), 3))
MAXSIM = tuple(np.round(np.arange(0.30, 0.81, 0.025), 3))
GATE = tuple(np.round(np.arange(0.10, 0.41, 0.03), 3))


def family_grid(name: str) -> list[tuple[AdmissionPolicy, float | None]]:
    """(policy, maxsim threshold) points of one family."""
    fts = [dict(fts_min_terms=t, fts_min_coverage=c) for t, c in itertools.product(TERMS, COVERAGE)]
    out: list[tuple[AdmissionPolicy, float | None]] = []
    if name == "floors":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=x), None) for f in fts for x in COSINE]
    elif name == "centred":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=-1.0, vector_min_centred=x), None) for f in fts for x in CENTRED]
    elif name == "centred+xs":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=-1.0, vector_min_centred=x, cross_script_min_terms=s), None)
               for f in fts for x in CENTRED for s in (1, 2, 3)]
    elif name == "centred+xs+refuse":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=-1.0, vector_min_centred=x, cross_script_min_terms=s,
                                vector_uncovered="refuse"), None)
               for f in fts for x in CENTRED for s in (1, 2, 3)]
    elif name == "centred+xs+gate":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=-1.0, vector_min_centred=x, cross_script_min_terms=2,
                                gate_signal="centred", gate_min=g), None)
               for f in fts for x in CENTRED for g in GATE if g <= x]
    elif name == "centred+xs+refuse+gate":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=-1.0, vector_min_centred=x, cross_script_min_terms=2,
                                vector_uncovered="refuse", gate_signal="centred", gate_min=g), None)
               for f in fts for x in CENTRED for g in GATE if g <= x]
    elif name == "floors+xs+refuse":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=x, cross_script_min_terms=2, vector_uncovered="refuse"), None)
               for f in fts for x in COSINE]
    elif name == "maxsim":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=-1.0), m) for f in fts for m in MAXSIM]
    elif name == "maxsim+xs+refuse":
        out = [(AdmissionPolicy.floors(**f, vector_min_cosine=-1.0, cross_script_min_terms=2, vector_uncovered="refuse"), m)
               for f in fts for m in MAXSIM]
    else:
        raise ValueError(name)
    return out


FAMILIES = ("floors", "centred", "centred+xs", "centred+xs+refuse", "centred+xs+gate", "centred+xs+refuse+gate",
            "floors+xs+refuse",
            "maxsim", "maxsim+xs+refuse")


RFC_QUERY = "Which build and verification conventions should I know before editing documentation?"
RFC_ENTRY = ("Validation convention: run make test for routine code changes; prefer make docs-test for "
             "documentation-only changes; run make check before review.")


def admits_rfc_scenario(p: AdmissionPolicy, version: str) -> bool:
    """Does the FTS rule admit the RFC scenario's answer (mem_ent_02B v2) to its query?"""
    an = analyzer.get(version)
    terms = an.query_terms(RFC_QUERY)
    stored = set(an.tokens(RFC_ENTRY))
    return sum(t in stored for t in terms) >= p.required_terms(len(terms))


def fts_mode_grid(version: str) -> list[tuple[AdmissionPolicy, None]]:
    """The floors an fts-only search uses (no vector channel), constrained to admit the
    RFC scenario's answer: in fts mode they are all the evidence a hit has."""
    out = [(AdmissionPolicy.floors(fts_min_terms=t, fts_min_coverage=c, cross_script_min_terms=x), None)
           for t, c in itertools.product(TERMS, COVERAGE) for x in (None, 1, 2, 3)]
    return [(p, m) for p, m in out if admits_rfc_scenario(p, version)]


def sweep(table: Table, grid, mode: str = "hybrid"):
    """Per point: per-query nDCG and any-hit arrays."""
    nd, hit = [], []
    for p, ms in grid:
        a, b, _, _ = table.evaluate(p, ms, mode)
        nd.append(a)
        hit.append(b)
    return np.array(nd), np.array(hit)


OBJECTIVE = "pooled"
TUNING_BOUNDS = tuple(np.round(np.arange(BOUND, 0.149, -0.01), 2))


def tune(table: Table, nd: np.ndarray, hit: np.ndarray, sel: np.ndarray, bound: float = BOUND) -> int:
    """Index of the best nDCG@10 point on ``sel`` whose false-admission rate is ≤ BOUND
    (ties: lower FAR). ``OBJECTIVE`` "pooled" bounds FAR over all tuning queries;
    "per-corpus" bounds it on every tuning corpus separately — a rule that must hold on
    each corpus it saw is likelier to hold on one it did not."""
    pos, neg = sel & table.positive, sel & ~table.positive
    n = nd[:, pos].mean(1)
    far = hit[:, neg].mean(1) if neg.any() else np.zeros(len(nd))
    if OBJECTIVE == "per-corpus":
        corpora = np.array([q.corpus for q in table.queries])
        for c in np.unique(corpora[neg]):
            far = np.maximum(far, hit[:, neg & (corpora == c)].mean(1))
    ok = far <= bound + 1e-12
    if not ok.any():
        return int(np.argmin(far))
    key = np.where(ok, n - 1e-6 * far, -np.inf)
    return int(np.argmax(key))


def bootstrap_diff(a: np.ndarray, b: np.ndarray, rng, n: int = 2000) -> tuple[float, float]:
    idx = rng.integers(0, len(a), size=(n, len(a)))
    d = (a[idx] - b[idx]).mean(1)
    return float(np.percentile(d, 2.5)), float(np.percentile(d, 97.5))


def label(p: AdmissionPolicy, ms: float | None) -> str:
    parts = [f"terms≥{p.fts_min_terms} cov≥{p.fts_min_coverage:g}"]
    if ms is not None:
        parts.append(f"maxsim≥{ms:g}")
    elif p.vector_min_centred is not None:
        parts.append(f"centred≥{p.vector_min_centred:g}")
    else:
        parts.append(f"cos≥{p.vector_min_cosine:g}")
    if p.cross_script_min_terms is not None:
        parts.append(f"xs≥{p.cross_script_min_terms}")
    if p.gate_min is not None:
        parts.append(f"gate {p.gate_signal}≥{p.gate_min:g}")
    if p.vector_uncovered != "admit":
        parts.append(f"uncovered={p.vector_uncovered}")
    return " ".join(parts)


def auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(answerable query's signal > unanswerable query's), ties half."""
    if not len(pos) or not len(neg):
        return math.nan
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


# ---------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="*", default=None)
    ap.add_argument("--out", default=str(ROOT / "results" / "admission_study"))
    ap.add_argument("--families", nargs="*", default=list(FAMILIES))
    ap.add_argument("--objective", choices=("pooled", "per-corpus"), default="per-corpus")
    ap.add_argument("--rfc-scenario", action="store_true",
                    help="only policies whose FTS rule admits the RFC scenario's answer (a requirement of the default)")
    ap.add_argument("--calibrate-bound", action="store_true",
                    help="tune the bundled default at the loosest bound whose leave-one-out FAR stays ≤ 0.30 on every "
                         "held-out corpus (an experiment: it costs nDCG and does not keep the test FAR lower)")
    args = ap.parse_args()
    global OBJECTIVE
    OBJECTIVE = args.objective
    suffix = OBJECTIVE + ("-rfc" if args.rfc_scenario else "") + ("-calibrated" if args.calibrate_bound else "")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    folders = [Path(d) for d in args.datasets] if args.datasets else sorted(
        p for p in (ROOT / "datasets").iterdir() if (p / "memories.jsonl").is_file())
    corpora = [read_corpus(f) for f in folders]
    names = [c["name"] for c in corpora]
    start = time.perf_counter()
    model = MiniLM(out / "embeddings.pkl")
    model.prefetch([e["text"].strip() for c in corpora for e in c["active"]] + [q["text"] for c in corpora for q in c["queries"]])
    print(f"embedded in {time.perf_counter() - start:.1f}s")
    rng = np.random.default_rng(12)
    rows, loo_rows, chosen = [], [], {}
    per_query: dict[tuple, np.ndarray] = {}
    for version in ("v1", "v2"):
        cached = out / f"candidates_{version}.pkl"
        if cached.is_file():
            queries = pd.read_pickle(cached)
        else:
            queries = [q for c in corpora for q in retrieve(c, version, model)]
            pd.to_pickle(queries, cached)
        table = Table(queries)
        corpus_of = np.array([q.corpus for q in queries])
        split = np.array([q.split for q in queries])
        checked = check_against_library(table, [AdmissionPolicy.floors(), AdmissionPolicy.rfc_initial(),
                                                AdmissionPolicy.floors(2, 0.2, -1.0, vector_min_centred=0.25,
                                                                cross_script_min_terms=2, vector_uncovered="refuse"),
                                                AdmissionPolicy.floors(3, 0.3, -1.0, vector_min_centred=0.2, gate_min=0.15)], rng)
        print(f"[{version}] replay equals admission.fuse on {checked} sampled (policy, query) pairs")
        # signal separability: best signal of each query, answerable vs unanswerable
        for sig, arr in (("cosine", table.cos), ("centred", table.cen), ("maxsim", table.ms)):
            best = np.nanmax(arr, 1)
            for c in names:
                sel = corpus_of == c
                rows.append(dict(kind="auc", analyzer=version, signal=sig, corpus=c,
                                 value=auc(best[sel & table.positive], best[sel & ~table.positive])))
        for fam in args.families:
            grid = family_grid(fam)
            if args.rfc_scenario:
                grid = [(p, m) for p, m in grid if admits_rfc_scenario(p, version)]
            t0 = time.perf_counter()
            nd, hit = sweep(table, grid)
            secs = time.perf_counter() - t0
            # The tuning bound that transfers: the loosest bound at which rules tuned on
            # the other corpora keep FAR ≤ BOUND on every corpus left out. A
            # best-of-grid pick sits on the edge of the bound it was tuned at and lands
            # above it on unseen queries; this measures how far, without a test split.
            tuned_at = BOUND
            for b in TUNING_BOUNDS if args.calibrate_bound else ():
                held = [metrics(table, corpus_of == c, *(lambda i: (nd[i], hit[i]))(tune(table, nd, hit, corpus_of != c, b)))["far"]
                        for c in names]
                if max(held) <= BOUND + 1e-12:
                    tuned_at = b
                    break
            # bundled test: tune on every dev split, report on the test splits
            dev, test = split == "dev", split == "test"
            i = tune(table, nd, hit, dev, tuned_at)
            m = metrics(table, test, nd[i], hit[i]) | dict(tuned_at=tuned_at)
            chosen[(version, fam)] = grid[i]
            per_query[(version, fam, "test")] = nd[i]
            rows.append(dict(kind="bundled-test", analyzer=version, family=fam, policy=label(*grid[i]), points=len(grid),
                             seconds=round(secs, 1), **m))
            for c in names:
                inc = corpus_of == c
                i_in = tune(table, nd, hit, inc & dev)
                m_in = metrics(table, inc & test, nd[i_in], hit[i_in])
                i_out = tune(table, nd, hit, ~inc)
                m_out = metrics(table, inc, nd[i_out], hit[i_out])
                per_query[(version, fam, c)] = nd[i_out]
                loo_rows.append(dict(analyzer=version, family=fam, corpus=c,
                                     in_ndcg=m_in["ndcg"], in_far=m_in["far"], in_pos_empty=m_in["pos_empty"],
                                     loo_ndcg=m_out["ndcg"], loo_far=m_out["far"], loo_pos_empty=m_out["pos_empty"],
                                     loo_policy=label(*grid[i_out])))
            print(f"[{version}] {fam}: {len(grid)} points in {secs:.1f}s; test {m}")
        # fts-only mode: the floors a search without the vector channel uses
        grid = fts_mode_grid(version)
        nd, hit = sweep(table, grid, mode="fts")
        dev, test = split == "dev", split == "test"
        i = tune(table, nd, hit, dev)
        rows.append(dict(kind="fts-mode", analyzer=version, family="fts floors (RFC scenario admitted)",
                         policy=label(*grid[i]).split(" cos")[0], points=len(grid), **metrics(table, test, nd[i], hit[i])))
        for c in names:
            inc = corpus_of == c
            i_out = tune(table, nd, hit, ~inc)
            m_out = metrics(table, inc, nd[i_out], hit[i_out])
            rows.append(dict(kind="fts-mode-loo", analyzer=version, family="fts floors", corpus=c,
                             policy=label(*grid[i_out]).split(" cos")[0], **m_out))
        for name, p in (("rfc-initial", AdmissionPolicy.rfc_initial()), ("default-3/0.30/0.50", AdmissionPolicy.floors())):
            nd1, hit1, _, _ = table.evaluate(p, mode="fts")
            rows.append(dict(kind="fts-mode", analyzer=version, family=name, policy=label(p, None).split(" cos")[0],
                             **metrics(table, split == "test", nd1, hit1)))
        # the RFC's and today's defaults as named points
        for name, p in (("rfc-initial", AdmissionPolicy.rfc_initial()), ("default-3/0.30/0.50", AdmissionPolicy.floors())):
            nd, hit, _, _ = table.evaluate(p)
            rows.append(dict(kind="bundled-test", analyzer=version, family=name, policy=label(p, None),
                             **metrics(table, split == "test", nd, hit)))
            for c in names:
                m = metrics(table, corpus_of == c, nd, hit)
                loo_rows.append(dict(analyzer=version, family=name, corpus=c, loo_ndcg=m["ndcg"], loo_far=m["far"],
                                     loo_pos_empty=m["pos_empty"], loo_policy=label(p, None)))
    loo = pd.DataFrame(loo_rows)
    # paired bootstrap: each family vs the best family per held-out corpus (same analyzer)
    cis = []
    for version in ("v1", "v2"):
        for c in names:
            sub = loo[(loo.analyzer == version) & (loo.corpus == c) & loo.family.isin(args.families)]
            best = sub.sort_values("loo_ndcg").iloc[-1]["family"]
            mask = (corpus_of == c) & table.positive
            for fam in sub.family:
                lo, hi = bootstrap_diff(per_query[(version, fam, c)][mask], per_query[(version, best, c)][mask], rng)
                cis.append(dict(analyzer=version, corpus=c, family=fam, vs=best, diff_lo=lo, diff_hi=hi))
    loo = loo.merge(pd.DataFrame(cis), on=["analyzer", "corpus", "family"], how="left")
    summary = pd.DataFrame(rows)
    loo.to_csv(out / f"leave_one_out_{suffix}.csv", index=False)
    summary.to_csv(out / f"summary_{suffix}.csv", index=False)
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", 70)
    print(summary[summary.kind == "auc"].pivot_table(index=["analyzer", "signal"], columns="corpus", values="value").round(3))
    print(summary[summary.kind.isin(["fts-mode", "fts-mode-loo"])][["kind", "analyzer", "family", "corpus", "policy",
                                                                    "ndcg", "far", "pos_empty"]].round(3).to_string())
    print(summary[summary.kind == "bundled-test"][["analyzer", "family", "policy", "tuned_at", "ndcg", "far", "pos_empty"]].round(3).to_string())
    table = loo.pivot_table(index=["analyzer", "family"], columns="corpus", values=["loo_ndcg", "loo_far"]).round(3)
    table[("mean_loo_ndcg", "")] = loo.pivot_table(index=["analyzer", "family"], columns="corpus",
                                                   values="loo_ndcg").mean(axis=1).round(3)
    print(table.sort_values(("mean_loo_ndcg", ""), ascending=False).to_string())
    print(loo[["analyzer", "family", "corpus", "in_ndcg", "in_far", "loo_ndcg", "loo_far", "loo_policy"]].round(3).to_string())


if __name__ == "__main__":
    main()
