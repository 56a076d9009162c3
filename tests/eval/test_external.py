"""External runs beside ours (issue 36): another system's TREC run file for the same
queries is scored with the harness's metrics and false-admission definition, joins the
summary in every database × mode block, and is compared by the paired tests."""

from __future__ import annotations

import pandas as pd
import pytest
from ranx import Qrels, Run, evaluate

from powercontext.eval import harness
from powercontext.eval.__main__ import main
from powercontext.eval.errors import EvalError
from powercontext.eval.scoring.sweep import Grid

from .fakes import write_corpus

GRID = Grid((1, 2), (0.0, 0.25), (0.3,), (8,))


@pytest.fixture
def tiny(tmp_path):
    return write_corpus(tmp_path / "datasets" / "tiny")


def bm25_like(tiny, path):
    """A run of another toolkit: every query gets three entries, whatever it asks (so
    every empty-answer query is a false admission), the judged one first where there is one."""
    qrels = [line.split() for line in (tiny / "qrels.trec").read_text().splitlines() if line.strip()]
    first = {q: e for q, _, e, g in qrels if int(g) >= 1}
    queries = pd.read_json(tiny / "queries.jsonl", lines=True)["id"]
    lines = []
    for q in queries:
        docs = [first[q]] if q in first else []
        docs += [d for d in ("tny-0009", "tny-0003", "tny-0012") if d not in docs][: 3 - len(docs)]
        lines += [f"{q} Q0 {d} {r} {10 - r} other-toolkit-bm25" for r, d in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_external_run_is_scored_like_our_policies_and_tested_against_them(tiny, tmp_path):
    run_file = bm25_like(tiny, tmp_path / "bm25.trec")
    result = harness.sweep(tiny, modes=("fts",), grid=GRID, out=tmp_path / "run", progress=False, folds=0,
                           runs={"bm25": run_file})
    s = result.summary
    ext = s[(s["policy"] == "external:bm25") & (s["split"] == "all")]
    assert len(ext) == 1 and ext["label"].item() == "TREC run bm25"
    # the same numbers ranx reads from the file, and the same false-admission definition
    qrels = Qrels.from_file(str(tiny / "qrels.trec"), kind="trec")
    expected = evaluate(qrels, Run.from_file(str(run_file), kind="trec"), "ndcg@10", make_comparable=True)
    assert ext["ndcg@10"].item() == pytest.approx(expected)
    assert ext["false_admission"].item() == 1.0 and ext["empty_answer"].item() == 0.0 and ext["hits"].item() == 3.0
    stats = result.stats
    pairs = stats[stats["b"] == "external:bm25"]
    assert set(pairs["a"]) == {"recommended", "joint"}
    assert set(pairs["metric"]) == {"ndcg@10", "mrr@10", "recall@10", "false_admission", "set_f1"}
    assert (pairs.loc[pairs["metric"] == "false_admission", "mean_b"] == 1.0).all()
    # in the report, and not written back as one of our run files
    html = (tmp_path / "run" / "report.html").read_text()
    assert "External runs beside ours" in html and "external:bm25" in html
    assert not any("external" in p.name for p in (tmp_path / "run" / "runs").iterdir())


def test_the_cli_takes_runs_and_several_metrics(tiny, tmp_path, capsys):
    run_file = bm25_like(tiny, tmp_path / "bm25.trec")
    out = tmp_path / "run"
    assert main(["sweep", "--dataset", str(tiny), "--modes", "fts", "--no-progress", "--folds", "0", "--out", str(out),
                 "--run", f"bm25={run_file}", "--metrics", "ndcg@10,false_admission",
                 "--terms", "1,2", "--coverages", "0,0.25", "--limits", "8"]) == 0
    printed = capsys.readouterr().out
    assert "external:bm25" in printed  # in the terminal summary too
    stats = pd.read_parquet(out / "stats.parquet")
    assert set(stats["metric"]) == {"ndcg@10", "false_admission"} and "external:bm25" in set(stats["b"])


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("tny-q001 ", "nosuch-q9 ", 1), "line 1: query id 'nosuch-q9' is not one of the queries of the corpora swept"),
    (lambda t: t.replace("tny-0009", "doc-from-elsewhere", 1), "document id 'doc-from-elsewhere' is not one of the entries"),
])
def test_a_run_of_another_collection_is_refused_before_anything_runs(tiny, tmp_path, capsys, edit, message):
    run_file = bm25_like(tiny, tmp_path / "bm25.trec")
    run_file.write_text(edit(run_file.read_text()))
    out = tmp_path / "run"
    assert main(["sweep", "--dataset", str(tiny), "--modes", "fts", "--out", str(out), "--run", str(run_file)]) == 2
    err = capsys.readouterr().err
    assert message in err and "%|" not in err and not out.exists()
    with pytest.raises(EvalError, match="no such run file"):
        harness.sweep(tiny, modes=("fts",), runs={"x": tmp_path / "missing.trec"}, out=out)


def test_a_mistyped_metric_gets_did_you_mean(tiny, capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--dataset", str(tiny), "--metrics", "ndgc@10"])
    assert "unknown metric 'ndgc@10' — did you mean 'ndcg@10'?" in capsys.readouterr().err
