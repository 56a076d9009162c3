"""Fitting a calibration (issue 46): isotonic maps per cell from labelled candidates,
held-out scores (ECE by hand), too few labels refused with the count needed, and
``harness.calibrate`` / ``python -m powercontext.eval calibrate`` end to end on a real
bundled corpus with the real all-MiniLM-L6-v2."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from powercontext.bundled import MINILM_PROFILE
from powercontext.errors import PowerContextError
from powercontext.eval.scoring import calibrate as C
from powercontext.eval.__main__ import main
from powercontext.memory.calibration import Calibration

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def frame(n_queries: int = 60, seed: int = 3, corpora=("one", "two")) -> pd.DataFrame:
    """Labelled vector and fts candidates whose relevance rises with the signal; the
    cross-lingual pair is relevant at LOWER cosines than the same-script one."""
    rng = random.Random(seed)
    rows = []
    for q in range(n_queries):
        corpus = corpora[q % len(corpora)]
        qscript = "latin" if q % 3 else "cjk"
        for e in range(8):
            escript = rng.choice(["latin", "cjk"])
            cos = rng.uniform(0.70, 0.95)
            centre = 0.80 if qscript == escript else 0.76
            label = int(rng.random() < (0.9 if cos > centre + 0.05 else 0.05))
            rows.append(dict(corpus=corpus, query_id=f"q{q}", corpus_entry=f"e{e}", channel="vector", cosine=cos, centred=rng.random() * 0.1,
                             script=escript, query_script=qscript, query_term_count=4, matched=0,
                             cell=f"{qscript}>{escript}", label=label))
            n = rng.choice([2, 4, 7])
            matched = rng.randint(1, n)
            rows.append(dict(corpus=corpus, query_id=f"q{q}", corpus_entry=f"e{e + 4}", channel="fts", cosine=np.nan, centred=np.nan,
                             script="latin", query_script=qscript, query_term_count=n, matched=matched,
                             cell={2: "1-2", 4: "3-5", 7: "6-9"}[n], label=int(rng.random() < matched / n * 0.8)))
    return pd.DataFrame(rows)


def test_fit_gives_monotone_maps_per_cell_with_their_n_and_picks_the_separating_signal():
    data = frame()
    cal = C.fit(data, MINILM_PROFILE.profile_id, corpora=["one", "two"])
    assert cal.vector.signal == "cosine"  # the centred column is noise here
    assert set(cal.vector.cells) == {"latin>latin", "latin>cjk", "cjk>latin", "cjk>cjk"}
    vec = data[data["channel"] == "vector"]
    assert cal.vector.pooled.n == len(vec) and cal.vector.pooled.positives == int(vec["label"].sum())
    for cell in cal.vector.cells.values():
        assert all(b >= a for a, b in zip(cell.p, cell.p[1:]))
    # per pair: at cosine 0.83 the cross-script pair is likely relevant, the same-script one not
    assert cal.vector.cells["latin>cjk"](0.85) > 0.7 > 0.3 > cal.vector.cells["latin>latin"](0.82)
    assert set(cal.fts.cells) == {"1-2", "3-5", "6-9"} and cal.fitted_on == ["one", "two"]
    # the artefact is schema-valid JSON
    assert Calibration.from_dict(json.loads(json.dumps(cal.to_dict()))) == cal


def test_the_hybrid_cell_is_stacked_on_both_channels_monotone_and_fitted_on_the_pools_union():
    data = frame()
    cal = C.fit(data, MINILM_PROFILE.profile_id, corpora=["one", "two"])
    assert cal.format == "powercontext.calibration.v2" and cal.hybrid is not None
    h = cal.hybrid
    # entries e4..e7 come from both pools, e0..e3 and e8..e11 from one: the union, once each
    pairs = C.hybrid_pairs(data, cal)
    assert h.n == len(pairs) == len(data[["query_id", "corpus_entry"]].drop_duplicates())
    assert pairs["p_vector"].notna().any() and pairs["p_fts"].isna().any()
    assert min(h.vector, h.fts, h.both) >= 0.0  # monotone: more evidence never lowers it
    grid = [0.0, 0.05, 0.2, 0.5, 0.8, 0.95]
    for pf in grid:
        row = [h(pv, pf) for pv in grid]
        assert row == sorted(row)
    assert h(0.8, 0.8) >= h(0.8, None) and h(0.8, 0.8) >= h(None, 0.8)
    assert 0.0 < h(None, None) < h(0.95, 0.95) < 1.0
    # held-out scores carry the hybrid cell as a channel of its own
    table = C.cell_table(C.score(data, "p", "corpus"))
    assert "stacked" in set(table[table["channel"] == "hybrid"]["cell"])
    assert not C.fit(data, "p", hybrid=False).hybrid


def test_too_few_labels_are_refused_with_the_count_needed():
    data = frame(n_queries=2)
    with pytest.raises(C.TooFewLabelsError, match=r"needs at least 30 labelled candidates.*\(has 16,") as info:
        C.fit(data, "p")
    assert isinstance(info.value, PowerContextError) and "\n" not in str(info.value)
    only_negative = frame().assign(label=0)
    with pytest.raises(C.TooFewLabelsError, match="relevant and not relevant ones both"):
        C.fit(only_negative, "p")


def test_ece_by_hand_and_held_out_scores_never_see_their_own_fold():
    assert C.ece(np.array([0.1, 0.9]), np.array([0, 1])) == pytest.approx(0.1)
    assert C.ece(np.array([0.25, 0.25, 0.25, 0.25]), np.array([1, 0, 0, 0])) == pytest.approx(0.0)
    data = frame()
    for folds, expected in (("corpus", {"held out one", "held out two"}), (5, {f"fold {i}" for i in range(1, 6)})):
        scored = C.score(data, "p", folds)
        per_channel = scored[scored["channel"] != "hybrid"]  # + one hybrid row per (query, entry)
        assert set(scored["fold"]) == expected and len(per_channel) == len(data)
        for _, g in scored.groupby("fold"):  # a query's candidates stay in one fold
            assert not set(g["query_id"]) & set(scored[scored["fold"] != g["fold"].iloc[0]]["query_id"])
    table = C.cell_table(C.score(data, "p", "corpus"))
    pooled = table[table["cell"] == "(pooled)"].set_index("channel")
    assert pooled.loc["vector", "ece"] < 0.1 and pooled.loc["vector", "n"] == (data["channel"] == "vector").sum()
    with pytest.raises(PowerContextError, match="needs at least two corpora"):
        C.folds_of(frame(corpora=("one",)), "corpus")


def test_calibrate_verb_fits_a_bundled_corpus_with_the_real_model_and_writes_its_report(tmp_path, capsys):
    out = tmp_path / "cal"
    assert main(["calibrate", "--dataset", str(DATASETS / "atlas-etl"), "--embedding", "minilm", "--folds", "3",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "vector: held-out ECE" in printed and "fts: held-out ECE" in printed
    cal = Calibration.load(out / "calibration.json")
    assert cal.profile == MINILM_PROFILE.profile_id and cal.fitted_on == ["atlas-etl"]
    assert {"latin>latin", "cjk>cjk", "latin>cjk", "cjk>latin"} <= set(cal.vector.cells)
    # the hybrid cell, fitted on this real corpus's pools: monotone in both channels
    assert cal.hybrid is not None and min(cal.hybrid.vector, cal.hybrid.fts, cal.hybrid.both) >= 0
    assert cal.hybrid.vector + cal.hybrid.fts > 0 and cal.hybrid.n > 100
    assert cal.hybrid(0.6, 0.6) > cal.hybrid(0.6, None) and cal.hybrid(0.6, 0.6) > cal.hybrid(0.05, 0.6)
    assert "hybrid: held-out ECE" in printed
    report = (out / "calibration.md").read_text(encoding="utf-8")
    assert "| vector | latin>latin |" in report and "⚠" in report  # a thin cross-lingual cell is flagged
    assert (out / "reliability.png").read_bytes()[:4] == b"\x89PNG"
    cells = pd.read_csv(out / "cells.csv")
    assert (cells["n"] > 0).all() and cells["ece"].between(0, 1).all()
    # too few labels through the CLI: exit 2, the typed error's one line
    assert main(["calibrate", "--dataset", str(DATASETS / "atlas-etl"), "--embedding", "minilm",
                 "--min-cell-n", "100000", "--out", str(tmp_path / "none")]) == 2
    assert "needs at least 100000 labelled candidates" in capsys.readouterr().err
