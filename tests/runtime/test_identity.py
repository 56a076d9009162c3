"""Scope → Memory bindings and restart recovery (RFC 001 "Scope and Memory identity",
"Runtime restart recovers Source lineage, the Memory head, and the cursor")."""

from __future__ import annotations

import asyncio
import os

import pytest

from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import (
    MemoryEntryInput,
    OceanBaseRuntimeStorage,
    PowerContextRuntime,
    RememberMemoryRequest,
    RuntimeOwnershipError,
    SQLiteRuntimeStorage,
)

from .pipelines import structured


async def _storage(profile, target):
    return await (SQLiteRuntimeStorage if profile == "sqlite" else OceanBaseRuntimeStorage).open(target)


async def test_bindings_survive_restart_and_are_globally_unique(profile, target, fresh_target, open_runtime, scope):
    runtime = await open_runtime(target)
    memory = runtime.memory.for_scope(scope)
    assert await memory.memory_id() is None, "reading a scope binds nothing"
    await runtime.sources.for_scope(scope).capture(structured("t1", ("fact", "x")))
    bound = await memory.memory_id()
    assert bound.startswith("mem_art_") and await memory.head() is None, "a binding reserves an id before Revision 1"
    await memory.remember(RememberMemoryRequest(entries=(MemoryEntryInput(kind="fact", text="Bound."),)))
    assert (await memory.head()).artifact_id == bound, "Revision 1 takes the reserved id"
    await runtime.close()

    reopened = await open_runtime(target)
    assert await reopened.memory.for_scope(scope).memory_id() == bound
    assert (await reopened.memory.for_scope(scope).head()).artifact_id == bound
    assert any(b.scope == scope and b.memory_artifact_id == bound for b in await reopened.bindings())

    independent = await open_runtime(fresh_target)  # another store, same scope string
    await independent.memory.for_scope(scope).remember(RememberMemoryRequest(entries=(MemoryEntryInput(kind="fact", text="Bound."),)))
    assert await independent.memory.for_scope(scope).memory_id() != bound, \
        "two independent stores never derive the same identity from the same scope"


async def test_concurrent_first_binding_ends_with_one_binding_and_a_typed_loser(profile, target, scope):
    one, two = await _storage(profile, target), await _storage(profile, target)
    try:
        scopes = [f"{scope}:{i}" for i in range(12)]
        pairs = await asyncio.gather(*(
            asyncio.gather(one.open_scope(s).bind(f"mem_art_{s[-2:]}_one_{i}"), two.open_scope(s).bind(f"mem_art_two_{i}"))
            for i, s in enumerate(scopes)
        ))
        for a, b in pairs:
            assert a.memory_artifact_id == b.memory_artifact_id, "one binding per scope"
            assert sorted([a.created, b.created]) == [False, True], "exactly one creator; the loser is told so"
        stored = {b.scope: b.memory_artifact_id for b in await one.bindings() if b.scope in scopes}
        assert stored == {s: a.memory_artifact_id for s, (a, _) in zip(scopes, pairs)}
    finally:
        await one.close()
        await two.close()


async def test_two_runtimes_capturing_the_same_new_scope_share_one_memory(target, open_runtime, scope):
    a, b = await open_runtime(target), await open_runtime(target)
    ra, rb = await asyncio.gather(
        a.sources.for_scope(scope).capture(structured("from-a", ("fact", "A"))),
        b.sources.for_scope(scope).capture(structured("from-b", ("fact", "B"))),
    )
    assert sorted([ra.sequence, rb.sequence]) == [1, 2]
    assert await a.memory.for_scope(scope).memory_id() == await b.memory.for_scope(scope).memory_id()


