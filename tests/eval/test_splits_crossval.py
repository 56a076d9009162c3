"""Splits for corpora that have none, and the k-fold cross-validated recommendation."""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd
import pytest

from powercontext.eval import harness
from powercontext.eval.scoring.crossval import crossvalidate, fold_count, summarise
from powercontext.eval.errors import EvalError
from powercontext.eval.corpora.datasets import load
from powercontext.eval.scoring.recommend import Objective
from powercontext.eval.corpora.splits import Stratified, assign, complete

from .fakes import QUERIES, write_corpus

TAGS = ["lexical"] * 9 + ["paraphrase"] * 6 + ["negative"] * 4 + ["multi"] * 3 + ["stale"] * 2


def _items(n_tags=TAGS):
    return [Stratified(f"q{i:03d}", tag != "negative", (tag,)) for i, tag in enumerate(n_tags)]


def test_folds_are_balanced_stratified_and_seeded():
    items = _items()
    folds = assign(items, 5, seed=0)
    sizes = Counter(folds.values())
    assert set(sizes) == set(range(5)) and max(sizes.values()) - min(sizes.values()) <= 1
    for tag in set(TAGS):  # every stratum spread within one query of even
        per_fold = Counter(folds[it.id] for it in items if it.tags == (tag,))
        counts = [per_fold.get(f, 0) for f in range(5)]
        assert max(counts) - min(counts) <= 1, (tag, counts)
    assert assign(list(reversed(items)), 5, seed=0) == folds  # the file's order does not matter
    assert assign(items, 5, seed=0) == folds
    assert assign(items, 5, seed=1) != folds
    with pytest.raises(ValueError):
        assign(items, 1)


def test_a_corpus_without_split_gets_a_seeded_stratified_one(tmp_path):
    rows = [{k: v for k, v in q.items() if k != "split"} for q in QUERIES]
    corpus = load(write_corpus(tmp_path / "nosplit", queries=rows))
    assert corpus.split_origin == "assigned"
    splits = Counter(q.split for q in corpus.queries)
    assert splits == {"dev": 8, "test": 8}
    empty = [q.split for q in corpus.queries if not q.is_positive]  # 4 negatives/forgotten: 2 and 2
    assert sorted(empty) == ["dev", "dev", "test", "test"]
    again = load(tmp_path / "nosplit")
    assert [q.split for q in again.queries] == [q.split for q in corpus.queries]
    other = load(tmp_path / "nosplit", split_seed=7)
    assert [q.split for q in other.queries] != [q.split for q in corpus.queries]
    given = load(write_corpus(tmp_path / "given"))
    assert given.split_origin == "file" and complete(given) is given


def test_fold_count_rules():
    assert fold_count("auto", 199) == 5 and fold_count("auto", 200) == 0 and fold_count(None, 16) == 5
    assert fold_count("auto", 4) == 4 and fold_count("auto", 1) == 0
    assert fold_count(0, 16) == 0 and fold_count(10, 691) == 10
    for bad in (1, -2):
        with pytest.raises(ValueError):
            fold_count(bad, 100)
    with pytest.raises(ValueError, match="need at least 8 queries"):
        fold_count(8, 5)


def _row(split, cov, ndcg, fa, n_pos=10, n_empty=4):
    return dict(backend="sqlite", mode="fts", corpus="all", split=split, fts_min_terms=1, fts_min_coverage=cov,
                vector_min_cosine=math.nan, limit=8, **{"ndcg@10": ndcg, "false_admission": fa, "set_f1": 0.5},
                n_positive=n_pos, n_empty=n_empty, n_all=n_pos + n_empty)


def test_each_fold_chooses_on_its_training_folds_and_scores_the_held_out_one():
    """Hand-computed: fold 1 must take A (B breaks the bound on its training folds),
    fold 2 takes B; each is scored on the fold it never saw."""
    A, B = 0.5, 0.25  # fts_min_coverage of the two policies
    table = pd.DataFrame([
        _row("fold1-train", A, 0.80, 0.10), _row("fold1-train", B, 0.90, 0.50),
        _row("fold1-heldout", A, 0.60, 0.30, n_pos=6), _row("fold1-heldout", B, 0.99, 0.99, n_pos=6),
        _row("fold2-train", A, 0.70, 0.10), _row("fold2-train", B, 0.75, 0.15),
        _row("fold2-heldout", A, 0.10, 0.00, n_pos=4), _row("fold2-heldout", B, 0.70, 0.00, n_pos=4),
    ])
    objective = Objective()
    folds = crossvalidate(table, ["fts"], objective, k=2)
    own = folds[folds["recommendation"] == "fts"].set_index("fold")
    assert list(own["fts_min_coverage"]) == [A, B]
    assert list(own["ndcg@10"]) == [0.60, 0.70] and list(own["false_admission"]) == [0.30, 0.00]
    assert list(own["train_objective"]) == [0.80, 0.75]
    s = summarise(folds, objective).set_index("recommendation").loc["fts"]
    assert s["ndcg@10_mean"] == pytest.approx(0.65)
    assert s["ndcg@10_sd"] == pytest.approx(math.sqrt(2 * 0.05 ** 2))  # sample sd of (0.6, 0.7)
    assert s["ndcg@10_pooled"] == pytest.approx((0.6 * 6 + 0.7 * 4) / 10)
    assert s["policies_chosen"] == 2 and s["folds"] == 2


def test_a_small_corpus_is_recommended_by_cross_validation(tiny_run):
    result = tiny_run  # 16 queries: below 200, so 5 folds
    assert result.folds == 5 and result.objective.split == "all" and "5-fold" in result.method
    rec = result.recommendations.set_index("mode")
    assert list(rec["method"]) == ["5-fold CV", "5-fold CV"]
    assert 0 <= rec.loc["fts", "heldout_ndcg@10"] <= 1 and rec.loc["fts", "heldout_ndcg@10_sd"] >= 0
    assert 1 <= rec.loc["fts", "fold_policies"] <= 5
    cv = result.crossval
    assert sorted(cv["fold"].unique()) == [1, 2, 3, 4, 5]
    assert cv.groupby("fold")["n_all"].first().sum() == 16  # every query held out exactly once
    splits = pd.read_csv(result.out / "splits.csv")
    assert len(splits) == 16 and set(splits["fold"]) == {1, 2, 3, 4, 5} and set(splits["split"]) == {"dev", "test"}
    assert (result.out / "crossval.csv").is_file() and (result.out / "crossval_folds.csv").is_file()
    table = result.summary_table()
    rec_row = table[table["policy"] == "recommended"].iloc[0]
    assert rec_row["heldout_ndcg@10"] == pytest.approx(rec.loc["fts", "heldout_ndcg@10"])
    assert table[table["policy"] == "initial"]["heldout_ndcg@10"].isna().all()


def test_the_same_run_offline_with_a_dev_test_split_or_other_folds(tiny_run):
    dev_test = harness.analyse(tiny_run.collected, tiny_run.grid, Objective(), folds=0)
    assert dev_test.folds == 0 and dev_test.objective.split == "dev" and dev_test.crossval.empty
    assert "heldout_ndcg@10" not in dev_test.recommendations and list(dev_test.recommendations["method"]) == ["dev/test"] * 2
    three = harness.analyse(tiny_run.collected, tiny_run.grid, Objective(), folds=3, seed=4)
    assert sorted(three.crossval["fold"].unique()) == [1, 2, 3]
    with pytest.raises(EvalError, match="at least 2"):
        harness.analyse(tiny_run.collected, tiny_run.grid, Objective(), folds=1)
