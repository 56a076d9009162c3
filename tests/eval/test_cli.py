"""The CLI and the Python API end to end on a tiny corpus: the run folder, the printed
summary, ``run --policy``, and the errors for a bad dataset, an unreachable server and
a missing model."""

from __future__ import annotations

import json
import re
import socket

import pandas as pd
import pytest

from powercontext.eval import harness
from powercontext.eval.scoring import metrics as M
from powercontext.eval.__main__ import main, parse_policy
from powercontext.eval.scoring.sweep import INITIAL, Grid
from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

from .fakes import HashEmbedding, write_corpus

SMALL = ["--terms", "1,2,3", "--coverages", "0,0.25,0.5", "--cosines", "0.3,0.5,0.7", "--limits", "1,5,8,10"]


@pytest.fixture
def tiny(tmp_path):
    return write_corpus(tmp_path / "datasets" / "tiny")


def test_sweep_cli_writes_the_run_folder_and_prints_the_summary(tiny, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(["sweep", "--dataset", str(tiny), "--backends", "sqlite", "--modes", "fts", "--out", str(out),
                 "--no-progress", "--full-grid", *SMALL])  # every grid point, counted below
    printed = capsys.readouterr().out
    assert code == 0
    assert "recommended fts" in printed and "no-admission" in printed and "ratio" in printed
    for name in ("sweep.parquet", "summary.parquet", "summary.csv", "per_query.parquet", "breakdown.csv",
                 "stats.parquet", "abstention.csv", "recommendations.csv", "timings.csv", "summary.json", "report.html",
                 "cache/candidates.parquet", "cache/retrievals.parquet", "cache/meta.json"):
        assert (out / name).is_file(), name
    assert not (out / "db").exists()  # the run's SQLite databases go, like its OceanBase ones (--keep-databases)
    sweep = pd.read_parquet(out / "sweep.parquet")  # plain pandas reads every table
    assert set(sweep["split"]) == {"all", "dev", "test"} and set(sweep["corpus"]) == {"all", "tiny"}
    every = sweep[(sweep["corpus"] == "all") & (sweep["split"] == "all")]
    # terms × cov × limits; +nqc and +support read the vector channel, so in full text they are their base family
    fts_families = [f for f in Grid().families if "+nqc" not in f and "+support" not in f]
    assert every.groupby("family").size().to_dict() == {f: 3 * 3 * 4 for f in fts_families}
    summary = json.loads((out / "summary.json").read_text())
    assert [r["mode"] for r in summary["recommendations"]] == ["fts", "joint"]
    report = (out / "report.html").read_text()
    assert report.count("data:image/png;base64,") >= 3  # thresholds, frontier, limits
    for metric in M.METRIC_NAMES:
        assert f"<code>{metric}</code>" in report  # every metric is defined in the report
    # reuse: the cached candidates replay without any database, to the same figures
    assert main(["sweep", "--dataset", str(tiny), "--backends", "sqlite", "--modes", "fts", "--out", str(out),
                 "--no-progress", "--full-grid", "--reuse", *SMALL]) == 0
    assert "stages (s): validate" in capsys.readouterr().out
    again = pd.read_parquet(out / "sweep.parquet")
    pd.testing.assert_frame_equal(again, sweep)


def test_a_run_folder_reads_back_with_harness_load(tiny_run):
    """Issue 36: the sweep is kept as Parquet and reads back as the DataFrames it was.
    It reads the session's tiny sweep (tests/eval/conftest.py) rather than sweeping again."""
    result = tiny_run
    run = harness.load(result.out)
    assert {"sweep", "summary", "per_query", "recommendations", "splits", "stats"} <= set(run.tables)
    assert run.info["recommendations"][0]["mode"] == "fts"
    keys = ["backend", "mode", "corpus", "split", "family", "limit", "fts_min_terms", "fts_min_coverage"]
    live = result.sweep.sort_values(keys).reset_index(drop=True)
    kept = run.sweep.sort_values(keys).reset_index(drop=True)[live.columns]
    assert kept["ndcg@10"].dtype == "float32" and kept["fts_min_terms"].dtype == live["fts_min_terms"].dtype
    pd.testing.assert_frame_equal(kept, live, check_dtype=False, rtol=1e-6)  # metrics kept as float32
    per_query = run.per_query.sort_values(["policy", "query_id"]).reset_index(drop=True)
    assert isinstance(per_query["ranking"][0], tuple) and isinstance(per_query["tags"][0], tuple)
    live_q = result.per_query.sort_values(["policy", "query_id"]).reset_index(drop=True)
    assert per_query["ranking"].tolist() == live_q["ranking"].tolist()
    # issue 44: an answered question has no false-admission rate (it read "1"), an
    # unanswerable one no empty-answer rate; each is 0/1 where it is defined
    answered, unanswerable = per_query[per_query["positive"]], per_query[~per_query["positive"]]
    assert len(answered) and len(unanswerable)
    assert answered["false_admission"].isna().all() and unanswerable["empty_answer"].isna().all()
    assert set(unanswerable["false_admission"]) <= {0.0, 1.0} and set(answered["empty_answer"]) <= {0.0, 1.0}
    assert (unanswerable["false_admission"] == (unanswerable["hits"] > 0)).all()
    with pytest.raises(AttributeError, match="no table 'nope'"):
        run.nope
    from powercontext.magics.widgets import ThresholdTuner

    tuner = ThresholdTuner(run)  # a kept run drives the tuner like a live result
    assert tuner.point is not None


def test_the_terminal_summary_fits_100_columns_and_explains_its_abbreviations(tiny, tmp_path):
    from powercontext.eval.presenting.console import WIDTH, format_summary

    result = harness.sweep(tiny, modes=("fts",), grid=Grid((1, 2, 3), (0.0, 0.25), (0.3,), (8,)),
                           out=tmp_path / "run", progress=False, write=False, folds=0)
    text = format_summary(result)
    assert max(map(len, text.splitlines())) <= WIDTH == 100, [line for line in text.splitlines() if len(line) > 100]
    flat = " ".join(text.split())  # the legend is wrapped at 100 columns
    assert "legend:" in flat and "FA: false admission" in flat and "xs: cross-script terms" in flat
    for header in ("nDCG@10 [95% CI]", "R@10", "FA [95% CI]", "empty", "hits"):
        assert header in text
    assert "SetF" not in text  # in summary.csv, not on the terminal


def test_api_sweep_on_both_backends_in_every_mode(tiny, tmp_path, oceanbase_url, monkeypatch):
    monkeypatch.setenv("POWERCONTEXT_OCEANBASE_URL", oceanbase_url)
    grid = Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.2, 0.4, 0.6), (1, 8, 10))
    result = harness.sweep(tiny, backends=("sqlite", "oceanbase"), modes=("fts", "vector", "hybrid"),
                           out=tmp_path / "run", grid=grid, embedding=HashEmbedding(), embedding_cache=tmp_path / "emb",
                           progress=False)
    assert set(result.recommendations["mode"]) == {"fts", "vector", "hybrid", "joint"}
    table = result.summary_table("test")
    assert set(table["backend"]) == {"sqlite", "oceanbase"} and set(table["mode"]) == {"fts", "vector", "hybrid"}
    assert {"recommended", "initial", "no-admission", "joint"} <= set(table["policy"])
    spot = result.cross["spot_check"]
    assert len(spot) == 2 * 3 * 2 * 16 and spot["equal"].all()  # backends × modes × policies × queries
    recall = result.cross["vector_recall"].set_index(["backend", "k"])["recall"]
    assert recall[("sqlite", 8)] == 1.0 and 0.9 <= recall[("oceanbase", 8)] <= 1.0
    deltas = result.cross["deltas"]
    assert set(deltas["mode"]) == {"fts", "vector", "hybrid"} and deltas["delta"].notna().any()
    admitted = result.cross["admitted"]  # the default's admitted candidates, before the limit
    assert len(admitted) == 3 * 16 and admitted["same"].all() and (admitted["n_a"] > 0).any()
    assert any("admitted candidates (before the limit) are identical" in n for n in result.notes)
    assert len(result.abstention) and result.abstention["nauc"].notna().any()
    assert (result.timings["ratio"] > 0).all()
    no_adm = result.per_query[(result.per_query["policy"] == "no-admission") & (result.per_query["mode"] == "vector")]
    assert (no_adm["hits"] > 0).all()  # no admission: every query gets its pool (limit 8)
    import pymysql
    from urllib.parse import urlparse

    p = urlparse(oceanbase_url)
    con = pymysql.connect(host=p.hostname, port=p.port, user=p.username or "root", password=p.password or "")
    with con.cursor() as cur:
        cur.execute("SHOW DATABASES LIKE 'pc_eval_tiny_%'")
        assert cur.fetchall() == ()  # the run dropped its databases
    con.close()


