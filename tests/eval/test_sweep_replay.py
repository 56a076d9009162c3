"""The array replay (eval/scoring/sweep.py) equals ``admission.fuse`` — same hits, order,
scores (bit for bit), channels — over many random policies and limits, on synthetic
candidate lists built to hit every corner: ties in cosine and in RRF score, repeated
rows, queries without terms, lists longer than the pool."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pandas as pd
import pytest

from powercontext.eval.scoring import metrics as M
from powercontext.eval.running.retrieval import CANDIDATE_COLUMNS, channels_of
from powercontext.eval.scoring.sweep import INITIAL, Grid, Replay, point_values
from powercontext.memory import admission
from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

MODES = ("fts", "vector", "hybrid")


def synthetic(seed: int = 7, queries: int = 40):
    rng = random.Random(seed)
    # the calibrated probability (sometimes missing: raw rules decide), from its own
    # generator so the other signals stay what the corners below were built on
    prob_rng = random.Random(seed + 1)
    entries = [(f"mem_art_{m}", f"mem_ent_{m}{i:03d}", f"mem_ver_{m}{i:03d}", f"syn-{m}{i:03d}")
               for m in ("a", "b") for i in range(30)]
    rows, qrows, qrels = [], [], {}
    for qn in range(queries):
        qid = f"syn-q{qn:03d}"
        n = rng.choice([0, 1, 2, 3, 4, 5, 6, 8, 11])
        query_script = rng.choice(["latin", "latin", "cjk", "none"])
        qrows.append(dict(query_id=qid, query_term_count=n))
        judged = rng.sample(entries, rng.randint(0, 4))
        qrels[qid] = {e[3]: rng.randint(1, 3) for e in judged}
        for mode in MODES:
            for channel in ("fts", "vector"):
                if channel not in {"fts": ("fts",), "vector": ("vector",), "hybrid": ("fts", "vector")}[mode]:
                    continue
                picks = rng.sample(entries, rng.randint(0, 40))
                if picks and rng.random() < 0.3:  # a backend repeating a row
                    picks.insert(rng.randrange(len(picks) + 1), rng.choice(picks))
                # full-text pool order: a permutation unrelated to rank, so a smaller pool
                # is not a prefix (backends/retrieval.fts_pool)
                places = rng.sample(range(len(picks)), len(picks))
                for rank, (art, ent, ver, cid) in enumerate(picks, start=1):
                    matched = rng.randint(0, n) if channel == "fts" else 0
                    # (no None cosine: admission.decide cannot format one; backends always set it)
                    cosine = None if channel == "fts" else round(rng.uniform(-0.2, 0.9), 2)
                    # the families' signals: centred cosine (sometimes unmeasured), scripts, coverage
                    centred = (None if channel == "fts" or rng.random() < 0.05
                               else round(cosine - rng.uniform(0.0, 0.4), 2))
                    script = rng.choice(["latin", "latin", "cjk", "none", None])
                    covered = None if channel == "fts" else rng.choice([True, True, False, None])
                    # the support signal: exactly 0 (a paraphrase), unmeasured (vector mode), or a share
                    support = (None if mode == "vector" or rng.random() < 0.05
                               else rng.choice([0.0, round(rng.random(), 2), round(rng.random(), 3)]))
                    rows.append(dict(
                        backend="syn", corpus="syn", mode=mode, query_id=qid, channel=channel, rank=rank,
                        memory="repo", memory_artifact_id=art, memory_revision=3, entry_id=ent, entry_version_id=ver,
                        entry_content_hash="0" * 64, kind="fact", text=f"text of {ent}", corpus_entry=cid,
                        matched_terms=tuple(f"t{i}" for i in range(matched)), matched=matched, query_term_count=n,
                        coverage=matched / n if n else 0.0, cosine=cosine, centred=centred, script=script,
                        query_script=query_script, covered=covered,
                        pool_rank=places[rank - 1] if channel == "fts" else None, support=support,
                        probability=None if prob_rng.random() < 0.2 else round(prob_rng.random(), 2),
                        calibration_cell="syn (n=99)"))
    return pd.DataFrame(rows, columns=CANDIDATE_COLUMNS), pd.DataFrame(qrows), qrels


@pytest.fixture(scope="module")
def data():
    return synthetic()


def random_policies(rng: random.Random, n: int):
    """Floors and every family: centred cosine (with and without a raw floor),
    cross-script terms, uncovered refused / re-thresholded, gates on each signal,
    hybrid floors; and on top of any of them a random ``min_probability`` (issue 46)."""
    prob_rng = random.Random(rng.random())
    out = [(INITIAL, 8), (NO_ADMISSION, 10), (NO_ADMISSION, 1), (AdmissionPolicy(), 3), (AdmissionPolicy(), 8)]
    coverages = [0.0, 0.1, 0.2, 0.25, 0.3, 1 / 3, 0.5, 0.75, 1.0]
    for i in range(n):
        family = i % 2 == 1
        policy = AdmissionPolicy.floors(
            fts_min_terms=rng.randint(1, 5),
            fts_min_coverage=rng.choice([*coverages, round(rng.random(), 3)]),
            vector_min_cosine=rng.choice([-1.0, round(rng.uniform(-0.2, 0.9), 2), round(rng.uniform(-0.2, 0.9), 4)]),
            rrf_k=rng.choice([60, 60, 60, 0, 1, 10]),
            **({} if not family else dict(
                vector_min_centred=rng.choice([None, round(rng.uniform(-0.2, 0.6), 2)]),
                cross_script_min_terms=rng.choice([None, 1, 2, 3]),
                vector_uncovered=rng.choice(["admit", "refuse", round(rng.uniform(0.0, 0.8), 2)]),
                gate_signal=(signal := rng.choice(["centred", "cosine", "coverage", "spread"])),
                gate_min=rng.choice([None, round(rng.uniform(0.0, 0.3), 3) if signal == "spread"
                                     else round(rng.uniform(-0.1, 0.7), 2)]),
                vector_min_support=rng.choice([None, None, round(rng.uniform(0.0, 0.8), 2)]),
                fts_min_support=rng.choice([None, None, round(rng.uniform(0.0, 0.8), 2)]),
                hybrid_fts_min_terms=rng.choice([None, rng.randint(1, 5)]),
                hybrid_fts_min_coverage=rng.choice([None, *coverages]))),
        )
        limit = rng.choice([1, 2, 3, 5, 8, 10])
        threshold = prob_rng.choice([None, 0.0, 0.5, round(prob_rng.random(), 2), round(prob_rng.random(), 3)])
        out.append((dataclasses.replace(policy, min_probability=threshold), limit))
    return out


@pytest.mark.parametrize("mode", MODES)
def test_replay_hits_equal_admission_fuse_for_random_policies(data, mode):
    cands, queries, qrels = data
    sub = cands[cands["mode"] == mode]
    replay = Replay.build(sub, queries, qrels, mode, min_width=10)
    by_query = {q: g for q, g in sub.groupby("query_id")}
    rng = random.Random(hash(mode) % 1000)
    compared = admitted = 0
    for policy, limit in random_policies(rng, 60):
        offline = replay.hits(policy, limit)
        for qid in queries["query_id"]:
            channels = channels_of(by_query.get(qid, sub.iloc[0:0]), mode)
            pool = {name: admission.within_pool(c, policy.pool_size(limit)) for name, c in channels.items()}
            online = admission.fuse(pool, policy, limit)
            assert offline[qid] == online, (mode, qid, policy, limit)
            compared += 1
            admitted += len(online)
    assert compared == 65 * len(queries)
    assert admitted > 0


def test_rrf_ties_and_repeated_rows_are_really_exercised(data):
    """The synthetic data must contain what the equality test claims to cover."""
    cands, queries, qrels = data
    hybrid = cands[cands["mode"] == "hybrid"]
    assert hybrid.duplicated(["query_id", "channel", "entry_id"]).any()
    assert hybrid[hybrid["channel"] == "vector"]["cosine"].duplicated().any()
    assert (queries["query_term_count"] == 0).any()
    replay = Replay.build(hybrid, queries, qrels, "hybrid", min_width=10)
    hits = replay.hits(NO_ADMISSION, 10)
    scores = [h.score for hs in hits.values() for h in hs]
    assert len(scores) != len(set(scores))  # equal RRF scores, ordered by the tie-break key
    assert any(h.matched_by == ("fts", "vector") for hs in hits.values() for h in hs)


@pytest.mark.parametrize("mode", MODES)
def test_evaluate_equals_metrics_of_the_hits(data, mode):
    """Per-query metrics from the grouped rows equal row_metrics of each policy's hits."""
    cands, queries, qrels = data
    replay = Replay.build(cands[cands["mode"] == mode], queries, qrels, mode, min_width=10)
    policies = [INITIAL, NO_ADMISSION, AdmissionPolicy.floors(3, 0.5, 0.4), AdmissionPolicy.floors(1, 0.0, 0.6),
                AdmissionPolicy(), AdmissionPolicy(gate_min=0.1)]
    limits = [1, 5, 8, 10]
    values = replay.evaluate(policies, limits)
    for p, policy in enumerate(policies):
        for j, limit in enumerate(limits):
            ranking = replay.ranking(policy, limit)
            for qi, qid in enumerate(replay.query_ids):
                grades = [qrels[qid].get(e, 0) for e in ranking[qid]] + [0] * limit
                judged = list(qrels[qid].values())
                expected = M.row_metrics(np.array([grades[:limit]]), np.array([len(ranking[qid])]),
                                         np.array([len(judged)]), np.array([M.idcg(judged)]), limit)
                for name, v in expected.items():
                    assert values[name][p, j, qi] == pytest.approx(v[0], abs=1e-12), (name, policy, limit, qid)


