"""Startup probes, assembly over any RuntimeStorage, and shutdown (RFC 001
"Initialization", "Concurrency and lifecycle")."""

from __future__ import annotations

import asyncio

import pytest

from powercontext import MemoryService
from powercontext import open as open_memory
from powercontext.errors import BackendUnavailableError, InvalidRuntimeRequestError
from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.model import EmbeddingProfile
from powercontext.runtime import (
    ContentCapture,
    OceanBaseRuntimeStorage,
    PowerContextRuntime,
    RuntimeClosedError,
    SQLiteRuntimeStorage,
)

from .pipelines import BlockingPipeline, structured
from .rows import runtime_sql
from .wrappers import DelegatingStorage


class DeterministicTestEmbedding:
    """Unit-test embedder (deterministic, named as such): only its profile matters
    here, since startup probes never embed anything."""

    def __init__(self, dimension: int) -> None:
        self.profile = EmbeddingProfile(profile_id=f"test-{dimension}", model="deterministic-test", dimension=dimension)

    async def embed(self, texts):
        raise AssertionError("a startup probe must not embed")


def _storage_class(target: str):
    return OceanBaseRuntimeStorage if "://" in target else SQLiteRuntimeStorage


async def test_startup_probes_the_runtime_and_memory_schema_fts_and_vectors(profile, fresh_target, open_runtime):
    runtime = await open_runtime(fresh_target, embedding=DeterministicTestEmbedding(8))
    assert runtime.probes["memory_schema"] == "ok" and runtime.probes["fts"] == "ok"
    assert runtime.probes["vector"] == "ok (test-8, 8 dims)" and runtime.probes["runtime_schema"] == "powercontext.runtime.v1"
    await runtime.close()
    plain = await open_runtime(fresh_target)
    assert plain.probes["vector"] == "not configured"
    await plain.close()
    with pytest.raises(BackendUnavailableError, match="test-8"):  # the configured profile does not match the database
        await PowerContextRuntime.open(fresh_target, embedding=DeterministicTestEmbedding(16))


async def test_startup_refuses_a_database_it_cannot_serve(profile, fresh_target, tmp_path):
    if profile == "sqlite":
        garbage = tmp_path / "garbage.db"
        garbage.write_bytes(b"this is not a SQLite database" * 100)
        with pytest.raises(BackendUnavailableError):
            await PowerContextRuntime.open(garbage)
    for damage, expected in (
        (["UPDATE runtime_schema SET value = 'powercontext.runtime.v0'"], "powercontext.runtime.v0"),
        (["DROP TABLE runtime_source_windows", "CREATE TABLE runtime_source_windows (window_id INTEGER PRIMARY KEY)"],
         "Runtime (schema|table runtime_source_windows)"),
    ):
        runtime = await PowerContextRuntime.open(fresh_target)  # then something else alters its tables
        for statement in damage:
            await runtime_sql(runtime, statement)
        await runtime.close()
        with pytest.raises(BackendUnavailableError, match=expected):
            await PowerContextRuntime.open(fresh_target)
        await _drop_runtime_tables(fresh_target)


async def _drop_runtime_tables(target: str) -> None:
    statements = ("DROP TABLE IF EXISTS runtime_source_windows", "DROP TABLE IF EXISTS runtime_schema")
    if "://" in target:
        from urllib.parse import urlparse

        import pymysql

        p = urlparse(target)
        con = pymysql.connect(host=p.hostname, port=p.port, user=p.username or "root", password=p.password or "",
                              database=p.path.lstrip("/"), autocommit=True)
        with con.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
        con.close()
    else:
        import apsw

        con = apsw.Connection(target)
        for statement in statements:
            con.execute(statement)
        con.close()


async def test_assemble_accepts_backend_neutral_storage(target, scope):
    storage = DelegatingStorage(await _storage_class(target).open(target))
    pipeline = DefaultCandidatePipeline()
    svc = await open_memory(target, pipeline=pipeline)
    runtime = await PowerContextRuntime.assemble(storage, svc, candidate_pipeline=pipeline)
    try:
        await runtime.sources.for_scope(scope).capture(structured("t1", ("decision", "Assemble takes any RuntimeStorage.")))
        flush = await runtime.memory.for_scope(scope).flush()
        assert flush.status == "committed" and flush.revision.artifact_id == await runtime.memory.for_scope(scope).memory_id()
        assert {"probe", "open_scope"} <= set(storage.calls)
    finally:
        await runtime.close()
    assert storage.calls[-1] == "close", "the Runtime owns and closes its storage"


