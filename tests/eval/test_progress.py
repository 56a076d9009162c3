"""Progress bars: text that stays short in a log, and no bar for work that is not there."""

from __future__ import annotations

import io

from powercontext.eval import harness
from powercontext.eval.progress import bar
from powercontext.eval.sweep import Grid

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
    assert "retrieve sqlite" in err  # the other bars still show
