"""Issue 45: what ``make eval`` prints at its end fits 100 columns and names every run
folder and report; ``make eval-quick`` is one model on SQLite over three bundled corpora."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from powercontext.eval.__main__ import QUICK, _quick, build_parser, main
from powercontext.eval.presenting.console import WIDTH
from powercontext.eval.corpora.datasets import BUNDLED_ROOT

from .fakes import write_corpus

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["--terms", "1,2", "--coverages", "0,0.5", "--limits", "1,8"]


def test_two_models_end_with_every_report_and_run_folder_in_100_columns(capsys):
    """The issue's run printed 15 lines over 100 columns (the models' side-by-side table)
    and only minilm's ``report:`` line."""
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:  # a short path: the lines naming files fit too
        tiny = write_corpus(Path(tmp) / "tiny")
        out = Path(tmp) / "run"
        code = main(["sweep", "--dataset", str(tiny), "--backends", "sqlite", "--modes", "fts,hybrid",
                     "--embeddings", "minilm,e5", "--embedding-cache", str(Path(tmp) / "cache"), "--out", str(out),
                     "--no-progress", *SMALL])
        printed = capsys.readouterr().out
        assert code == 0
        wide = [line for line in printed.splitlines() if len(line) > WIDTH]
        assert not wide, wide
        for name in ("minilm", "e5"):
            folder = (out / name).resolve()
            assert f"{name} run folder: {folder}" in printed and f"{name} report: {folder / 'report.html'}" in printed
            assert (folder / "report.html").is_file()
        assert f"side by side: {(out / 'embeddings.md').resolve()}" in printed
        table = printed[printed.index("hybrid, per model"):]
        assert re.search(r"^sqlite\s+recommended\s+\d\.\d{3}\s+\d\.\d{3}", table, re.M)


def test_the_quick_path_is_one_model_on_sqlite_over_three_bundled_corpora(tmp_path, capsys):
    args = build_parser().parse_args(["sweep", "--quick"])
    _quick(args)
    assert [Path(d).name for d in args.dataset] == list(QUICK["datasets"]) and len(args.dataset) == 3
    assert all(Path(d).is_dir() and Path(d).parent == BUNDLED_ROOT for d in args.dataset)
    assert (args.backends, args.embeddings) == (("sqlite",), ("minilm",))
    assert args.families == ("floors", "centred+cross-script+coverage")  # the floors and MiniLM's default
    assert main(["sweep", "--quick", "--all"]) == 2
    assert "--quick sets the corpora, database and model itself; drop --all" in capsys.readouterr().err
    make = (ROOT / "Makefile").read_text()
    assert re.search(r"^eval-quick: \$\(STAMP\)\n\t\$\(PY\) -m powercontext\.eval sweep --quick$", make, re.M)
    readme = (ROOT / "README.md").read_text()
    first = readme[readme.index("```bash"):]
    first = first[:first.index("```", 7)]
    assert first.splitlines()[1].startswith("make eval ") and first.splitlines()[2].startswith("make test ")
    assert "make eval-quick" in readme
