"""What the workbench shows of a Runtime, as plain rows (no pandas, no Jupyter): the
journal with each record's window, outcome and cursor position; the window log; the
bindings with their progress. Magics and widgets turn these into tables."""

from __future__ import annotations

from typing import Any

from .storage import WindowRecord

COMPLETED = ("committed", "no_change")


def _ref(window: WindowRecord) -> str:
    return f"{window.memory_artifact_id}@{window.revision}" if window.memory_artifact_id else ""


async def journal_rows(runtime, scope: str, limit: int = 200) -> list[dict[str, Any]]:
    """Journal records of ``scope`` (oldest first, at most ``limit``), each with its
    position against the cursor and the window that processed it (the completed one,
    or else the latest failed attempt and its reason)."""
    memory = runtime.memory.for_scope(scope)
    cursor = await memory.cursor()
    captured = await runtime.sources.for_scope(scope).journal(after=0, limit=limit)
    windows = await window_rows(runtime, scope, limit=1000)
    rows = []
    for item in captured:
        covering = [w for w in windows if w["after"] < item.sequence <= w["through"]]
        done = next((w for w in covering if w["outcome"] in COMPLETED), None)
        last = done or (covering[0] if covering else None)  # windows are newest first
        rows.append({
            "sequence": item.sequence,
            "source_id": item.source_id,
            "captured_at": item.captured_at,
            "position": "consumed" if item.sequence <= cursor else "pending",
            "window": last["window"] if last else "",
            "outcome": last["outcome"] if last else "",
            "revision": last["revision"] if last else "",
            "reason": last["detail"] if last and last["outcome"] not in COMPLETED else "",
            "content": item.source.content,
        })
    return rows


async def window_rows(runtime, scope: str, limit: int = 100) -> list[dict[str, Any]]:
    """The scope's processed and attempted windows, newest first."""
    async with runtime._gate.admit():
        windows = await runtime.storage.open_scope(scope).windows(runtime.trigger.name, limit)
    return [
        {"window_id": w.window_id, "window": f"({w.after}, {w.through}]", "after": w.after, "through": w.through,
         "outcome": w.outcome, "revision": _ref(w), "detail": w.detail or "", "finished_at": w.finished_at}
        for w in windows
    ]


async def binding_rows(runtime) -> list[dict[str, Any]]:
    """Every scope with its bound Memory, head Revision, high watermark and cursor."""
    bindings = {b.scope: b for b in await runtime.bindings()}
    rows = []
    for progress in await runtime.progress():
        binding = bindings.get(progress.scope)
        head = await runtime.memory.for_scope(progress.scope).head() if binding else None
        rows.append({
            "scope": progress.scope,
            "memory": binding.memory_artifact_id if binding else "",
            "head": head.revision if head else 0,
            "high_watermark": progress.high_watermark,
            "cursor": progress.cursor,
            "pending": progress.pending,
        })
    return rows
