import pytest

import powercontext as pc


@pytest.mark.parametrize("form", ["path", "sqlite:///", ":memory:"])
async def test_open_accepts_every_sqlite_form(tmp_path, form):
    target = {"path": str(tmp_path / "a.db"), "sqlite:///": f"sqlite:///{tmp_path}/b.db", ":memory:": ":memory:"}[form]
    svc = await pc.open(target)
    rev = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "opened"),))
    assert (await svc.memories()) == (rev.ref,)
    assert (await svc.capabilities()).fts and not (await svc.capabilities()).vector
    await svc.close()


async def test_reopening_a_file_keeps_its_memories(tmp_path):
    svc = await pc.open(tmp_path / "keep.db")
    rev = await svc.remember(None, entries=(pc.MemoryEntryInput("fact", "durable"),))
    await svc.close()
    again = await pc.open(tmp_path / "keep.db")
    assert (await again.head(rev.artifact_id)).ref == rev.ref
    await again.close()


@pytest.mark.parametrize("target, error", [
    ("postgres://x/y", ValueError),
    ("sqlite://relative.db", ValueError),
    ("oceanbase://root@127.0.0.1:1/", pc.BackendUnavailableError),
    ("oceanbase://root@127.0.0.1:1/pc", pc.BackendUnavailableError),
])
async def test_bad_targets_give_typed_readable_errors(target, error):
    with pytest.raises(error) as info:
        await pc.open(target)
    assert len(str(info.value).splitlines()) == 1


async def test_unknown_embedding_is_refused(tmp_path):
    with pytest.raises(ValueError, match="minilm"):
        await pc.open(tmp_path / "x.db", embedding="word2vec")
