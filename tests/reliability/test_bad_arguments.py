"""The bad-argument calls issue 35 (defect 7) named, one by one: each gives the
library's typed error with a bounded message and leaves nothing behind. The property
test over every entry point (test_entry_points.py) closes the class; these pin the
instances that were found."""

from __future__ import annotations

import os

import pytest

import powercontext as pc
from powercontext.errors import MAX_MESSAGE_CHARS
from powercontext.runtime import PowerContextRuntime

from ..magics.conftest import shell  # noqa: F401  (the magics' IPython shell fixture)

E = pc.MemoryEntryInput


async def _memory(svc):
    return await svc.remember(None, entries=(E("fact", "the build cache lives in ~/.cache/atlas"),))


async def test_bad_arguments_to_the_service_are_typed(svc):
    rev = await _memory(svc)
    with pytest.raises(pc.InvalidMemoryRequestError, match="items"):
        await svc.render_context(None)
    with pytest.raises(pc.InvalidMemoryRequestError, match="policy must be an AdmissionPolicy"):
        await svc.search("build cache", memories=(rev,), policy=1)
    for name in (10**100, "\ud800", None, ["src"]):
        with pytest.raises(pc.InvalidMemoryRequestError, match="name"):
            await svc.sources.get(name)
    with pytest.raises(pc.InvalidMemoryRequestError, match="rebuild|memories"):
        await svc.rebuild_projections(memories=5)


@pytest.mark.parametrize("kind", ["fcat", "Fact", "note", "x" * 10_000_000])
async def test_one_rule_for_kinds(svc, kind):
    with pytest.raises(pc.InvalidMemoryRequestError, match="kind must be one of fact, preference") as caught:
        await svc.remember(None, entries=(E(kind, "a fact with a mistyped kind"),))
    assert len(str(caught.value)) < 300
    assert await svc.memories() == ()
    if kind == "fcat":
        assert "did you mean 'fact'" in str(caught.value)


async def test_a_ten_megabyte_argument_is_not_copied_into_the_message(svc):
    rev = await _memory(svc)
    huge = "m" * 10_000_000
    for call in (lambda: svc.search("cache", memories=(rev,), mode=huge),
                 lambda: svc.remember(rev, entries=(E("fact", "x"),), mode=huge),
                 lambda: svc.cite(rev, huge, huge)):
        with pytest.raises(pc.PowerContextError) as caught:
            await call()
        message = str(caught.value)
        assert len(message) <= MAX_MESSAGE_CHARS + 100 and "m" * 200 not in message, len(message)


async def test_a_closed_service_refuses_with_a_typed_error(svc):
    rev = await _memory(svc)
    await svc.close()
    with pytest.raises(pc.ServiceClosedError, match="closed"):
        await svc.search("cache", memories=(rev,))
    with pytest.raises(pc.PowerContextError):
        await svc.head(rev.artifact_id)


@pytest.mark.parametrize("target", [None, 1.5, True, [], 0, b"memory.db", "", "   ", "a\ud800.db", "nul\x00.db"])
async def test_pc_open_refuses_what_is_no_path_and_creates_nothing(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pc.InvalidMemoryRequestError):
        await pc.open(target)
    assert os.listdir(tmp_path) == [], "a refused open created a file"


async def test_pc_open_of_a_file_that_is_not_a_database(tmp_path):
    other = tmp_path / "hostname"
    other.write_text("build-host-7\n")
    with pytest.raises(pc.BackendUnavailableError, match="cannot open .* as a PowerContext SQLite database"):
        await pc.open(str(other))
    assert other.read_text() == "build-host-7\n" and sorted(os.listdir(tmp_path)) == ["hostname"]
    with pytest.raises(pc.InvalidMemoryRequestError, match="takes no keyword 'bogus'"):
        await pc.open(str(tmp_path / "new.db"), bogus=1)
    assert sorted(os.listdir(tmp_path)) == ["hostname"]


async def test_a_mistyped_keyword_is_named_with_the_one_it_meant(tmp_path):
    # issue 45: `embeding=` listed other keywords but not `embedding=`; a policy's
    # `vector_min_centered=` was a bare TypeError
    with pytest.raises(pc.InvalidMemoryRequestError,
                       match=r"pc.open\(\) takes no keyword 'embeding' — did you mean 'embedding'\?.*analyzer=, embedding="):
        await pc.open(str(tmp_path / "new.db"), embeding="e5")
    assert os.listdir(tmp_path) == []
    with pytest.raises(pc.InvalidMemoryRequestError, match="takes no keyword 'vector_min_centered' — did you mean 'vector_min_centred'"):
        pc.AdmissionPolicy(vector_min_centered=0.3)
    with pytest.raises(pc.InvalidMemoryRequestError, match="unknown admission policy field.*did you mean 'fts_min_terms'"):
        pc.AdmissionPolicy.from_dict({"format": "powercontext.admission-policy.v1", "fts_min_term": 2})
    assert pc.AdmissionPolicy(vector_min_centred=0.2).vector_min_centred == 0.2


async def test_bad_arguments_to_the_runtime_are_typed(tmp_path):
    runtime = await PowerContextRuntime.open(str(tmp_path / "runtime.db"))
    try:
        sources = runtime.sources.for_scope("project:x")
        for after, limit in ((None, 10), ("1", 10), (0, None), (0, 0), (10**100, 1)):
            with pytest.raises(pc.InvalidRuntimeRequestError):
                await sources.journal(after=after, limit=limit)
        with pytest.raises(pc.InvalidRuntimeRequestError, match="anchors"):
            await runtime.memory.for_scope("project:x").retire(5)
    finally:
        await runtime.close()
    for seconds in (10**100, 1e300, float("nan"), -1, 0.01):
        with pytest.raises(pc.InvalidRuntimeRequestError, match="schedule_seconds"):
            await PowerContextRuntime.open(str(tmp_path / "scheduled.db"), candidate_pipeline=_Pipeline(),
                                           schedule_seconds=seconds)


class _Pipeline:
    async def extract(self, sources, artifacts, current):
        return ()


def test_pcmem_remember_keeps_the_same_rule_for_kinds(shell, tmp_path, capsys):
    from ..magics.helpers import fail, run

    run(shell, f"%pcmem open {tmp_path / 'memory.db'}")
    line = fail(shell, capsys, '%pcmem remember --kind fcat "a fact with a mistyped kind"')
    assert "kind must be one of fact, preference" in line and "did you mean 'fact'" in line
    assert run(shell, "%pcmem memories").empty
