"""A real process that owns a scheduled Runtime, for the restart tests (run as
``python -m tests.runtime.child step TARGET SCOPE N SIDECAR`` from the project root).

``window TARGET SCOPE`` captures one Source with two structured entries and flushes it;
like a step, it blocks between the Memory commit and the cursor save (issue 35, 1).
``capture-loop TARGET SCOPE START`` captures (and now and then flushes) until killed,
acknowledging each capture on stdout (the capture crash loop). ``open TARGET SIDECAR T`` opens a scheduled Runtime at wall time T and closes it (two
processes race to create the sidecar; issue 35, 8). ``capture TARGET SCOPE first|second`` captures one Source and blocks right after the
first (or the second) durable write inside capture() — the journal append or the
Memory-layer copy — printing ``AT journal|memory-copy`` (issue 35, 2).

Step N opens the Runtime (its scheduler on SIDECAR); for N > 1 it first flushes once —
the replay of the window the previous process committed but could not record — and
prints ``REPLAY {json}``. Then it captures Source ``task-N`` and flushes; its storage
prints ``COMMITTED <ref> <after> <through>`` after the Memory commit and before the
cursor save, and blocks until the parent SIGKILLs it. ``N = 0`` only replays and
flushes once more (the final check), then closes cleanly.
"""

from __future__ import annotations

import asyncio
import json
import sys

from powercontext import PowerContextError
from powercontext import open as open_memory
from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import (
    ContentCapture,
    OceanBaseRuntimeStorage,
    PowerContextRuntime,
    SchedulerConfig,
    SQLiteRuntimeStorage,
)


class _PausingScope:
    def __init__(self, inner, owner) -> None:
        self._inner, self._owner = inner, owner
        self.scope = inner.scope

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def complete_window(self, trigger_name, window, outcome, memory_artifact_id, revision, *rest):
        if not self._owner.armed:
            return await self._inner.complete_window(trigger_name, window, outcome, memory_artifact_id, revision, *rest)
        print(f"COMMITTED {memory_artifact_id}@{revision} {window.after} {window.through}", flush=True)
        await asyncio.Event().wait()  # the parent kills us here: committed, cursor not saved


class _PausingStorage:
    armed = False

    def __init__(self, inner) -> None:
        self._inner = inner
        self.profile, self.key = inner.profile, inner.key

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def open_scope(self, scope):
        return _PausingScope(self._inner.open_scope(scope), self)


class _PausingSources:
    """Wraps ``svc.sources``: after a persist, pause if the owner says so."""

    def __init__(self, inner, owner) -> None:
        self._inner, self._owner = inner, owner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def persist(self, source):
        result = await self._inner.persist(source)
        await self._owner.wrote("memory-copy")
        return result


class _CaptureKill:
    """Counts capture()'s durable writes and blocks after the chosen one."""

    def __init__(self, point: str) -> None:
        self.point, self.writes = point, 0

    async def wrote(self, what: str) -> None:
        self.writes += 1
        if self.writes == {"first": 1, "second": 2}[self.point]:
            print(f"AT {what}", flush=True)
            await asyncio.Event().wait()


class _AppendWatch:
    def __init__(self, inner, owner) -> None:
        self._inner, self._owner = inner, owner
        self.scope = inner.scope

    def __getattr__(self, name):
        return getattr(self._inner, name)

    async def append(self, *args):
        result = await self._inner.append(*args)
        await self._owner.wrote("journal")
        return result


class _AppendWatchStorage(_PausingStorage):
    def open_scope(self, scope):
        return _AppendWatch(self._inner.open_scope(scope), self.kill)


def window_capture() -> ContentCapture:
    return ContentCapture(source_id="window-1", content="Two findings.", metadata={"type": "structured", "entries": [
        {"kind": "fact", "text": "The cache directory is /var/cache/atlas."},
        {"kind": "decision", "text": "Deploys run on Fridays only."}]})


def capture_payload(variant: str) -> ContentCapture:
    return ContentCapture(source_id="poisoned-1", content=f"Finding {variant}.", metadata={
        "type": "structured", "entries": [{"kind": "fact", "text": f"The {variant} payload was captured."}]})


async def _storage(target: str):
    storage_class = OceanBaseRuntimeStorage if "://" in target else SQLiteRuntimeStorage
    return await storage_class.open(target)