def test_aggregate_is_the_mean_over_each_metric_population(data):
    cands, queries, qrels = data
    replay = Replay.build(cands[cands["mode"] == "hybrid"], queries, qrels, "hybrid", min_width=10)
    policies = [INITIAL, NO_ADMISSION]
    half = (np.arange(len(queries)) % 2 == 0).astype(float)
    groups = np.stack([np.ones(len(queries)), half], 1)
    agg = replay.aggregate(policies, [8], groups)
    per_query = replay.evaluate(policies, [8])
    positive = replay.n_rel > 0
    for m in M.METRICS:
        mask = {"positive": positive, "empty": ~positive, "all": np.ones_like(positive)}[m.population]
        for g in range(2):
            sel = mask & (groups[:, g] == 1)
            expected = per_query[m.name][0, 0][sel].mean()
            assert agg[m.name][0, 0, g] == pytest.approx(expected, abs=1e-12), m.name
    assert agg["n_positive"][0] == positive.sum() and agg["n_empty"][0] == (~positive).sum()


def test_policies_admitting_the_same_sets_share_a_ranking_row(data):
    cands, queries, qrels = data
    replay = Replay.build(cands[cands["mode"] == "fts"], queries, qrels, "fts", min_width=10)
    policies = Grid().policies("fts")
    q_row, _, _, row_of = replay._rows(policies, 32)
    assert row_of.shape == (len(policies), len(queries))
    assert len(q_row) < len(policies) * len(queries) / 4  # the grouping is what makes a sweep cheap


