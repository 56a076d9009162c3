"""Issue 43, item 3: a local model folder's profile hashes what defines its vectors
(weights and tokenizer, not only its configs). A database made with the folder refuses
it once its weights changed, instead of opening and returning nothing (the stored
vectors and the new model's disagree); the per-file digests are cached so reopening
does not re-read the weights."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import powercontext as pc
from powercontext import profiles
from powercontext.embedding import minilm_path
from powercontext.memory.admission import NO_ADMISSION

E = pc.MemoryEntryInput


@pytest.fixture
def model_copy(tmp_path, monkeypatch):
    """A real copy of the bundled all-MiniLM-L6-v2 folder (its weights may be
    changed), with a digest cache of this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "team-model"
    shutil.copytree(minilm_path(), folder)
    return folder


def perturb_weights(folder: Path) -> None:
    """Other weights of the same shape: every tensor plus noise of its own spread."""
    import torch
    from safetensors.torch import load_file, save_file

    torch.manual_seed(0)
    tensors = load_file(folder / "model.safetensors")
    changed = {k: (t + torch.randn_like(t) * t.float().std().nan_to_num(0.0).to(t.dtype)) if t.is_floating_point()
               else t for k, t in tensors.items()}
    save_file(changed, folder / "model.safetensors", metadata={"format": "pt"})


async def test_a_folder_whose_weights_changed_is_refused_by_its_database(open_service, backend_name, model_copy):
    svc = await open_service(embedding=str(model_copy))
    before = svc.backend.embedding_profile
    rev = await svc.remember(None, entries=(E("fact", "the build cache lives in ~/.cache/atlas"),))
    res = await svc.search("where is the build cache", memories=(rev,), mode="vector", policy=NO_ADMISSION, explain=True)
    assert res.hits and res.decisions[0].candidate.cosine > 0.5
    target = str(svc.backend.path) if backend_name == "sqlite" else svc.backend.url
    await svc.close()

    perturb_weights(model_copy)
    after = profiles.local_profile(model_copy)
    assert after.profile_id != before.profile_id and after.profile_id.startswith("local-team-model-")
    with pytest.raises(pc.BackendUnavailableError, match="embedding profile") as info:
        await pc.open(target, embedding=str(model_copy))
    assert before.profile_id in str(info.value) and after.profile_id in str(info.value)
    assert len(str(info.value).splitlines()) == 1


def test_a_changed_tokenizer_is_another_profile_and_docs_are_not(model_copy):
    first = profiles.local_profile(model_copy)
    (model_copy / "README.md").write_text("notes about the model", encoding="utf-8")
    assert profiles.local_profile(model_copy) == first  # documentation defines no vector
    moved = model_copy.parent / "elsewhere" / "team-model"
    shutil.move(model_copy, moved)
    assert profiles.local_profile(moved) == first  # a moved folder keeps its profile
    vocab = (moved / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab[2000], vocab[2001] = vocab[2001], vocab[2000]
    (moved / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    assert profiles.local_profile(moved) != first


def test_same_size_same_mtime_other_bytes_is_another_profile(model_copy):
    """What ``cp -p`` of other weights looks like: size and mtime as before. The cache
    key's ctime (which no user call can set back) still tells the change."""
    first = profiles.local_profile(model_copy)
    weights = model_copy / "model.safetensors"
    st = weights.stat()
    with weights.open("r+b") as f:
        f.seek(st.st_size - 4096)
        tail = f.read(8)
        f.seek(st.st_size - 4096)
        f.write(bytes(b ^ 0x01 for b in tail))
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.stat().st_size == st.st_size and weights.stat().st_mtime_ns == st.st_mtime_ns
    assert profiles.local_profile(model_copy) != first


def test_reopening_reads_the_weights_from_the_cache(model_copy, capsys):
    from powercontext import model_files

    start = time.perf_counter()
    first = profiles.local_profile(model_copy)
    hashed = time.perf_counter() - start
    cached = model_files._read_cache()
    weights = str((model_copy / "model.safetensors").resolve())
    assert weights in cached and len(cached[weights][-1]) == 64
    start = time.perf_counter()
    assert profiles.local_profile(model_copy) == first
    again = time.perf_counter() - start
    with capsys.disabled():
        print(f"\nlocal_profile of a 91 MB model: first {hashed * 1000:.0f} ms, cached {again * 1000:.1f} ms")
    # Read from the cache, not the file (shown by what it says, not by a clock — a loaded
    # machine made "5x faster" fail): a digest planted under the file's unchanged stamp
    # is what the next open's profile is made from; the true one gives the first back.
    true = cached[weights]
    model_files._write_cache({**cached, weights: [*true[:-1], "0" * 64]})
    assert profiles.local_profile(model_copy) != first
    model_files._write_cache({**cached, weights: true})
    assert profiles.local_profile(model_copy) == first


def test_an_unreadable_cache_only_costs_a_rehash(model_copy):
    from powercontext import model_files

    first = profiles.local_profile(model_copy)
    model_files.cache_path().write_text("{not json", encoding="utf-8")
    assert profiles.local_profile(model_copy) == first
    assert model_files._read_cache()  # rewritten whole


def test_a_corrupt_folder_is_named_as_such_not_as_a_missing_package(model_copy):
    """Issue 43, item 11: weights cut short are a broken folder; no pip install fixes it."""
    from powercontext.errors import EmbeddingNotInstalledError, EmbeddingUnavailableError

    with (model_copy / "model.safetensors").open("r+b") as f:
        f.truncate(4096)
    with pytest.raises(EmbeddingUnavailableError, match="corrupt or incomplete") as info:
        profiles.local_model(model_copy).load()
    message = str(info.value)
    assert "model.safetensors does not parse" in message and "pip install" not in message
    assert not isinstance(info.value, EmbeddingNotInstalledError) and len(message.splitlines()) == 1
