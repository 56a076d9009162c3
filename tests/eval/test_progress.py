"""Progress bars: text that stays short in a log, and no bar for work that is not there."""

from __future__ import annotations

import io

from powercontext.eval import harness
from powercontext.eval.presenting.progress import bar
from powercontext.eval.scoring.sweep import Grid

from .fakes import HashEmbedding, write_corpus


def test_a_bar_that_is_not_on_a_terminal_redraws_rarely():
    log = io.StringIO()  # not a TTY, like a CI log or `make eval | tee`
    with bar(True, total=5000, desc="retrieve", file=log) as b:
        for _ in range(5000):
            b.update(1)
    draws = log.getvalue().count("\r")
    assert 1 <= draws <= 3, log.getvalue()  # the first and the final state, not thousands of lines
    assert "5000/5000" in log.getvalue()
    silent = io.StringIO()
    with bar(False, total=10, file=silent) as b:
        b.update(10)
    assert silent.getvalue() == ""


def test_no_embed_bar_when_every_text_is_cached(tmp_path, capsys):
    tiny = write_corpus(tmp_path / "tiny")
    options = dict(backends=("sqlite",), modes=("vector",), grid=Grid((2,), (0.25,), (0.3, 0.5), (8, 10)),
                   embedding=HashEmbedding(), embedding_cache=tmp_path / "cache", write=False, folds=0)
    first = harness.sweep(tiny, out=tmp_path / "one", **options)
    assert "embed" in capsys.readouterr().err and first.collected.embedding["embedded"] > 0
    second = harness.sweep(tiny, out=tmp_path / "two", **options)
    err = capsys.readouterr().err
    assert second.collected.embedding["embedded"] == 0 and "embed" not in err
    assert "stage 1/3 · test-hash-64 · sqlite" in err  # the other stages still show, counted without embed


# ---------------------------------------------------------------- issue 45: where a run is

import re
import subprocess
import sys

from powercontext.eval.presenting.progress import RunProgress, eta_text

LINE = re.compile(r"^stage (\d+)/(\d+) · (?:(\w+) · )?(sqlite|oceanbase|embed|sweep|analyse|report)"
                  r"(?: · [\w -]+)? · (\d+ %|…|running \d+ (?:s|min)), ETA (\d+ (?:s|min)|\?)$")


def test_a_piped_sweep_prints_plain_stage_lines_with_the_model_the_database_and_the_eta(tmp_path):
    """Issue 45: the bars said only ``embed``, ``load sqlite``, ``sweep 0/6``, and a log
    that was not a terminal collected cursor escapes. Through a pipe, each stage is a
    plain line: stage N of M, the model, the database, the share done and the run's ETA."""
    tiny = write_corpus(tmp_path / "tiny")
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.eval", "sweep", "--dataset", str(tiny), "--backends", "sqlite",
         "--modes", "fts,hybrid", "--embeddings", "minilm", "--embedding-cache", str(tmp_path / "cache"),
         "--out", str(tmp_path / "run"), "--terms", "1,2", "--coverages", "0,0.5", "--limits", "1,8"],
        capture_output=True, text=True, timeout=600, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    for stream in (done.stdout, done.stderr):
        assert "\r" not in stream and "\x1b" not in stream  # no redraws, no cursor escapes
    lines = [line for line in done.stderr.splitlines() if line.startswith("stage ")]
    progress = [m for m in map(LINE.match, lines) if m]
    ended = [line for line in lines if re.fullmatch(r"stage \d+/\d+ · .+ · done in \d+ s", line)]
    assert progress and len(progress) + len(ended) == len(lines), lines
    # embed, sqlite, sweep, analyse, report: five stages of one model, each announced and ended
    assert {int(m.group(2)) for m in progress} == {5} and {int(m.group(1)) for m in progress} == {1, 2, 3, 4, 5}
    assert len(ended) == 5
    db = [m for m in progress if m.group(4) == "sqlite"]
    assert db and all(m.group(3) == "minilm" for m in db)
    assert any("retrieve tiny" in line for line in lines) or any("load tiny" in line for line in lines)


def test_the_eta_counts_later_stages_and_a_skipped_stage_leaves_the_count():
    run = RunProgress(["minilm", "e5"], ["embed", "sqlite", "sweep"], enabled=False)
    run.expect("sqlite", 1000)  # both models search the same corpora
    assert [s.units for s in run.plan if s.kind == "sqlite"] == [1000, 1000]
    with run.stage("embed", 100) as s:
        s.update(100)
    run.skip("sweep")
    assert run.label(run.plan[1]) == "stage 2/5 · minilm · sqlite"
    # the first model's database stage still has e5's embed and database stages after it
    assert run.eta(run.plan[1], 0.0, 0.0) > run._estimate(run.plan[1]) > 0
    assert (eta_text(40), eta_text(240), eta_text(float("nan"))) == ("ETA 40 s", "ETA 4 min", "ETA ?")
