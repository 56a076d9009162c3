"""Async read operations behind the read subcommands and the widgets: resolve the
refs, call the public MemoryService API, build the lean DataFrames."""

from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from powercontext import ArtifactRef, MemoryRevision, MemorySearchResult

from . import tables
from .errors import PcMemUserError
from .refs import locate_entry, resolve_memories, resolve_memory

__all__ = ["heads", "versions_of", "manifest", "manifest_diff", "lineage", "changes", "verify", "search"]


async def heads(svc) -> tuple[MemoryRevision, ...]:
    """The head Revision of every Memory in the database."""
    return tuple([await svc.head(ref.artifact_id) for ref in await svc.memories()])


async def versions_of(svc, revision: MemoryRevision) -> dict[str, Any]:
    """entry_id → the version the Revision's manifest points at (all states)."""
    return {v.entry_id: v for v in await svc.entries(revision, state="all")}


async def previous_of(svc, revision: MemoryRevision) -> MemoryRevision | None:
    if revision.revision <= 1:
        return None
    return await svc.revision(ArtifactRef(revision.artifact_id, revision.revision - 1))


async def manifest(svc, ref: Any, *, state: str = "all", width: int = 80, hash_width: int = 12) -> pd.DataFrame:
    revision = await resolve_memory(svc, ref)
    frame = tables.manifest_frame(revision, await versions_of(svc, revision), state=state, width=width, hash_width=hash_width)
    frame.attrs["memory_ref"] = str(revision.ref)
    return frame


async def manifest_diff(svc, ref: Any, *, width: int = 80, hash_width: int = 12) -> pd.DataFrame:
    revision = await resolve_memory(svc, ref)
    previous = await previous_of(svc, revision)
    frame = tables.diff_frame(
        previous, revision, await versions_of(svc, revision),
        await versions_of(svc, previous) if previous else {}, width=width, hash_width=hash_width,
    )
    frame.attrs.update(memory_ref=str(revision.ref), previous_ref=str(previous.ref) if previous else None)
    return frame


async def lineage(svc, entry: str, memories: Sequence[Any] = (), *, width: int = 80) -> pd.DataFrame:
    """The entry's version chain and every state change, with reasons, across the
    Revisions of the Memory that holds it."""
    where = await locate_entry(svc, entry, memories)
    revision = where.revision
    versions = await svc.lineage(revision, where.entry_id)
    history = await svc.changes(revision, since_revision=0)
    frame = tables.lineage_frame(where.entry_id, versions, history, width=width)
    frame.attrs.update(entry_id=where.entry_id, memory_ref=str(revision.ref))
    return frame


async def changes(svc, ref: Any, since: int | None = None) -> pd.DataFrame:
    revision = await resolve_memory(svc, ref)
    if since is not None and since < 0:
        raise PcMemUserError(f"--since must be ≥ 0 (0 reads the whole history), got {since}")
    frame = tables.changes_frame(await svc.changes(revision, since_revision=since))
    frame.attrs["memory_ref"] = str(revision.ref)
    return frame


async def verify(svc, ref: Any) -> pd.DataFrame:
    """svc.verify() as a frame: one row per mismatch (none when the history is intact);
    the counts of what was checked are in ``attrs`` and the printed summary."""
    revision = await resolve_memory(svc, ref)
    report = await svc.verify(revision)
    print(f"{report.memory}: {report.revisions} revisions, {report.versions} versions, {report.sources} sources "
          f"checked — {'ok' if report.ok else f'{len(report.issues)} mismatches'}")
    frame = pd.DataFrame({"issue": list(report.issues)}, dtype=object)
    frame.attrs.update(memory_ref=str(report.memory), ok=report.ok)
    return frame


async def search(
    svc, query: str, memories: Sequence[Any] = (), *, mode: str = "auto", limit: int = 8,
    policy: Any = None, explain: bool = False, width: int = 80,
) -> tuple[MemorySearchResult, pd.DataFrame]:
    """Search the given Memories (default: all, at their heads). Returns the result and
    the hits frame, or with ``explain`` the per-candidate decisions frame."""
    refs = await resolve_memories(svc, memories)
    result = await svc.search(query, memories=refs, limit=limit, mode=mode, policy=policy, explain=explain)
    if explain:
        frame = tables.decisions_frame(result.decisions, result.hits, width=width)
        frame.attrs.update(tables.search_attrs(result))
    else:
        frame = tables.hits_frame(result, width=width)
    return result, frame