def test_summary_api_returns_the_summary_frame(tiny):
    frame = harness.summary(tiny, backends=("sqlite",), modes=("fts",),
                            grid=Grid((1, 2), (0.0, 0.25), (0.3,), (8,)))
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["policy"]) == ["recommended", "joint", "initial", "default", "no-admission"]
    assert {"ndcg@10", "false_admission", "false_admission_ci", "empty_answer", "set_f1"} <= set(frame.columns)
    by = frame.set_index("policy")
    assert by.loc["no-admission", "false_admission"] >= max(by.loc["initial", "false_admission"],
                                                            by.loc["recommended", "false_admission"])
    assert by.loc["no-admission", "hits"] >= by.loc["initial", "hits"] > 0


def test_run_cli_evaluates_one_policy_through_admission_fuse(tiny, tmp_path, capsys):
    assert main(["run", "--dataset", str(tiny), "--backends", "sqlite", "--modes", "fts", "--no-progress",
                 "--policy", "fts_min_terms=1,fts_min_coverage=0.5", "--out", str(tmp_path / "one")]) == 0
    printed = capsys.readouterr().out
    assert "terms≥1 cov≥0.5" in printed
    per_query = pd.read_parquet(tmp_path / "one" / "per_query.parquet")
    assert len(per_query) == 16 and (per_query["fts_min_coverage"] == 0.5).all()
    # the reference path and the sweep agree on the same policy
    _, summary = harness.run(tiny, policy=AdmissionPolicy(1, 0.5), backends=("sqlite",), modes=("fts",), progress=False)
    swept = harness.sweep(tiny, modes=("fts",), grid=Grid((1,), (0.5,), (0.3,), (8,)), write=False, progress=False,
                          out=tmp_path / "sw")
    row = swept.sweep[(swept.sweep["fts_min_terms"] == 1) & (swept.sweep["fts_min_coverage"] == 0.5)
                      & (swept.sweep["limit"] == 8) & (swept.sweep["corpus"] == "all") & (swept.sweep["split"] == "all")]
    ref = summary[summary["split"] == "all"].iloc[0]
    for metric in ("ndcg@10", "set_f1", "false_admission", "empty_answer"):
        assert row[metric].iloc[0] == pytest.approx(ref[metric]), metric