def test_grid_always_contains_the_initial_constants_and_no_admission():
    grid = Grid(fts_min_terms=(3,), fts_min_coverage=(0.5,), vector_min_cosine=(0.6,), limits=(8,), families=("floors",))
    hybrid = grid.policies("hybrid")
    assert INITIAL in hybrid and NO_ADMISSION in hybrid
    assert grid.size("hybrid") == len(hybrid) == 3 * 3 * 3  # terms {1,2,3} × cov {0,.25,.5} × cos {-1,.3,.6}
    assert point_values(INITIAL, "fts", 8)["vector_min_cosine"] != point_values(INITIAL, "fts", 8)["vector_min_cosine"]
    assert point_values(INITIAL, "vector", 8)["vector_min_cosine"] == 0.30


def test_the_family_grid_holds_the_library_default_and_varies_what_each_mode_reads():
    grid = Grid(fts_min_terms=(3, 4), fts_min_coverage=(0.3, 0.34), vector_min_cosine=(0.5,), limits=(8,),
                families=("floors", "centred+cross-script+coverage"), vector_min_centred=(0.28, 0.31))
    default = AdmissionPolicy()
    fam = "centred+cross-script+coverage"
    hybrid = grid.family_policies(fam, "hybrid")
    assert default in hybrid  # hybrid floors 4 / 0.34 beside centred 0.31, fts-only floors at their default
    assert {p.fts_floors() for p in hybrid} == {(3, 0.30)}
    assert len(hybrid) == 4 * 4 * 2  # terms {1,2,3,4} × coverage {0,.25,.3,.34} (the named policies add theirs) × centred
    assert {p.vector_min_centred for p in grid.family_policies(fam, "vector")} == {0.28, 0.31}
    assert {(p.fts_min_terms, p.fts_min_coverage) for p in grid.family_policies(fam, "fts")} >= {(3, 0.30), (4, 0.34)}
    v = point_values(default, "hybrid", 8)
    assert (v["family"], v["hybrid_fts_min_terms"], v["hybrid_fts_min_coverage"], v["vector_min_centred"],
            v["cross_script_min_terms"], v["vector_uncovered"]) == (fam, 4, 0.34, 0.31, 2, "refuse")
    assert v["fts_min_terms"] != v["fts_min_terms"]  # NaN: hybrid reads the hybrid floors
    assert point_values(default, "fts", 8)["fts_min_terms"] == 3
    assert point_values(INITIAL, "hybrid", 8)["family"] == "floors"
    with pytest.raises(ValueError, match="unknown admission family"):
        Grid(families=("centred+magic",))


def test_the_probability_family_sweeps_its_one_threshold_and_reads_back_from_a_sweep_row():
    from powercontext.eval.scoring.grid import policy_from

    grid = Grid(families=("floors+probability",), min_probability=(0.2, 0.5))
    for mode in MODES:
        policies = grid.policies(mode)
        assert [p.min_probability for p in policies] == [0.2, 0.5]
        for policy in policies:
            values = point_values(policy, mode, 8)
            assert values["family"] == "floors+probability" and values["min_probability"] == policy.min_probability
            back = policy_from(values, mode)
            assert back.min_probability == policy.min_probability and back.family.endswith("probability")
            assert back.fts_floors(mode == "hybrid") == policy.fts_floors(mode == "hybrid")