async def test_assemble_refuses_what_it_cannot_use(target):
    storage = await _storage_class(target).open(target)
    svc = await open_memory(target)  # built with the default pipeline
    try:
        with pytest.raises(InvalidRuntimeRequestError, match="RuntimeStorage"):
            await PowerContextRuntime.assemble(object(), svc)
        with pytest.raises(InvalidRuntimeRequestError, match="MemoryService"):
            await PowerContextRuntime.assemble(storage, object())
        with pytest.raises(InvalidRuntimeRequestError, match="another candidate pipeline"):
            await PowerContextRuntime.assemble(storage, svc, candidate_pipeline=DefaultCandidatePipeline())
        runtime = await PowerContextRuntime.assemble(storage, svc)  # no pipeline: the Runtime extracts nothing
        assert runtime.candidate_pipeline is None and isinstance(runtime.memory_service, MemoryService)
    finally:
        await storage.close()
        await svc.close()


async def _blocked_flush(target, open_runtime, scope, **options):
    """A Runtime whose window is inside the pipeline, blocked until ``release``: started
    by a manual flush (returned as a task), or by the scheduler when one is configured."""
    pipeline = BlockingPipeline()
    runtime = await open_runtime(target, candidate_pipeline=pipeline, **options)
    await runtime.sources.for_scope(scope).capture(structured("t1", ("fact", "Close waits for this window.")))
    flush = None if options.get("schedule_seconds") else asyncio.create_task(runtime.memory.for_scope(scope).flush())
    await asyncio.wait_for(pipeline.entered.wait(), 10)
    return runtime, pipeline, flush


async def test_close_rejects_new_operations_and_waits_for_admitted_ones(target, open_runtime, scope):
    runtime, pipeline, flush = await _blocked_flush(target, open_runtime, scope)
    closing = asyncio.create_task(runtime.close())
    await asyncio.sleep(0.2)
    assert not closing.done(), "close() waits for the admitted window"
    with pytest.raises(RuntimeClosedError):
        await runtime.sources.for_scope(scope).capture(ContentCapture(source_id="late", content="too late"))
    with pytest.raises(RuntimeClosedError):
        await runtime.memory.for_scope(scope).head()
    pipeline.release.set()
    await asyncio.wait_for(closing, 10)
    result = await flush
    assert result.status == "committed" and result.cursor == 1, "the admitted window finished and saved its cursor"
    with pytest.raises(RuntimeClosedError):
        await runtime.storage.probe()
    await runtime.close()  # idempotent


async def test_close_waits_for_an_active_scheduled_processor(profile, fresh_target, open_runtime, scope, tmp_path):
    runtime, pipeline, _ = await _blocked_flush(fresh_target, open_runtime, scope, schedule_seconds=0.1)  # APScheduler started it
    closing = asyncio.create_task(runtime.close())
    await asyncio.sleep(0.3)
    assert not closing.done(), "close() waits for the active scheduled window"
    pipeline.release.set()
    await asyncio.wait_for(closing, 10)
    assert [r.status for r in runtime.processor.last_run.results] == ["committed"]
    reopened = await open_runtime(fresh_target)
    assert await reopened.memory.for_scope(scope).cursor() == 1, "the window was not cancelled by the shutdown"


async def test_close_can_be_retried_after_its_caller_is_cancelled(target, open_runtime, scope):
    runtime, pipeline, flush = await _blocked_flush(target, open_runtime, scope)
    first = asyncio.create_task(runtime.close())
    await asyncio.sleep(0.1)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    with pytest.raises(RuntimeClosedError):
        await runtime.memory.for_scope(scope).cursor()
    pipeline.release.set()
    await asyncio.wait_for(runtime.close(), 10)  # the retry finishes the cleanup
    assert (await flush).status == "committed"
    with pytest.raises(RuntimeClosedError):
        await runtime.storage.probe()
    await runtime.close()
