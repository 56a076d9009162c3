"""The run folder's TREC files: another toolkit (ranx, reading the files back) gets the
harness's own figures."""

from __future__ import annotations

import gzip

import pytest
from ranx import Qrels, Run, evaluate

from powercontext.eval.presenting.runfiles import QRELS_NAME, run_path


def test_every_named_policy_has_a_run_file_in_trec_format(tiny_run):
    out = tiny_run.out
    policies = set(tiny_run.per_query["policy"])
    assert {"recommended", "initial", "default", "no-admission"} <= policies
    for policy in policies:
        assert run_path(out, "sqlite", "fts", policy).is_file(), policy
    path = run_path(out, "sqlite", "fts", "no-admission")
    assert path.name == "sqlite-fts-no-admission.run.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    first = lines[0].split()
    assert len(first) == 6 and first[1] == "Q0" and first[3] == "1" and first[4] == "8"
    assert first[5] == "pc-sqlite-fts-no-admission"
    per_query = tiny_run.per_query
    hits = per_query[(per_query["policy"] == "no-admission")]["ranking"].map(len).sum()
    assert len(lines) == hits
    qrels = (out / QRELS_NAME).read_text().splitlines()
    assert len(qrels) == 14 and "tny-q001 0 tny-0001 3" in qrels  # every judgement of the tiny corpus


@pytest.mark.parametrize("policy", ["recommended", "initial", "no-admission"])
def test_ranx_rescoring_a_run_file_gives_the_harness_figure(tiny_run, policy):
    qrels = Qrels.from_file(str(tiny_run.out / QRELS_NAME), kind="trec")
    run = Run.from_file(str(run_path(tiny_run.out, "sqlite", "fts", policy)))  # ranx reads the .gz as it is
    scores = evaluate(qrels, run, ["ndcg@10", "recall@10", "mrr@10"], make_comparable=True)
    summary = tiny_run.summary
    row = summary[(summary["policy"] == policy) & (summary["split"] == "all") & (summary["mode"] == "fts")].iloc[0]
    for metric, value in scores.items():
        assert value == pytest.approx(row[metric], abs=1e-12), metric


def test_the_report_explains_the_estimate_and_lists_the_files(tiny_run):
    from powercontext.eval import harness
    from powercontext.eval.scoring.recommend import Objective
    from powercontext.eval.presenting.report import render_html

    page = (tiny_run.out / "report.html").read_text()
    method = page[page.index("<section id='method'>"):page.index("</section>", page.index("<section id='method'>"))]
    assert "Cross-validated estimate" in method and "5-fold cross-validation by query" in method
    assert "tiny: assigned (seeded, stratified)" not in method and "tiny: from the corpus" in method
    assert method.count("<tr>") >= 1 + 2 and "Per fold" in method  # held-out table (fts, joint) and the folds
    assert "chosen on all queries, its held-out cost estimated by 5-fold cross-validation" in page
    files = page[page.index("<section id='files'>"):]
    for policy in ("recommended", "initial", "default", "no-admission"):
        assert f"runs/sqlite-fts-{policy}.run.gz" in files
    dev_test = harness.analyse(tiny_run.collected, tiny_run.grid, Objective(), folds=0)
    page = render_html(dev_test)
    method = page[page.index("<section id='method'>"):page.index("</section>", page.index("<section id='method'>"))]
    assert "chosen on the dev split, reported on the test split" in method and "--folds K" in method
    assert "Per fold" not in method
