"""Source windows: the cursor advances only after a window succeeded (RFC 001
"Processing a Source window manually", "Failure semantics")."""

from __future__ import annotations

import pytest

from powercontext.errors import BackendUnavailableError, CapabilityNotSupportedError, InvalidRuntimeRequestError
from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import ContentCapture, MemoryEntryInput, PowerContextRuntime, RememberMemoryRequest

from .pipelines import FailingPipeline, structured
from .rows import runtime_sql


async def test_a_successful_window_advances_the_cursor_and_extraction_failure_preserves_it(target, open_runtime, scope):
    pipeline = FailingPipeline()
    runtime = await open_runtime(target, candidate_pipeline=pipeline)
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    for i in range(3):
        await sources.capture(structured(f"task-{i}", ("fact", f"Service {i} listens on port 80{i}0.")))

    failed = await memory.flush(limit=2)
    assert failed.status == "failed" and "the extractor is down" in failed.error
    assert (failed.cursor_before, failed.cursor, await memory.cursor()) == (0, 0, 0)
    assert await memory.head() is None
    again = await memory.flush(limit=2)
    assert again.status == "failed" and str(again.window) == "(0, 2]", "the next activation retries the same window"

    pipeline.healed = True
    ok = await memory.flush(limit=2)
    assert ok.status == "committed" and str(ok.window) == "(0, 2]" and ok.cursor == 2 and ok.revision.revision == 1
    assert ok.source_ids == ("task-0", "task-1")
    rest = await memory.flush(limit=2)
    assert str(rest.window) == "(2, 3]" and rest.cursor == 3 and rest.revision.revision == 2
    idle = await memory.flush(limit=2)
    assert idle.status == "idle" and idle.window is None and idle.revision is None
    assert (await memory.head()).revision == 2, "an idle flush creates no empty Revision"
    windows = await runtime.storage.open_scope(scope).windows("source_window")
    assert [(w.outcome, w.after, w.through, w.revision) for w in reversed(windows)] == [
        ("failed", 0, 2, None), ("failed", 0, 2, None), ("committed", 0, 2, 1), ("committed", 2, 3, 2)]
    assert "RuntimeError: the extractor is down" in windows[-1].detail


async def test_a_window_without_candidates_still_advances_the_cursor(target, open_runtime, scope):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    await sources.capture(ContentCapture(source_id="chatter", content="ok, thanks", metadata={"type": "chat"}))
    flush = await memory.flush()
    assert flush.status == "no_change" and flush.cursor == 1 and flush.revision is None
    assert await memory.head() is None, "nothing worth saving creates no Memory"
    await sources.capture(structured("decision-1", ("decision", "We store timestamps in UTC only.")))
    assert (await memory.flush()).status == "committed"
    await sources.capture(ContentCapture(source_id="chatter-2", content="bye", metadata={"type": "chat"}))
    flush = await memory.flush()
    assert flush.status == "no_change" and flush.cursor == 3 and flush.revision.revision == 1


async def test_without_a_candidate_pipeline_writes_and_search_work_and_windows_stay(target, open_runtime, scope, tmp_path):
    runtime = await open_runtime(target)
    assert runtime.candidate_pipeline is None and runtime.memory_service.pipeline is None, \
        "the Runtime picks no pipeline by itself"
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    await memory.remember(RememberMemoryRequest(entries=(MemoryEntryInput(kind="decision", text="Use uv to manage dependencies."),)))
    hits = await memory.search("use uv to manage dependencies")
    assert [h.text for h in hits] == ["Use uv to manage dependencies."] and hits.mode == "fts"
    await sources.capture(structured("task-1", ("fact", "Hatchling builds the wheel.")))
    flush = await memory.flush()
    assert flush.status == "unavailable" and "no candidate pipeline" in flush.error and flush.cursor == 0
    assert await memory.cursor() == 0 and (await memory.head()).revision == 1
    with pytest.raises(CapabilityNotSupportedError):  # the service refuses extraction too
        await runtime.memory_service.remember((await memory.head()), sources=(), artifacts=(await memory.head(),), mode="extract")


