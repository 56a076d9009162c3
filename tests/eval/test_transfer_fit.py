"""Leave-one-corpus-out per family (eval/scoring/transfer.py) and fitting a policy on your own
labels (harness.fit): two small corpora swept on SQLite, checked against the sweep
table they are read from and against a replay of the policy fitted."""

from __future__ import annotations

import json

import numpy as np
import pytest

import powercontext as pc
from powercontext.eval import harness
from powercontext.eval.errors import EvalError
from powercontext.eval.scoring.recommend import Objective, choose, point_rows
from powercontext.eval.scoring.grid import family_of, policy_label
from powercontext.eval.scoring.sweep import Grid

from .fakes import ENTRIES, QRELS, QUERIES, HashEmbedding, write_corpus

GRID = Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.2, 0.4, 0.6), (1, 8), families=("floors", "centred+cross-script+coverage"),
            vector_min_centred=(0.05, 0.15, 0.25))


def renamed(prefix: str):
    """The tiny corpus under other ids (corpora swept together need distinct query ids)."""
    swap = lambda v: json.loads(json.dumps(v).replace("tny-", f"{prefix}-"))  # noqa: E731
    return swap(ENTRIES), swap(QUERIES), [tuple(swap(list(r))) for r in QRELS]


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    root = tmp_path_factory.mktemp("loo")
    a = write_corpus(root / "datasets" / "tiny")
    b = write_corpus(root / "datasets" / "twin", *renamed("twn"))
    result = harness.sweep([a, b], backends=("sqlite",), modes=("fts", "hybrid"), grid=GRID, out=root / "run",
                           embedding=HashEmbedding(), embedding_cache=root / "emb", progress=False, write=True,
                           full_grid=True)  # the tests below re-choose from every per-corpus point
    return result, root


def test_each_family_is_tuned_on_the_other_corpus_and_scored_on_the_one_left_out(two):
    result, root = two
    loo, o = result.transfer, result.objective
    tuned = loo[loo["tuned"]]
    assert set(tuned["family"]) == set(GRID.families) and set(loo["corpus"]) == {"tiny", "twin"}
    assert {"default (not tuned)", "initial (not tuned)"} <= set(loo["family"])
    for r in tuned.itertuples():
        other = "twin" if r.corpus == "tiny" else "tiny"
        assert r.tuned_on == other
        # the same choice the recommender makes on the other corpus alone, within the family
        sweep = result.sweep
        alone = sweep[sweep["corpus"] == other].assign(corpus="all")
        policy = choose(alone, r.mode, Objective(bound=o.bound, split="all", limit=o.limit), families=[r.family]).policy
        assert r.policy == policy_label(policy, r.mode)
        # … and its held-out figures are the sweep's own for that point on the held-out corpus
        (held,) = point_rows(sweep, policy, r.mode, o.limit, "all", corpus=r.corpus).to_dict("records")
        assert loo.loc[r.Index, o.metric] == pytest.approx(held[o.metric])
        assert loo.loc[r.Index, o.constraint] == pytest.approx(held[o.constraint], nan_ok=True)
        assert r.diff_lo <= r.diff_hi
    best = tuned.loc[tuned.groupby(["mode", "corpus"])[o.metric].idxmax()]
    assert (best["diff_lo"] == 0).all() and (best["diff_hi"] == 0).all()  # the best family against itself
    written = (root / "run" / "leave_one_out.csv").read_text()
    assert "centred+cross-script+coverage" in written and "tuned_on" in written
    assert "Leave one corpus out" in (root / "run" / "report.html").read_text()


def test_fit_returns_the_joint_choice_of_the_family_and_round_trips_as_json(two, tmp_path):
    result, root = two
    folder = root / "datasets" / "tiny"
    family = "centred+cross-script+coverage"
    policy = harness.fit(folder, family=family, modes=("fts", "hybrid"), grid=GRID, embedding=HashEmbedding(),
                         embedding_cache=root / "emb")
    assert isinstance(policy, pc.AdmissionPolicy)
    assert family_of(policy) == family
    same = harness.sweep(folder, modes=("fts", "hybrid"), grid=GRID, embedding=HashEmbedding(),
                         embedding_cache=root / "emb", out=tmp_path / "again", progress=False, write=False)
    from powercontext.eval.scoring.recommend import choose_joint

    # the fitted policy records the embedding profile it was tuned for (issue 33)
    assert policy.profile == HashEmbedding.profile.profile_id
    joint = choose_joint(same.sweep, ("fts", "hybrid"), same.objective, families=[family]).policy
    assert policy == joint.with_profile(HashEmbedding.profile)
    path = policy.save(tmp_path / "policy.json")
    assert pc.AdmissionPolicy.load(path) == policy and pc.AdmissionPolicy.load(path).profile == policy.profile
    with pytest.raises(EvalError, match="unknown admission family"):
        harness.fit(folder, family="centred+magic", grid=GRID)
