"""Shared harness fixtures: one small sweep reused by the tests that only read its results."""

from __future__ import annotations

import pytest

from powercontext.eval import harness
from powercontext.eval.scoring.sweep import Grid

from .fakes import write_corpus


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """The tiny corpus (16 queries, so cross-validated over 5 folds) swept in fts on
    SQLite, run folder written."""
    folder = write_corpus(tmp_path_factory.mktemp("cv") / "tiny")
    grid = Grid((1, 2, 3), (0.0, 0.25, 0.5), (0.3,), (1, 8, 10))
    return harness.sweep(folder, modes=("fts",), grid=grid, out=tmp_path_factory.mktemp("cv-run"), progress=False)
