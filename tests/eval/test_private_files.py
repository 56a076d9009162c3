"""Run folders and the embedding cache are private (issue 43, item 8): they hold every
memory's text, so every folder the harness creates is 0700 and every file 0600, like
the SQLite databases — whatever the process's umask says."""

from __future__ import annotations

import os
import stat

import numpy as np
import pytest

from powercontext.eval import harness
from powercontext.eval.running.embedcache import CachingEmbedding
from powercontext.eval.scoring.sweep import Grid

from .fakes import HashEmbedding, write_corpus

GRID = Grid((1, 2), (0.0, 0.25), (0.2, 0.4), (8,))


@pytest.fixture
def open_umask():
    """The common default umask (022): without explicit modes, files come out 0644."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def modes_under(root):
    """(path, mode) of the root and everything below it, folders and files."""
    found = [(root, stat.S_IMODE(os.stat(root).st_mode))]
    for folder, dirs, files in os.walk(root):
        found += [(os.path.join(folder, n), stat.S_IMODE(os.stat(os.path.join(folder, n)).st_mode))
                  for n in dirs + files]
    return found


def assert_private(root):
    found = modes_under(root)
    public = [(p, oct(m)) for p, m in found if m != (0o700 if os.path.isdir(p) else 0o600)]
    assert not public, public[:10]
    return found


@pytest.mark.parametrize("backends", [("sqlite",), ("sqlite", "oceanbase")])
def test_a_sweeps_run_folder_and_embedding_cache_are_private(tmp_path, open_umask, backends, request, monkeypatch):
    if "oceanbase" in backends:
        monkeypatch.setenv("POWERCONTEXT_OCEANBASE_URL", request.getfixturevalue("oceanbase_url"))
    tiny = write_corpus(tmp_path / "tiny")
    run_file = tmp_path / "bm25.trec"
    run_file.write_text("tny-q001 Q0 tny-0001 1 2.0 x\n")
    out, cache = tmp_path / "results" / "run", tmp_path / "home" / "emb"
    harness.sweep(tiny, backends=backends, modes=("fts", "hybrid"), out=out, grid=GRID, folds=0, progress=False,
                  embedding=HashEmbedding(), embedding_cache=cache, keep_databases=True, runs={"bm25": run_file})
    found = {os.path.relpath(p, out) for p, _ in assert_private(out)}
    # the tables, the report, the TREC files, the candidates cache and the database all checked
    assert {"sweep.parquet", "summary.csv", "summary.json", "report.html", "policy.json", "qrels.trec", "runs",
            "cache", "cache/candidates.parquet", "cache/meta.json"} <= found
    assert any(p.endswith(".run.gz") for p in found) and any(p.endswith(".sqlite.db") for p in found)
    assert stat.S_IMODE(os.stat(tmp_path / "results").st_mode) == 0o700  # created on the way
    assert len(assert_private(tmp_path / "home")) == 3  # home/, emb/ and the one cache file


def test_the_embedding_cache_file_is_rewritten_private(tmp_path, open_umask):
    """A cache file an older version left world-readable is 0600 once saved again."""
    import asyncio

    cache = CachingEmbedding(HashEmbedding(), tmp_path / "emb")
    asyncio.run(cache.embed(("one text",)))
    cache.save()
    os.chmod(cache.path, 0o644)
    again = CachingEmbedding(HashEmbedding(), tmp_path / "emb")
    assert ("one text" in again) and np.allclose(again.vector("one text"), HashEmbedding.vector("one text"))
    asyncio.run(again.embed(("another",)))
    again.save()
    assert_private(tmp_path / "emb")
    assert sorted(os.listdir(tmp_path / "emb")) == [cache.path.name]  # no temporary file left behind