async def window(target: str, scope: str) -> None:
    pipeline = DefaultCandidatePipeline()
    svc = await open_memory(target, pipeline=pipeline)
    storage = _PausingStorage(await _storage(target))
    runtime = await PowerContextRuntime.assemble(storage, svc, candidate_pipeline=pipeline)
    await runtime.sources.for_scope(scope).capture(window_capture())
    storage.armed = True
    print(f"UNEXPECTED {await runtime.memory.for_scope(scope).flush()}", flush=True)


async def capture_until(target: str, scope: str, point: str) -> None:
    pipeline = DefaultCandidatePipeline()
    svc = await open_memory(target, pipeline=pipeline)
    kill = _CaptureKill(point)
    svc.sources = _PausingSources(svc.sources, kill)
    storage = _AppendWatchStorage(await _storage(target))
    storage.kill = kill
    runtime = await PowerContextRuntime.assemble(storage, svc, candidate_pipeline=pipeline)
    print("READY", flush=True)
    await runtime.sources.for_scope(scope).capture(capture_payload("first"))
    print("UNEXPECTED capture returned", flush=True)


async def open_at(target: str, sidecar: str) -> None:
    """Print READY once imported, then open a scheduled Runtime at the wall time the
    parent writes to stdin (two of these race, told the same time), close it."""
    import time

    pipeline = DefaultCandidatePipeline()
    print("READY", flush=True)
    start_at = float(sys.stdin.readline())
    time.sleep(max(0.0, start_at - time.time()))
    try:
        runtime = await PowerContextRuntime.open(target, candidate_pipeline=pipeline, schedule_seconds=3600,
                                                 scheduler_path=sidecar)
    except PowerContextError as exc:
        print(f"TYPED {type(exc).__name__}: {exc}", flush=True)
        return
    await runtime.close()
    print("OPENED", flush=True)


async def capture_loop(target: str, scope: str, start: str) -> None:
    """Capture Sources without end, printing ``ack SOURCE_ID`` after each capture()
    returned (acknowledged) and flushing every few; the parent SIGKILLs it anywhere."""
    pipeline = DefaultCandidatePipeline()
    runtime = await PowerContextRuntime.open(target, candidate_pipeline=pipeline)
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    print("READY", flush=True)
    n = int(start)
    while True:
        receipt = await sources.capture(capture(n))
        print(f"ack {receipt.source.source_id} {receipt.sequence}", flush=True)
        if n % 3 == 0:
            await memory.flush()
        n += 1


def capture(n: int) -> ContentCapture:
    return ContentCapture(source_id=f"task-{n}", content=f"Finding {n}.", metadata={
        "type": "structured", "entries": [{"kind": "fact", "text": f"Finding number {n} holds after restarts."}]})


async def state(memory, result) -> dict:
    head = await memory.head()
    entries = await memory.entries()
    hashes, texts = [e.entry_content_hash for e in entries], [e.text for e in entries]
    return {
        "status": result.status, "window": [result.window.after, result.window.through] if result.window else None,
        "cursor_before": result.cursor_before, "cursor": result.cursor, "revision": head.revision if head else None,
        "entries": len(entries), "duplicates": (len(hashes) - len(set(hashes))) + (len(texts) - len(set(texts))),
        "revisions": [c.memory_ref.revision for c in await memory.changes(0)] if head else [],
    }


async def step(target: str, scope: str, n: int, sidecar: str) -> None:
    storage_class = OceanBaseRuntimeStorage if "://" in target else SQLiteRuntimeStorage
    pipeline = DefaultCandidatePipeline()
    svc = await open_memory(target, pipeline=pipeline)
    storage = _PausingStorage(await storage_class.open(target))
    runtime = await PowerContextRuntime.assemble(storage, svc, candidate_pipeline=pipeline,
                                                 scheduler=SchedulerConfig(3600, sidecar))
    memory = runtime.memory.for_scope(scope)
    if n != 1:
        print("REPLAY " + json.dumps(await state(memory, await memory.flush())), flush=True)
    if n == 0:
        print("THEN " + json.dumps(await state(memory, await memory.flush())), flush=True)
        await runtime.close()
        return
    await runtime.sources.for_scope(scope).capture(capture(n))
    storage.armed = True
    print(f"UNEXPECTED {await memory.flush()}", flush=True)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    if mode == "window":
        asyncio.run(window(*rest))
    elif mode == "capture":
        asyncio.run(capture_until(*rest))
    elif mode == "open":
        asyncio.run(open_at(*rest))
    elif mode == "capture-loop":
        asyncio.run(capture_loop(*rest))
    else:
        assert mode == "step", mode
        target, scope, n, sidecar = rest
        asyncio.run(step(target, scope, int(n), sidecar))
