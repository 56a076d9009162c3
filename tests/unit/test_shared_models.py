"""Issue 47 item 5: a loaded sentence-transformers model is shared by every handle in
the process while its folder's content is the same (a notebook opening several handles
loaded MiniLM once per handle), and loaded afresh when the folder's bytes changed.
Real all-MiniLM-L6-v2, real folder copies, real threads."""

from __future__ import annotations

import shutil
import threading

import pytest

import powercontext as pc
from powercontext import loaded_models, profiles
from powercontext.embedding import SentenceTransformerEmbedding, minilm_path

from tests.conformance.test_model_folder_profile import perturb_weights


@pytest.fixture
def own_cache(monkeypatch):
    """An empty model cache for this test (the session's held models come back after),
    so the copies it loads are not kept for the rest of the worker's tests."""
    monkeypatch.setattr(loaded_models, "_models", type(loaded_models._models)())


@pytest.fixture
def model_copy(tmp_path, monkeypatch, own_cache):
    """A real copy of the bundled MiniLM folder, with a digest cache of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "team-model"
    shutil.copytree(minilm_path(), folder)
    return folder


def test_a_second_handle_on_the_bundled_model_reuses_the_loaded_model(minilm):
    again = SentenceTransformerEmbedding()
    assert not again.loaded
    vectors = again.encode(["the build cache lives in ~/.cache/atlas"])
    assert again._model is minilm._model  # the same object: nothing was loaded twice
    reference = minilm.encode(["the build cache lives in ~/.cache/atlas"])
    assert max(abs(a - b) for a, b in zip(vectors[0], reference[0])) < 1e-5


async def test_handles_opened_by_name_share_one_model(open_service, minilm):
    first = await open_service(embedding="minilm")
    second = await open_service(embedding="minilm")
    assert first.embedding is not second.embedding
    for svc in (first, second):
        await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "deploys run from the release branch"),))
    assert first.embedding._model is second.embedding._model is minilm._model


def test_a_folder_whose_bytes_changed_loads_its_own_model(model_copy):
    before = SentenceTransformerEmbedding(str(model_copy), profile=profiles.local_profile(model_copy))
    same = SentenceTransformerEmbedding(str(model_copy), profile=profiles.local_profile(model_copy))
    old = before.encode(["where is the build cache"])
    same.encode(["where is the build cache"])
    assert same._model is before._model

    perturb_weights(model_copy)
    after = SentenceTransformerEmbedding(str(model_copy), profile=profiles.local_profile(model_copy))
    new = after.encode(["where is the build cache"])
    assert after._model is not before._model
    assert new != old  # the changed weights are the ones that embed, not the held copy's


def test_the_cache_is_bounded_and_a_dropped_model_still_serves_its_handle(model_copy, monkeypatch):
    monkeypatch.setattr(loaded_models, "MAX_MODELS", 1)
    bundled = SentenceTransformerEmbedding()
    bundled.encode(["a"])
    local = SentenceTransformerEmbedding(str(model_copy), profile=profiles.local_profile(model_copy))
    local.encode(["a"])  # the only slot now holds the copy: the bundled model was dropped
    assert len(loaded_models._models) == 1
    fresh = SentenceTransformerEmbedding()
    fresh.encode(["a"])
    assert fresh._model is not bundled._model  # loaded again, since it was no longer held
    old, new = bundled.encode(["a"])[0], fresh.encode(["a"])[0]  # the dropped copy still serves its handle
    assert max(abs(a - b) for a, b in zip(old, new)) < 1e-5


def test_handles_on_threads_encode_one_shared_model_safely(minilm):
    handles = [SentenceTransformerEmbedding() for _ in range(4)]
    texts = [f"note {i}: the cache key holds the folder digest" for i in range(16)]
    expected = minilm.encode(texts)
    results, errors = [None] * len(handles), []

    def run(i):
        try:
            for _ in range(3):
                results[i] = handles[i].encode(texts)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(handles))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for got in results:
        assert len(got) == len(expected)
        assert max(abs(a - b) for row, ref in zip(got, expected) for a, b in zip(row, ref)) < 1e-5
    assert all(h._model is minilm._model for h in handles)