async def test_restart_recovers_source_lineage_memory_head_and_cursor(target, open_runtime, scope):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    await sources.capture(structured("agents-md", ("constraint", "site/ is generated output: never edit it.")))
    await sources.capture(structured("makefile", ("preference", "Run make check before review.")))
    await sources.capture(structured("pyproject", ("fact", "Hatchling builds the wheel.")))
    first = await memory.flush(limit=2)
    head, cursor = await memory.head(), await memory.cursor()
    assert (first.status, cursor, head.revision) == ("committed", 2, 1)
    await runtime.close()

    again = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    memory = again.memory.for_scope(scope)
    assert (await memory.head()) == head and await memory.cursor() == 2
    lineage = {e.text: [(c.sequence, c.source_id) for c in await memory.evidence(e)] for e in await memory.entries()}
    assert lineage == {"site/ is generated output: never edit it.": [(1, "agents-md")],
                       "Run make check before review.": [(2, "makefile")]}
    journal = await again.sources.for_scope(scope).journal()
    assert [(c.sequence, c.source_id) for c in journal] == [(1, "agents-md"), (2, "makefile"), (3, "pyproject")]
    rest = await memory.flush()
    assert str(rest.window) == "(2, 3]" and rest.revision.revision == 2 and rest.cursor == 3


async def test_a_failed_cursor_save_replays_the_window_as_a_no_op(target, scope):
    """In-process version of the SIGKILL test: the Memory commit succeeds, saving the
    cursor fails; the next activation replays the window and the Memory recognises it."""
    from powercontext import open as open_memory

    from .wrappers import FlakyCursorStorage

    storage = FlakyCursorStorage(await (SQLiteRuntimeStorage if target.endswith(".db") else OceanBaseRuntimeStorage).open(target))
    pipeline = DefaultCandidatePipeline()
    svc = await open_memory(target, pipeline=pipeline)
    runtime = await PowerContextRuntime.assemble(storage, svc, candidate_pipeline=pipeline)
    try:
        sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
        await sources.capture(structured("t1", ("fact", "The API listens on port 8080.")))
        storage.fail_next = True
        crashed = await memory.flush()
        assert crashed.status == "failed" and "cursor save failed" in crashed.error
        head = await memory.head()
        assert head.revision == 1 and await memory.cursor() == 0, "committed, but the cursor stayed"
        replay = await memory.flush()
        assert replay.status == "no_change" and str(replay.window) == "(0, 1]" and replay.cursor == 1
        assert (await memory.head()).ref == head.ref and len(await memory.entries()) == 1, "no duplicate entry"
    finally:
        await runtime.close()


async def test_runtime_open_normalizes_a_relative_database_path(profile, target, scope, tmp_path, monkeypatch):
    """SQLite: a relative database path is resolved once, at open. Both profiles: a
    relative sidecar path too, and another spelling of the same database is the same
    Runtime database (a second scheduled owner is refused)."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    pipeline = DefaultCandidatePipeline()
    monkeypatch.chdir(tmp_path / "a")
    relative = "rt.db" if profile == "sqlite" else target
    runtime = await PowerContextRuntime.open(relative, candidate_pipeline=pipeline, schedule_seconds=60,
                                             scheduler_path="sidecar.sqlite")
    try:
        if profile == "sqlite":
            assert runtime.key == f"sqlite:{tmp_path / 'a' / 'rt.db'}"
        assert runtime.sidecar == tmp_path / "a" / "sidecar.sqlite"
        monkeypatch.chdir(tmp_path / "b")
        await runtime.sources.for_scope(scope).capture(structured("t1", ("fact", "Relative paths are resolved once.")))
        assert (await runtime.memory.for_scope(scope).flush()).status == "committed"
        assert os.listdir(tmp_path / "b") == [], "changing the working directory opened no second file"
        other = "../a/rt.db" if profile == "sqlite" else target.replace("oceanbase://", "mysql://")
        with pytest.raises(RuntimeOwnershipError):  # the same database by another spelling
            await PowerContextRuntime.open(other, candidate_pipeline=pipeline, schedule_seconds=60,
                                           scheduler_path="../a/sidecar.sqlite")
    finally:
        await runtime.close()
    assert os.listdir(tmp_path / "b") == []
    again = await PowerContextRuntime.open("sqlite:///../a/rt.db" if profile == "sqlite" else target)
    try:
        assert (await again.memory.for_scope(scope).head()).revision == 1
    finally:
        await again.close()
