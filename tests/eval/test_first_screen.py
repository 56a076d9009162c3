"""Issue 45 §2: the report's first screen shows the knobs that differ (default →
recommended) instead of two long calls to diff by eye, says which to paste when the
folds disagree, quotes the same split as the terminal summary, says "these corpora" on
a run of several; the threshold plots draw the family the default uses; the nAUC
section explains itself. A real two-corpus SQLite sweep (the deterministic hashed
embedder of the harness tests; 32 queries, so cross-validated)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import powercontext as pc

from powercontext.eval import harness
from powercontext.eval.presenting.console import format_summary
from powercontext.eval.scoring.grid import family_of
from powercontext.eval.presenting.plots import threshold_curve
from powercontext.eval.presenting.report import render_html
from powercontext.eval.scoring.sweep import Grid
from powercontext.eval.presenting.verdict import explicit_call, knob_changes, paste_choice

from .fakes import HashEmbedding, write_corpus
from .test_report import Tree
from .test_transfer_fit import renamed

GRID = Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.2, 0.4, 0.6), (1, 8), families=("floors", "centred+cross-script+coverage"),
            vector_min_centred=(0.05, 0.15, 0.25))


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("first")
    a = write_corpus(root / "datasets" / "tiny")
    b = write_corpus(root / "datasets" / "twin", *renamed("twn"))
    return harness.sweep([a, b], backends=("sqlite",), modes=("fts", "hybrid"), grid=GRID, out=root / "run",
                         embedding=HashEmbedding(), embedding_cache=root / "emb", progress=False, write=False)


def first_section(result):
    root = Tree(render_html(result)).root
    return next(s for s in root.iter("section") if s.attrs["id"] == "recommendation"), root


def test_the_verdict_shows_the_knobs_that_differ_not_two_long_calls(result):
    first, _ = first_section(result)
    box = next(d for d in first.iter("div") if d.attrs.get("class") == "verdict")
    text = box.all_text()
    default, chosen = result.collected.default_policy, result.recommended("joint")
    assert "pc.AdmissionPolicy(fts_min_terms=" not in text  # no long call to diff by eye
    diff = knob_changes(default, chosen)
    assert not diff.empty and set(diff.columns) == {"knob", "default", "recommended"}
    for r in diff.itertuples():  # exactly the knobs that differ, each default → recommended
        assert getattr(default, r.knob) != getattr(chosen, r.knob)
    same = [f for f in ("fts_min_terms", "vector_uncovered", "cross_script_min_terms")
            if getattr(default, f) == getattr(chosen, f)]
    assert not set(same) & set(diff["knob"])
    (table,) = box.iter("table")
    rows = [[td.all_text() for td in tr.iter("td")] for tr in table.iter("tr")][1:]
    assert rows == diff.values.tolist()
    assert f"differs from the default in {len(diff)} knob" in text
    assert "AdmissionPolicy.default_for(" in text
    # the full calls stay where they are pasted from, and they make the two policies
    body = first.all_text()
    assert explicit_call(chosen) in body and explicit_call(default) in body
    assert eval(explicit_call(chosen), {"pc": pc}) == chosen  # noqa: S307
    # the box says which profile and policies it shows, for the committed-report test
    assert json.loads(box.attrs["data-default-policy"]) == default.to_dict()
    assert json.loads(box.attrs["data-recommended-policy"]) == chosen.to_dict()


def test_when_the_folds_disagree_the_screen_says_so_and_which_to_paste(result):
    assert result.folds == 5
    held = "heldout_false_admission"
    disagreeing = replace(result, recommendations=result.recommendations.assign(fold_policies=3, **{held: 0.0}))
    pick, why = paste_choice(disagreeing)
    assert pick == "default" and "5 cross-validation folds chose 3 different policies" in why
    first, _ = first_section(disagreeing)
    text = first.all_text()
    assert "The 5 cross-validation folds chose 3 different policies" in text
    assert "Paste the library default" in text and "← paste this" in text
    steady = replace(result, recommendations=result.recommendations.assign(fold_policies=1, **{held: 0.0}))
    assert paste_choice(steady)[0] == "recommended"
    assert "Paste the recommendation" in first_section(steady)[0].all_text()


def test_a_recommendation_that_broke_its_bound_held_out_is_not_the_one_to_paste(result):
    """The committed calibration run's joint policy gave a hit to 0.351 of the test
    split's empty-answer questions under a 0.30 bound, and its page still said to paste it."""
    over = replace(result, recommendations=result.recommendations.assign(fold_policies=1,
                                                                         heldout_false_admission=0.9))
    pick, why = paste_choice(over)
    assert pick == "default" and "0.900 of the empty-answer questions, above the 0.3 bound" in why
    assert "Paste the library default" in first_section(over)[0].all_text()


def test_the_terminal_and_the_report_quote_the_same_split_and_numbers(result):
    """A 20-query corpus showed "all: 0.929 / 0.167" in the terminal and "test: 1.000 /
    0.000" in the report for the same table."""
    terminal = format_summary(result)
    assert "\nall split (" in terminal
    first, _ = first_section(result)
    heading = next(h.all_text() for h in first.iter("h3") if h.all_text().startswith("What each costs"))
    assert heading.startswith("What each costs (all queries, as the terminal summary")
    (table,) = [t for t in first.iter("table") if "thresholds" in [th.all_text() for th in t.iter("th")]]
    header = [th.all_text() for th in table.iter("th")]
    rows = [[td.all_text() for td in tr.iter("td")] for tr in table.iter("tr")][1:]
    summary = result.summary_table("all").set_index(["backend", "mode", "policy"])
    names = {"library default": "default", "this run's (mode)": "recommended", "no-admission": "no-admission",
             "this run's (joint)": "joint"}
    for row in rows:
        r = summary.loc[(row[header.index("database")], row[header.index("mode")], names[row[header.index("policy")]])]
        assert row[header.index("ndcg@10 [95% CI]")].startswith(f"{r['ndcg@10']:.3f}")
        line = next(line for line in terminal.splitlines()
                    if line.split()[:3] == [row[header.index("database")], row[header.index("mode")],
                                            names[row[header.index("policy")]]])
        assert f"{r['ndcg@10']:.3f}" in line  # the very figure the terminal printed
    assert "held out (folds)" in header


def test_a_run_of_several_corpora_says_these_corpora(result):
    first, _ = first_section(result)
    text = first.all_text()
    assert "these corpora" in text and "this corpus" not in text


def test_the_threshold_plots_draw_the_family_the_default_uses(result):
    default = result.collected.default_policy
    assert family_of(default) == "centred+cross-script+coverage"
    for mode, axis in (("hybrid", "vector_min_centred"), ("fts", "fts_min_coverage")):
        rows, family, x, _ = threshold_curve(result, mode)
        assert family == family_of(default) and x == axis
        assert len(rows) and set(rows["family"]) == {family} and rows[x].nunique() > 1
    _, root = first_section(result)
    section = next(s for s in root.iter("section") if s.attrs["id"] == "thresholds")
    assert "centred+cross-script+coverage" in section.all_text() and len(list(section.iter("img"))) == 2


def test_the_abstention_section_explains_nauc(result):
    _, root = first_section(result)
    section = next(s for s in root.iter("section") if s.attrs["id"] == "abstention")
    text = section.all_text()
    assert "What nAUC measures" in text and "How to read it" in text
    assert "random order scores 0" in text and "threshold" in text