def test_policy_parsing():
    assert parse_policy("initial") == INITIAL and parse_policy("none") == NO_ADMISSION
    assert parse_policy("vector_min_cosine=0.45") == AdmissionPolicy(vector_min_cosine=0.45)
    with pytest.raises(Exception, match="bad policy part"):
        parse_policy("fts_min=2")


def test_invalid_dataset_points_at_the_line(tiny, capsys):
    lines = (tiny / "queries.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"memories": ["repo"]', '"memories": ["rep"]')
    (tiny / "queries.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["sweep", "--dataset", str(tiny), "--modes", "fts", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "2 problem(s)" in err and "queries.jsonl:2: searches memory 'rep', which has no entries" in err
    assert "qrels.trec:2: entry 'tny-0001' is in memory 'repo', which query 'tny-q002' does not search" in err


def test_a_users_corpus_that_only_breaks_bundled_style_sweeps_without_a_style_line(tiny, tmp_path, capsys):
    """Issue 36: every sweep of a user's own corpus printed "126 bundled-style note(s) skipped"."""
    lines = (tiny / "queries.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace('"lexical"', '"lexicall"')
    (tiny / "queries.jsonl").write_text("\n".join(lines) + "\n")
    out = tmp_path / "run"
    assert main(["sweep", "--dataset", str(tiny), "--modes", "fts", "--no-progress", "--out", str(out), *SMALL]) == 0
    captured = capsys.readouterr()
    assert "bundled-style" not in captured.err + captured.out
    report = (out / "report.html").resolve()
    assert f"report: {report}" in captured.out and report.as_uri() in captured.out
    assert "peak RSS" in captured.out and "wall time" in captured.out
    assert main(["sweep", "--dataset", str(tiny), "--modes", "fts", "--no-progress", "--style", "bundled"]) == 2
    assert "queries.jsonl:2: unknown tag 'lexicall'" in capsys.readouterr().err


@pytest.mark.parametrize("argv, expected", [
    (["--backends", "sqllite"], "unknown backend 'sqllite' — did you mean 'sqlite'?"),
    (["--modes", "fts,hybird"], "unknown mode 'hybird' — did you mean 'hybrid'?"),
])
def test_a_mistyped_backend_or_mode_is_refused_before_any_progress_bar(tiny, tmp_path, capsys, argv, expected):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "--dataset", str(tiny), "--out", str(out), *argv])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and "%|" not in err and "it/s" not in err and not out.exists()
    with pytest.raises(harness.EvalError, match="did you mean"):
        harness.sweep(tiny, backends=[argv[1].split(",")[-1]] if argv[0] == "--backends" else ["sqlite"],
                      modes=argv[1].split(",") if argv[0] == "--modes" else ["fts"], out=out)
    assert not out.exists()


@pytest.mark.parametrize("argv, expected", [
    (["--embeddings", "minilm,e6"], "unknown embedding 'e6': use minilm, e5 or the folder of a sentence-transformers model"),
    (["--embeddings", "mini-lm"], "unknown embedding 'mini-lm' — did you mean 'minilm'?"),
    (["--limts", "8"], "unrecognized arguments: --limts 8 — did you mean '--limits'?"),
])
def test_a_cli_mistake_is_one_line_first_and_refused_before_any_work(tiny, tmp_path, capsys, argv, expected):
    # issue 45: `--embeddings minilm,e6` failed after the whole minilm pass (29 s), and
    # argparse printed ~20 lines of usage before the line that says what is wrong
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", "--dataset", str(tiny), "--out", str(out), *argv])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.splitlines()
    assert expected in lines[0] and lines[0].startswith("python -m powercontext.eval")
    assert len(lines) == 1 and lines[0].endswith("(every option: --help)") and not out.exists()


def test_validate_of_a_folder_that_is_not_there_says_so_once(tiny, capsys):
    assert main(["validate", str(tiny.parent / "tinyy")]) == 2
    err = capsys.readouterr().err
    assert "no such folder — did you mean 'tiny'?" in err and "file missing" not in err


def test_validate_lists_every_problem_or_says_valid(tiny, tmp_path, capsys):
    assert main(["validate", str(tiny)]) == 0
    assert capsys.readouterr().out.strip() == (
        f"{tiny}: valid (13 entries in 2 memories, 16 queries with a split, 14 judgements)")
    assert main(["validate", str(tiny), "--style", "bundled"]) == 2
    err = capsys.readouterr().err
    assert "below the FORMAT.md target: entries: 13 < 210" in err and err.startswith("error: ")
    broken = write_corpus(tmp_path / "broken")
    (broken / "qrels.trec").write_text("tny-q001 0 tny-0007 3\ntny-q001 0 tny-0099 x\n")
    assert main(["validate", str(broken), str(tiny)]) == 2
    captured = capsys.readouterr()
    assert "qrels.trec:1: entry 'tny-0007' is inactive" in captured.err and "qrels.trec:2: malformed line" in captured.err
    assert f"{tiny}: valid" in captured.out  # every folder is checked


def test_unreachable_server_is_a_clear_error(tiny, tmp_path, monkeypatch, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("POWERCONTEXT_OCEANBASE_URL", f"oceanbase://root@127.0.0.1:{port}/")
    assert main(["sweep", "--dataset", str(tiny), "--backends", "oceanbase", "--modes", "fts", "--no-progress",
                 "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert f"cannot reach the OceanBase server at 127.0.0.1:{port}" in err and "seekdb start" in err


def test_missing_model_is_a_clear_error(tiny, tmp_path, monkeypatch, capsys):
    import powercontext.embedding as embedding
    from powercontext.errors import EmbeddingNotInstalledError

    def missing():
        raise EmbeddingNotInstalledError("the bundled model is not installed (simulated)")

    monkeypatch.setattr(embedding, "minilm_path", missing)
    assert main(["sweep", "--dataset", str(tiny), "--modes", "vector", "--no-progress", "--out", str(tmp_path / "r"),
                 "--embedding-cache", str(tmp_path / "empty-cache")]) == 2
    err = capsys.readouterr().err
    assert "embedding model is unavailable" in err and "--modes fts" in err and "pip install" in err


def test_every_subcommand_and_api_function_is_documented():
    import powercontext.eval as package
    from powercontext.eval import __main__ as cli
    from powercontext.eval.__main__ import build_parser

    sub = next(a for a in build_parser()._actions if a.choices and "sweep" in a.choices)
    for command in sub.choices:
        assert f"python -m powercontext.eval {command}" in cli.__doc__, command
    for name in ("sweep", "summary", "run", "analyse", "calibrate"):
        assert name in harness.__all__ and f"harness.{name}" in harness.__doc__ + package.__doc__.replace("``", ""), name


async def test_sync_api_works_inside_a_running_event_loop():
    import asyncio

    from powercontext.eval.harness import _sync
    from powercontext.loop import default_runner

    async def where():
        await asyncio.sleep(0)
        return asyncio.get_running_loop()

    loop = _sync(where())  # we are inside pytest-asyncio's loop: must not asyncio.run here
    assert loop is not asyncio.get_running_loop() and loop is default_runner().loop


STEMMED = [
    {"id": "stm-0001", "memory": "repo", "kind": "fact", "state": "active",
     "text": "Documentation changes follow the validation conventions of the docs site."},
    {"id": "stm-0002", "memory": "repo", "kind": "fact", "state": "active",
     "text": "Release builds are signed on the CI runner."},
    {"id": "stm-0003", "memory": "repo", "kind": "fact", "state": "active",
     "text": "The staging database is reset every night."},
]
STEMMED_QUERIES = [
    {"id": f"stm-q{i:03d}", "text": text, "lang": "en", "memories": ["repo"], "tags": ["lexical"], "split": split}
    for i, (text, split) in enumerate([
        ("which convention applies when documenting", "dev"), ("validating documented conventions", "test"),
        ("how is a release build signed", "dev"), ("when is the staging database reset", "test"),
        ("which coffee does the team drink", "dev"), ("what is the office wifi password", "test"),
    ], start=1)
]
STEMMED_QRELS = [("stm-q001", "stm-0001", 2), ("stm-q002", "stm-0001", 2), ("stm-q003", "stm-0002", 2),
                 ("stm-q004", "stm-0003", 2)]


def test_analyzers_cli_sweeps_once_per_analyzer_and_puts_the_figures_side_by_side(tmp_path, capsys):
    """Only stemming matches "convention" to "conventions" and "documenting" to
    "Documentation": v2 answers what v1 cannot, and the table says so."""
    corpus = write_corpus(tmp_path / "datasets" / "stemmed", STEMMED, STEMMED_QUERIES, STEMMED_QRELS)
    out = tmp_path / "cmp"
    assert main(["analyzers", "--dataset", str(corpus), "--backends", "sqlite", "--modes", "fts", "--out", str(out),
                 "--no-progress", "--folds", "0", *SMALL]) == 0
    printed = capsys.readouterr().out
    assert "fts, per analyzer" in printed and "analyzers.md" in printed  # its own mode when there is no hybrid
    assert re.search(r"^sqlite\s+initial\s+\d\.\d{3}\s+\d\.\d{3}", printed, re.M)  # nDCG v1, nDCG v2
    for analyzer in ("v1", "v2"):
        assert json.loads((out / analyzer / "summary.json").read_text())["analyzer"] == analyzer
    table = pd.read_csv(out / "analyzers.csv")
    assert not table.duplicated(["backend", "mode", "policy"]).any()
    assert table["ndcg@10 v1"].notna().all() and table["ndcg@10 v2"].notna().all()
    row = table[(table["mode"] == "fts") & (table["policy"] == "initial")].iloc[0]
    assert row["ndcg@10 v2"] > row["ndcg@10 v1"]
    assert (out / "analyzers.md").read_text().count("| sqlite | fts |") >= 3


def test_an_unknown_analyzer_is_refused_before_any_database(tiny, tmp_path, capsys):
    assert main(["sweep", "--dataset", str(tiny), "--modes", "fts", "--no-progress", "--analyzer", "v9",
                 "--out", str(tmp_path / "r")]) == 2
    assert "v9" in capsys.readouterr().err
    assert not (tmp_path / "r" / "db").exists()


def test_compact_maintains_each_database_between_its_load_and_its_retrieval(tiny, tmp_path, capsys):
    plain = harness.sweep(tiny, modes=("fts",), grid=Grid((1,), (0.5,), (0.3,), (8,)), write=False, progress=False,
                          out=tmp_path / "plain")
    assert main(["sweep", "--dataset", str(tiny), "--backends", "sqlite", "--modes", "fts", "--out", str(tmp_path / "c"),
                 "--no-progress", "--compact", *SMALL]) == 0
    assert "compact" in capsys.readouterr().out  # its own stage in the timings
    compacted = pd.read_parquet(tmp_path / "c" / "cache" / "candidates.parquet")
    pd.testing.assert_frame_equal(compacted, pd.read_parquet(tmp_path / "plain" / "cache" / "candidates.parquet"))


def test_a_corrupt_model_folder_names_its_file_and_no_install(tiny, tmp_path, capsys):
    """Issue 43, item 11: a local model folder whose weights are cut short is a broken
    folder, not a missing package: the error names the file, never `pip install`."""
    import shutil

    from powercontext.embedding import minilm_path

    folder = tmp_path / "team-model"
    shutil.copytree(minilm_path(), folder)
    with (folder / "model.safetensors").open("r+b") as f:
        f.truncate(4096)
    assert main(["sweep", "--dataset", str(tiny), "--modes", "vector", "--no-progress", "--out", str(tmp_path / "r"),
                 "--embeddings", str(folder), "--embedding-cache", str(tmp_path / "empty-cache")]) == 2
    err = capsys.readouterr().err
    assert "model.safetensors" in err and "corrupt or incomplete" in err and "--modes fts" in err, err
    assert "pip install" not in err and "Traceback" not in err
