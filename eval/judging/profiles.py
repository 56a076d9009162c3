"""Pooling under a second embedding profile (``pool … --embeddings minilm,e5``).

A database stores one profile's vectors. To pool under another, the snapshot (the pool
folder's ``memories.jsonl``, i.e. exactly the entries a judge will see) is written into
a scratch SQLite Memory embedded with that model, one Memory per snapshotted Memory,
and the same admission-off searches run there. The scratch database lives in a
temporary directory and is removed when the pool ends (a resumed pool builds it again):
the snapshot's texts are not copied anywhere that outlives the pool, and no shared
embedding cache keeps them.

Full-text search does not depend on the embedding model, so under a further profile
only vector and hybrid candidates are pooled (``sources`` say ``vector@<profile>``,
``hybrid@<profile>``); each pool line keeps every profile's admission signals under
``channels[<profile>]``.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import Any, AsyncIterator, Mapping, Sequence

import powercontext as pc
from powercontext.errors import PowerContextError
from powercontext.model import ArtifactRef

from .folder import JudgingError

__all__ = ["FURTHER_MODES", "Scratch", "merge_lines", "scratch_pools"]

FURTHER_MODES = ("vector", "hybrid")


class Scratch:
    """One further profile's scratch copy: its service, profile id, the snapshot's
    Memory name → scratch head, and (scratch artifact, entry) → the folder's entry id."""

    def __init__(self, svc: Any, profile: str, heads: dict[str, ArtifactRef], ids: dict[tuple[str, str], str]) -> None:
        self.svc, self.profile, self.heads, self.ids = svc, profile, heads, ids

    def refs(self, memories: Sequence[str]) -> tuple[ArtifactRef, ...]:
        return tuple(self.heads[m] for m in memories)


async def _copy(target: str, name: str, rows: Sequence[Mapping[str, Any]]) -> Scratch:
    try:
        svc = await pc.open(target, embedding=name)
    except PowerContextError as exc:
        raise JudgingError(f"pool: cannot embed the snapshot with {name!r}: {exc}") from None
    try:
        by_memory: dict[str, list[Mapping[str, Any]]] = {}
        for row in rows:
            by_memory.setdefault(row["memory"], []).append(row)
        heads, ids = {}, {}
        for memory, entries in by_memory.items():
            # one Source per entry, named by its folder id: each scratch entry maps back by
            # its Source, and two entries of equal text stay two entries
            sources = [await svc.sources.persist(pc.ContentSource(name=f"pool:{row['id']}", content=row["id"]))
                       for row in entries]
            revision = await svc.remember(memory=None, sources=tuple(sources), mode="append", entries=tuple(
                pc.MemoryEntryInput(kind=row.get("kind") or "fact", text=row["text"], sources=(src,))
                for row, src in zip(entries, sources)))
            heads[memory] = revision.ref
            for version in await svc.entries(revision.ref):
                ids[(revision.ref.artifact_id, version.entry_id)] = version.sources[0].name.removeprefix("pool:")
        return Scratch(svc, svc.backend.embedding_profile.profile_id, heads, ids)
    except BaseException:
        await svc.close()
        raise


@contextlib.asynccontextmanager
async def scratch_pools(names: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> AsyncIterator[list[Scratch]]:
    """A scratch copy of the snapshot ``rows`` per further profile name, closed and
    removed when the block ends."""
    with tempfile.TemporaryDirectory(prefix="pc-pool-profile-") as tmp:
        made: list[Scratch] = []
        try:
            for i, name in enumerate(names):
                made.append(await _copy(str(Path(tmp) / f"profile{i}.db"), name, rows))
            yield made
        finally:
            for scratch in made:
                await scratch.svc.close()


def merge_lines(*pools: Sequence[dict]) -> list[dict]:
    """One question's pool lines under several profiles as one line per entry: sources
    and signals joined, the best rank the smallest, ``channels`` per profile."""
    merged: dict[str, dict] = {}
    for lines in pools:
        for line in lines:
            into = merged.get(line["entry_id"])
            if into is None:
                merged[line["entry_id"]] = {**line, "sources": list(line["sources"]), "signals": dict(line["signals"]),
                                            **({"channels": dict(line["channels"])} if "channels" in line else {})}
                continue
            into["sources"] += [s for s in line["sources"] if s not in into["sources"]]
            into["best_rank"] = min(into["best_rank"], line["best_rank"])
            into["signals"].update(line["signals"])
            if "channels" in line:
                into.setdefault("channels", {}).update(line["channels"])
    out = sorted(merged.values(), key=lambda line: (line["best_rank"], line["entry_id"]))
    for line in out:
        line["pooled"] = len(out)
    return out