async def test_scheduling_without_a_pipeline_is_rejected_before_storage_opens(profile, fresh_target, tmp_path):
    sidecar = tmp_path / "scheduler.sqlite"
    with pytest.raises(InvalidRuntimeRequestError, match="candidate_pipeline"):
        await PowerContextRuntime.open(fresh_target, schedule_seconds=1, scheduler_path=sidecar)
    assert not sidecar.exists()
    if profile == "sqlite":
        assert not list(tmp_path.glob("fresh.db*")), "no storage was opened"
    else:
        assert not await _database_exists(fresh_target), "no storage was opened"
    for bad in ({"source_window_limit": 0}, {"schedule_seconds": 0, "candidate_pipeline": DefaultCandidatePipeline()},
                {"embedding": "no-such-model"}, {"candidate_pipeline": object()}):
        with pytest.raises(InvalidRuntimeRequestError):
            await PowerContextRuntime.open(fresh_target, scheduler_path=sidecar if "schedule_seconds" in bad else None, **bad)
    assert not sidecar.exists()
    if profile == "sqlite":
        assert not list(tmp_path.glob("fresh.db*"))
    else:
        assert not await _database_exists(fresh_target)


async def _database_exists(url: str) -> bool:
    from urllib.parse import urlparse

    import pymysql

    p = urlparse(url)
    con = pymysql.connect(host=p.hostname, port=p.port, user=p.username or "root", password=p.password or "")
    try:
        with con.cursor() as cur:
            cur.execute("SHOW DATABASES LIKE %s", (p.path.lstrip("/"),))
            return cur.fetchone() is not None
    finally:
        con.close()


async def test_flush_limits_and_a_gapless_journal(target, open_runtime, scope):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline(), source_window_limit=2)
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    for i in range(5):
        await sources.capture(structured(f"t{i}", ("fact", f"Fact number {i} about the build.")))
    assert str((await memory.flush()).window) == "(0, 2]", "the Runtime's source_window_limit is the default"
    assert str((await memory.flush(limit=1)).window) == "(2, 3]"
    assert str((await memory.flush(limit=100)).window) == "(3, 5]"
    for bad in (0, -3, "5", 10_001):
        with pytest.raises(InvalidRuntimeRequestError):
            await memory.flush(limit=bad)


async def test_a_tampered_journal_payload_fails_the_window_and_keeps_the_cursor(target, open_runtime, scope):
    runtime = await open_runtime(target, candidate_pipeline=DefaultCandidatePipeline())
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    await sources.capture(structured("t1", ("fact", "The dev server listens on port 5173.")))
    original = (await runtime_sql(runtime, "SELECT payload FROM runtime_source_journal WHERE scope = ?", (scope,)))[0][0]
    for forged in (original.replace("5173", "6666"), '{"name": "t1"}', '{"name":"t1","content":1,"description":null,"metadata":{}}',
                   original[:-1] + ',"injected":true}', "not json"):
        await runtime_sql(runtime, "UPDATE runtime_source_journal SET payload = ? WHERE scope = ?", (forged, scope))
        flush = await memory.flush()
        assert flush.status == "failed" and "InvalidSourcePayloadError" in flush.error, forged
        assert await memory.cursor() == 0 and await memory.head() is None
    await runtime_sql(runtime, "UPDATE runtime_source_journal SET payload = ? WHERE scope = ?", (original, scope))
    assert (await memory.flush()).status == "committed"


async def test_driver_errors_never_reach_the_caller(target, open_runtime, scope):
    runtime = await open_runtime(target)
    await runtime_sql(runtime, "DROP TABLE runtime_trigger_cursors")
    try:
        with pytest.raises(BackendUnavailableError):
            await runtime.memory.for_scope(scope).cursor()
    finally:
        await runtime.close()
    reopened = await PowerContextRuntime.open(target)  # reopening recreates the table
    try:
        assert await reopened.memory.for_scope(scope).cursor() == 0
    finally:
        await reopened.close()
