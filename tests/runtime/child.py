"""A real process that owns a scheduled Runtime, for the restart tests (run as
``python -m tests.runtime.child step TARGET SCOPE N SIDECAR`` from the project root).

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
    mode, target, scope, n, sidecar = sys.argv[1:]
    assert mode == "step", mode
    asyncio.run(step(target, scope, int(n), sidecar))
