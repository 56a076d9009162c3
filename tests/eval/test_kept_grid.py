"""Issue 45: a run keeps the part of the grid its readers read (``eval/scoring/points.py``), and
chooses exactly as it would on the whole grid.

Two small corpora swept on SQLite in fts and hybrid; the offline analysis is run twice on
the same collected candidates, once keeping every point (``full_grid=True``) and once by
default. The vectors come from ``HashEmbedding``, the deterministic test embedder: what is
checked here is the offline bookkeeping, not a model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from powercontext.eval import harness
from powercontext.eval.scoring.grid import NAMED_POLICIES, PARAMS, family_of
from powercontext.eval.scoring.points import near_frontier
from powercontext.eval.scoring.recommend import point_rows
from powercontext.eval.scoring.sweep import Grid

from .fakes import HashEmbedding, write_corpus
from .test_transfer_fit import renamed

GRID = Grid((1, 2, 3), (0.0, 0.34, 0.75), (0.2, 0.4, 0.6), (1, 3, 8, 10),
            families=("floors", "centred+cross-script+coverage+support"), vector_min_centred=(0.05, 0.15, 0.25))
KEYS = ["backend", "mode", "corpus", "split", "family", *PARAMS, "limit"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("kept")
    a = write_corpus(root / "datasets" / "tiny")
    b = write_corpus(root / "datasets" / "twin", *renamed("twn"))
    swept = harness.sweep([a, b], backends=("sqlite",), modes=("fts", "hybrid"), grid=GRID, out=root / "run",
                          embedding=HashEmbedding(), embedding_cache=root / "emb", progress=False, write=False, folds=0)
    full = harness.analyse(swept.collected, GRID, folds=0, full_grid=True)
    kept = harness.analyse(swept.collected, GRID, folds=0)
    return full, kept


def test_the_choices_on_the_kept_points_are_the_full_grids(runs):
    full, kept = runs
    pd.testing.assert_frame_equal(kept.recommendations, full.recommendations)
    pd.testing.assert_frame_equal(kept.sensitivity, full.sensitivity)
    pd.testing.assert_frame_equal(kept.transfer, full.transfer)
    # (on 16 queries a corpus the metrics take few values and many points tie on the
    # frontier; the size on a real corpus: test_a_bundled_corpus_run_folder_stays_small)
    assert len(kept.sweep) < len(full.sweep), (len(kept.sweep), len(full.sweep))


def test_every_kept_row_is_the_full_grids_row_and_the_decision_slice_is_whole(runs):
    full, kept = runs
    both = kept.sweep.merge(full.sweep, on=KEYS, how="left", suffixes=("", "_full"), indicator=True)
    assert (both["_merge"] == "both").all() and len(both) == len(kept.sweep)
    for metric in ("ndcg@10", "false_admission", "set_f1", "hits"):
        np.testing.assert_array_equal(both[metric].to_numpy(), both[f"{metric}_full"].to_numpy())
    o = full.objective
    for frame in (full.sweep, kept.sweep):  # what the recommendation, the report's plots and the tuner's default read
        frame["_decides"] = (frame["limit"] == o.limit) & (frame["corpus"] == "all") & (frame["split"] == o.split)
    assert kept.sweep["_decides"].sum() == full.sweep["_decides"].sum() > 0
    assert (~kept.sweep["_decides"]).sum() > 0  # … and more than the decision slice
    # the per-corpus rows leave-one-corpus-out tunes on are its own table (leave_one_out), not all kept here
    per_corpus = lambda f: ((f["corpus"] != "all") & (f["split"] == "all") & (f["limit"] == o.limit)).sum()  # noqa: E731
    assert 0 < per_corpus(kept.sweep) < per_corpus(full.sweep)


def test_the_named_points_and_their_neighbours_are_kept_at_every_limit_corpus_and_split(runs):
    full, kept = runs
    for mode in ("fts", "hybrid"):
        named = [*NAMED_POLICIES.values(), full.recommended(mode), full.recommended("joint")]
        for policy in named:
            for limit in GRID.limits:
                for corpus, split in (("all", "all"), ("all", "test"), ("tiny", "dev")):
                    want = point_rows(full.sweep, policy, mode, limit, split, corpus)
                    have = point_rows(kept.sweep, policy, mode, limit, split, corpus)
                    assert len(have) == len(want), (mode, policy, limit, corpus, split)
    # one threshold away from the recommendation, at a limit no choice reads: what a tuner slider reaches
    rec = full.recommended("hybrid")
    field = "fts_min_terms" if family_of(rec) == "floors" else "hybrid_fts_min_terms"
    for terms in GRID.fts_min_terms:
        moved = replace(rec, **{field: terms})
        want = point_rows(full.sweep, moved, "hybrid", 1, "all")
        assert len(want) and len(point_rows(kept.sweep, moved, "hybrid", 1, "all")) == len(want), terms


def test_near_frontier_keeps_what_is_not_beaten_on_both_axes_by_more_than_the_margin():
    metric = np.array([0.90, 0.80, 0.50, 0.89, 0.70, np.nan])
    cost = np.array([0.50, 0.20, 0.00, 0.51, 0.30, 0.10])
    # (0.70, 0.30) is beaten by (0.80, 0.20) on both axes; (0.89, 0.51) only by 0.01 / 0.01
    assert near_frontier(metric, cost, 0.02).tolist() == [True, True, True, True, False, True]
    # no cost in the slice (no empty-answer query): within the margin of the best metric
    assert near_frontier(np.array([0.5, 0.49, 0.3]), np.full(3, np.nan), 0.02).tolist() == [True, True, False]


def test_the_run_folder_keeps_a_fraction_of_the_grid_and_reads_back(runs, tmp_path):
    """Issue 45: ``sweep --all --backends sqlite`` wrote 35.9 MB, 30 MB of it the whole
    grid in sweep.parquet; the folder is to stay under 8 MB with the grid only on request."""
    from powercontext.eval.presenting.report import write_run
    from powercontext.magics.widgets import ThresholdTuner

    full, kept = runs
    sizes = {}
    for name, result in (("full", full), ("kept", kept)):
        out = write_run(result, tmp_path / name)
        sizes[name] = (out / "sweep.parquet").stat().st_size
        folder = sum(p.stat().st_size for p in out.rglob("*") if p.is_file() and "cache" not in p.parts)
        assert name == "full" or folder < 8_000_000
    assert sizes["kept"] < sizes["full"], sizes  # (this grid is tiny: the rows, not the bytes, shrink most)
    run = harness.load(tmp_path / "kept")
    assert len(run.sweep) == len(kept.sweep)
    tuner = ThresholdTuner(run)  # the tuner on the folder: its default point (the recommendation) is there
    assert tuner.point is not None and len(tuner.curve) > 1
