"""`%pcmem eval`'s grid options, named as `python -m powercontext.eval sweep` names them:
--quick (the families of `sweep --quick`), --families, --limits, --modes. Without them
the magic swept the full default grid (99 s under load on one bundled corpus) with no
way to ask for less. A bad value is the magic's one-line error, before anything loads."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from powercontext.eval.scoring.grid import QUICK_FAMILIES

from .helpers import fail, run
from .test_eval_custom_corpus import write_corpus


@pytest.mark.parametrize("options, expected", [
    ("--limits 0", "eval: --limits takes whole numbers ≥ 1, got 0"),
    ("--limits 8,x", "eval: --limits takes whole numbers ≥ 1, got 'x'"),
    ("--limits ,", "eval: --limits needs at least one value, got ','"),
    ("--families floors,nosuch", "eval: unknown admission family 'nosuch'"),
    ("--modes fts,fuzzy", "eval: unknown mode 'fuzzy'; choose from fts, vector, hybrid"),
    ("--quick --families floors", "eval: --quick sets the families itself; drop --families"),
])
def test_a_bad_grid_option_is_one_line(shell, capsys, options, expected):
    line = fail(shell, capsys, f"%pcmem eval --dataset atlas-etl --no-progress {options}")
    assert expected in line, line


def test_the_options_sweep_the_smaller_grid_they_name(shell, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = write_corpus(tmp_path / "my-corpus")
    frame = run(shell, f"%pcmem eval --dataset {folder} --families floors --limits 8 --modes fts --no-progress")
    assert isinstance(frame, pd.DataFrame) and set(frame["mode"]) == {"fts"}
    chosen = frame[frame["policy"].isin(["recommended", "joint"])]["label"]
    # the floors family alone: no cross-script or centred floor in what was chosen
    assert len(chosen) == 2 and all(re.fullmatch(r"terms≥\d+ cov≥[\d.]+", label) for label in chosen), list(chosen)


def test_quick_is_the_clis_quick_families(shell, tmp_path):
    from powercontext.eval.__main__ import QUICK

    assert QUICK["families"] == QUICK_FAMILIES  # one list, read by both
    folder = write_corpus(tmp_path / "my-corpus")
    frame = run(shell, f"%pcmem eval --dataset {folder} --quick --modes fts --no-progress")
    assert set(frame["policy"]) >= {"recommended", "joint", "initial", "no-admission"}


def test_the_options_are_in_the_help(shell, capsys):
    run(shell, "%pcmem eval --help")
    out = capsys.readouterr().out
    for option in ("--quick", "--families", "--limits", "--modes"):
        assert option in out, option
