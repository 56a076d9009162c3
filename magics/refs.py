"""Resolve what users type into exact refs: ``mem_art_…``, an unambiguous prefix of
one, ``id@rev``; entry ids (or prefixes) to the Memory whose head holds them.

Without ``@rev`` a Memory means its current head (read through ``svc.head``); with
``@rev`` it means exactly that Revision, so a write against an old ``@rev`` fails as a
stale revision instead of silently using the head.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from powercontext import ArtifactNotFoundError, ArtifactRef, MemoryRevision

from .errors import PcMemUserError

__all__ = ["MemorySpec", "parse_memory", "resolve_memory", "resolve_head", "resolve_memories", "locate_entry", "EntryLocation"]


@dataclass(frozen=True)
class MemorySpec:
    """A parsed REF: the id or prefix typed, and the Revision if one was given."""

    text: str
    revision: int | None = None


def parse_memory(text: Any) -> MemorySpec:
    """``"mem_art_X"`` / ``"mem_art_X@3"`` / a MemoryRevision or ArtifactRef."""
    if isinstance(text, MemoryRevision):
        text = text.ref
    if isinstance(text, ArtifactRef):
        return MemorySpec(text.artifact_id, text.revision)
    if not isinstance(text, str) or not text.strip():
        raise PcMemUserError(f"expected a Memory id like mem_art_…[@REV], got {text!r}")
    text = text.strip()
    if "@" not in text:
        return MemorySpec(text)
    ident, _, rev = text.rpartition("@")
    if not ident or not rev.isdigit() or int(rev) < 1:
        raise PcMemUserError(f"bad Memory ref {text!r}: write ID or ID@REV with REV ≥ 1")
    return MemorySpec(ident, int(rev))


async def _artifact_id(svc, prefix: str) -> str:
    try:
        return (await svc.head(prefix)).artifact_id
    except ArtifactNotFoundError:
        pass
    matches = [r.artifact_id for r in await svc.memories() if r.artifact_id.startswith(prefix)]
    if not matches:
        raise PcMemUserError(f"unknown memory {prefix!r}: `%pcmem memories` lists the Memories in this database")
    if len(matches) > 1:
        shown = ", ".join(matches[:3]) + (" …" if len(matches) > 3 else "")
        raise PcMemUserError(f"ambiguous memory prefix {prefix!r} matches {len(matches)} Memories ({shown}); type more of the id")
    return matches[0]


async def resolve_memory(svc, text: Any) -> MemoryRevision:
    """The Revision a REF names: the given ``@rev``, else the current head."""
    spec = parse_memory(text)
    artifact_id = await _artifact_id(svc, spec.text)
    head = await svc.head(artifact_id)
    if spec.revision is None or spec.revision == head.revision:
        return head
    if spec.revision > head.revision:
        raise PcMemUserError(f"Memory {artifact_id} has no Revision {spec.revision} (head is {head.revision})")
    return await svc.revision(ArtifactRef(artifact_id, spec.revision))


async def resolve_head(svc, text: Any) -> MemoryRevision:
    """The head of the Memory a REF names; an ``@REV`` is refused (a current Memory
    follows its head, it is not pinned to one Revision)."""
    spec = parse_memory(text)
    if spec.revision is not None:
        raise PcMemUserError(f"`%pcmem use` takes a Memory, not a Revision: drop @{spec.revision} (writes go to the head)")
    return await svc.head(await _artifact_id(svc, spec.text))


async def resolve_memories(svc, texts: Iterable[Any] = ()) -> tuple[MemoryRevision, ...]:
    """Each REF resolved; no REF at all means every Memory in the database (heads)."""
    texts = list(texts or ())
    if not texts:
        texts = [ref.artifact_id for ref in await svc.memories()]
        if not texts:
            raise PcMemUserError("this database has no Memory yet: `%pcmem remember --kind fact \"…\"` creates one")
    out: dict[ArtifactRef, MemoryRevision] = {}
    for text in texts:
        revision = await resolve_memory(svc, text)
        out.setdefault(revision.ref, revision)
    return tuple(out.values())


@dataclass(frozen=True)
class EntryLocation:
    revision: MemoryRevision  # the Revision the entry was found in (head unless @rev given)
    entry_id: str


async def locate_entry(svc, entry: str, memories: Sequence[Any] = ()) -> EntryLocation:
    """Find an entry id (or unambiguous prefix) in the given Memories, else in every
    Memory of the database."""
    if not isinstance(entry, str) or not entry.strip():
        raise PcMemUserError("expected an entry id like mem_ent_…")
    entry = entry.strip()
    found: list[EntryLocation] = []
    for revision in await resolve_memories(svc, memories):
        ids = [e.entry_id for e in revision.manifest.entries]
        if entry in ids:
            found.append(EntryLocation(revision, entry))
            continue
        found += [EntryLocation(revision, i) for i in ids if i.startswith(entry)]
    exact = [f for f in found if f.entry_id == entry]
    found = exact or found
    if not found:
        where = "the given Memory" if memories else "any Memory of this database"
        raise PcMemUserError(f"unknown entry {entry!r}: it is not in {where}; `%pcmem manifest REF` lists entries")
    if len(found) > 1:
        raise PcMemUserError(
            f"entry {entry!r} matches {len(found)} entries; type more of the id or name the Memory with --memory"
        )
    return found[0]
