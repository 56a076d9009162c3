"""The seam that makes the harness honest: a sweep point (array replay over candidates
retrieved ONCE with a wide pool) equals an online ``MemoryService.search`` with that
policy and limit — same hits, order, scores, channels — on SQLite and on the real
local OceanBase, in fts, vector and hybrid mode.

One bundled corpus (atlas-etl, all 229 entries, so pools overflow and get truncated)
with a stratified sample of its queries; vectors come from the real all-MiniLM-L6-v2
(the session-scoped ``minilm`` fixture), the model users run. Every policy × limit ×
mode asks the same sampled questions again, so the model is wrapped in
``RememberedCalls``: a repeated question gets the vectors the model gave it the first
time instead of ~20 ms of CPU per search (about 1,000 of them per database).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pandas as pd
from powercontext.eval.corpora.datasets import load
from powercontext.eval.running.loader import load_corpus
from powercontext.eval.running.retrieval import (
    CANDIDATE_COLUMNS,
    QUERY_COLUMNS,
    read_cache,
    retrieve_corpus,
    write_cache,
)
from powercontext.eval.scoring.sweep import INITIAL, Replay

from powercontext.canonical import SequentialIds
from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

from ..remembered import RememberedCalls

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
MODES = ("fts", "vector", "hybrid")
MAX_LIMIT = 10  # cached pool: 40 rows per channel; limits ≤ 8 search with a pool of 32


def sample_queries(corpus, n: int = 22):
    """Every tag represented, then evenly spaced queries up to ``n``."""
    chosen = {}
    for tag in ("negative", "forgotten", "hard-negative", "multi", "cjk", "cross-lingual", "stale", "paraphrase"):
        q = next(q for q in corpus.queries if tag in q.tags)
        chosen[q.id] = q
    for q in corpus.queries[:: max(1, len(corpus.queries) // n)]:
        if len(chosen) >= n:
            break
        chosen.setdefault(q.id, q)
    assert any(len(q.memories) > 1 for q in corpus.queries)
    two = next(q for q in corpus.queries if len(q.memories) > 1)
    chosen.setdefault(two.id, two)
    return tuple(chosen.values())


def points():
    """The RFC's floors and every admission family: the library default (centred cosine,
    cross-script, coverage refusal, hybrid floors), a whole-query gate on each signal,
    an uncovered re-threshold, a centred rule with a raw floor."""
    rng = random.Random(6)
    out = [(INITIAL, 8), (NO_ADMISSION, 10), (NO_ADMISSION, 3), (AdmissionPolicy.floors(3, 0.5, 0.7), 5),
           (AdmissionPolicy(), 8), (AdmissionPolicy(), 3), (AdmissionPolicy(gate_min=0.25), 8),
           (AdmissionPolicy(gate_signal="coverage", gate_min=0.4), 5),
           (AdmissionPolicy.floors(2, 0.25, 0.45, cross_script_min_terms=1, vector_uncovered=0.6), 8),
           (AdmissionPolicy(vector_min_cosine=0.4, vector_min_centred=0.2, vector_uncovered=0.35), 10),
           # the answerability families (issue 34): support floors on both channels, the NQC gate
           (AdmissionPolicy(vector_min_support=0.4, fts_min_support=0.3), 8),
           (AdmissionPolicy(gate_signal="spread", gate_min=0.02), 8)]
    for _ in range(5):
        out.append((AdmissionPolicy.floors(rng.randint(1, 4), rng.choice([0.0, 0.2, 0.25, 0.34, 0.5]),
                                           round(rng.uniform(0.3, 0.8), 2)), rng.choice([1, 5, 8, 10])))
    # admission in probability units (issue 46): the shipped MiniLM calibration's
    # probability replaces the raw rules, on its own and over another family
    prob_rng = random.Random(46)
    out += [(AdmissionPolicy(min_probability=0.5), 8), (AdmissionPolicy(min_probability=0.5), 3)]
    for _ in range(4):
        base = prob_rng.choice([AdmissionPolicy(), INITIAL, AdmissionPolicy(gate_min=0.2)])
        out.append((dataclasses.replace(base, min_probability=round(prob_rng.uniform(0.02, 0.9), 3)),
                    prob_rng.choice([1, 5, 8, 10])))
    return out


async def test_sweep_points_equal_online_search(open_service, backend_name, tmp_path, minilm):
    corpus = load(DATASETS / "atlas-etl")
    model = RememberedCalls(minilm)
    svc = await open_service(embedding=model, ids=SequentialIds("atl"))
    loaded = await load_corpus(svc, corpus)
    subset = dataclasses.replace(loaded, corpus=dataclasses.replace(corpus, queries=sample_queries(corpus)))
    cand_rows, query_rows, _ = await retrieve_corpus(svc, backend_name, subset, MODES, MAX_LIMIT)
    # through the on-disk cache, as a sweep would read it
    write_cache(tmp_path, pd.DataFrame(cand_rows, columns=CANDIDATE_COLUMNS),
                pd.DataFrame(query_rows, columns=QUERY_COLUMNS), {})
    candidates, retrievals, _ = read_cache(tmp_path)
    qrels = {q.id: dict(q.judgements) for q in subset.corpus.queries}
    truncated = admitted = rejected = 0
    for mode in MODES:
        retr = retrievals[retrievals["mode"] == mode]
        # hybrid: a candidate's probability depends on what both pools hold (the hybrid
        # cell), so the replay re-annotates per pool with the service's artefact, as the harness does
        replay = Replay.build(candidates[candidates["mode"] == mode], retr, qrels, mode, min_width=MAX_LIMIT,
                              calibration=svc.calibration if mode == "hybrid" else None)
        truncated += int((retr[["n_fts", "n_vector"]].max(axis=1) > 32).sum())
        for policy, limit in points():
            offline = replay.hits(policy, limit)
            for q in subset.corpus.queries:
                online = await svc.search(q.text, subset.refs(q.memories), limit=limit, mode=mode, policy=policy)
                assert online.mode == mode
                assert offline[q.id] == online.hits, (backend_name, mode, q.id, policy, limit)
                admitted += len(online.hits)
                rejected += len(online.hits) < limit
    assert truncated > 0  # the cached pool (40) is wider than a limit-8 search's (32): prefixes are exercised
    assert admitted > 0 and rejected > 0
    assert model.repeated > 10 * model.computed  # the searches repeated the retrieval's calls
    # the families' signals are really there to decide on: cross-script FTS candidates,
    # vector candidates outside the profile's scripts, centred cosines
    fts = candidates[candidates["channel"] == "fts"]
    assert ((fts["script"] != fts["query_script"]) & fts["script"].isin(["latin", "cjk"])
            & fts["query_script"].isin(["latin", "cjk"])).any()
    vec = candidates[candidates["channel"] == "vector"]
    assert (vec["covered"] == False).any() and vec["centred"].notna().all()  # noqa: E712
    # the calibrated probability is cached with the pool, on both channels, per language pair
    assert vec["probability"].notna().all() and fts["probability"].notna().all()
    assert vec["calibration_cell"].str.contains("latin>cjk|cjk>latin").any()
