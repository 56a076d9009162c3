"""Async write operations behind ``remember``, ``patch``, ``forget`` and ``reactivate``.

A REF without ``@rev`` writes on the current head; with ``@rev`` it writes on exactly
that Revision, so a stale ``@rev`` is refused (RevisionConflictError) like in the API.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from powercontext import MemoryEntryInput, MemoryRevision

from .errors import PcMemUserError
from .refs import locate_entry, resolve_memory

__all__ = ["paragraphs", "patch", "remember", "set_state"]


def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, stripped; empty ones dropped."""
    return [p.strip() for p in re.split(r"\n\s*\n", text or "") if p.strip()]


async def _sources(svc, names: Sequence[str]) -> tuple:
    out = []
    for name in names:
        try:
            out.append(await svc.sources.get(name))
        except LookupError:
            raise PcMemUserError(f"unknown source {name!r}: persist it first with svc.sources.persist(...)") from None
    return tuple(out)


async def remember(
    svc, texts: Sequence[str], *, kind: str, memory: Any = None, entry: str | None = None,
    sources: Sequence[str] = (), reason: str | None = None,
) -> tuple[MemoryRevision, bool]:
    """Append one entry per text (``memory=None`` creates a new Memory), or revise
    ``entry`` with the single text given. Returns the Revision and whether it is new
    (exact duplicates of active entries are no-ops that return the base)."""
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise PcMemUserError("nothing to remember: give the text in quotes, or use the cell form `%%pcmem remember`")
    evidence = await _sources(svc, sources)
    if entry is not None:
        if len(texts) != 1:
            raise PcMemUserError("--entry revises one entry: give exactly one text")
        where = await locate_entry(svc, entry, [memory] if memory is not None else ())
        current = await svc.entry(where.revision, where.entry_id)
        inputs = (MemoryEntryInput(kind=kind, text=texts[0], sources=evidence, entry=current, reason=reason),)
        base: Any = where.revision
    else:
        inputs = tuple(MemoryEntryInput(kind=kind, text=t, sources=evidence, reason=reason) for t in texts)
        base = None if memory is None else await resolve_memory(svc, memory)
    revision = await svc.remember(memory=base, sources=evidence, entries=inputs, mode="append")
    return revision, base is None or revision.ref != base.ref


async def set_state(
    svc, op: str, entry_ids: Sequence[str], *, memory: Any = None, reason: str | None = None,
) -> tuple[MemoryRevision, bool]:
    """``forget`` (op="forget") or ``reactivate`` entries of one Memory. Returns the
    Revision and whether it is new (entries already in that state are no-ops)."""
    if op not in ("forget", "reactivate"):
        raise ValueError(op)
    places = [await locate_entry(svc, e, [memory] if memory is not None else ()) for e in entry_ids]
    bases = {p.revision.ref for p in places}
    if len(bases) != 1:
        raise PcMemUserError("those entries belong to different Memories: forget or reactivate one Memory at a time")
    base = places[0].revision
    versions = [await svc.entry(base, p.entry_id) for p in places]
    call = svc.forget if op == "forget" else svc.reactivate
    revision = await call(base, versions, reason=reason)
    return revision, revision.ref != base.ref


async def patch(
    svc, entry: str, old: str, new: str, *, memory: Any = None, sources: Sequence[str] = (), reason: str | None = None,
) -> MemoryRevision:
    """Replace the one occurrence of ``old`` in the entry's current text by ``new``
    (on the head, or exactly on ``memory``'s ``@rev``)."""
    where = await locate_entry(svc, entry, [memory] if memory is not None else ())
    evidence = await _sources(svc, sources)
    return await svc.patch(where.revision, where.entry_id, old, new, reason=reason, sources=evidence)
