"""The held-out study of admission in probability units (issue 46 item 2): the
adoption rule by hand, and ``python -m powercontext.eval probability-study`` end to end
on two real bundled corpora with the real all-MiniLM-L6-v2 — its report says adopted or
not, each corpus scored by an artefact and a threshold chosen without it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from powercontext.eval.__main__ import main
from powercontext.eval.scoring.probability_study import decide

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


def table(rows):
    return pd.DataFrame([dict(held_out=h, policy=p, group="all", ndcg=n, false_admission=fa)
                         for h, p, n, fa in rows])


def test_adopted_only_where_it_wins_held_out_and_the_miss_is_said_by_how_much():
    wins = table([("a", "default", 0.50, 0.20), ("a", "probability", 0.56, 0.25),
                  ("b", "default", 0.40, 0.45), ("b", "probability", 0.42, 0.40)])  # b: above the bound, below default
    ok, verdict = decide(wins)
    assert ok and verdict.startswith("adopted") and "+0.040" in verdict
    lower = table([("a", "default", 0.50, 0.20), ("a", "probability", 0.45, 0.10)])
    ok, verdict = decide(lower)
    assert not ok and "nDCG short by 0.050" in verdict
    admits_more = table([("a", "default", 0.50, 0.20), ("a", "probability", 0.60, 0.10),
                         ("b", "default", 0.40, 0.49), ("b", "probability", 0.45, 0.52)])
    ok, verdict = decide(admits_more)
    assert not ok and "b false admission 0.520 > max(0.3, default 0.490) by 0.030" in verdict


def test_probability_study_verb_writes_a_report_that_says_adopted_or_not(tmp_path, capsys):
    out = tmp_path / "study"
    assert main(["probability-study", "--dataset", str(DATASETS / "atlas-etl"), "--dataset",
                 str(DATASETS / "tidewater-cli"), "--embeddings", "minilm", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "minilm-l6-v2: " in printed and "adopted" in printed
    report = (out / "minilm" / "probability_study.md").read_text(encoding="utf-8")
    first = report.splitlines()[2]
    assert first.startswith(("**ADOPTED**", "**NOT ADOPTED**")) and "mean held-out nDCG@10" in first
    rows = pd.read_csv(out / "minilm" / "probability_study.csv")
    assert set(rows["held_out"]) == {"atlas-etl", "tidewater-cli"}
    whole = rows[rows["group"] == "all"].set_index(["held_out", "policy"])
    for held in ("atlas-etl", "tidewater-cli"):
        assert {"default", "probability"} <= set(whole.loc[held].index)
        assert 0.0 <= whole.loc[(held, "probability"), "ndcg"] <= 1.0
    # the groups of the targets are there: paraphrases, language pairs, query languages
    groups = set(rows["group"])
    assert {"paraphrase", "cross-lingual", "lang zh", "pair latin>latin", "pair cjk>cjk"} <= groups
    assert "| paraphrase answered default → p |" in report
