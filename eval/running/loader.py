"""Write a corpus into a fresh database through the public ``MemoryService`` only.

Each memory of the corpus (``repo``, ``user``) becomes one Memory. Entries are written
in batches, one ``remember`` per memory per history depth rather than one per entry:

1. depth 0: every entry of the memory, with ``history[0]`` (or ``text`` when it has no
   history), in one append;
2. depth d ≥ 1: every entry whose text sequence ``history + [text]`` is longer than d
   is revised to its d-th text, in one append of ``MemoryEntryInput(entry=current)``;
3. the inactive entries are forgotten in one ``forget``.

The result maps every corpus entry id to the service's ``(memory name, entry_id)`` and
back, and is checked against the corpus before it is returned: every entry's current
text and state must be what ``memories.jsonl`` says, so a silently deduplicated or
skipped write fails loudly here instead of skewing every metric.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from powercontext.canonical import nfc
from powercontext.model import (
    ArtifactRef,
    ContentSource,
    MemoryEntryInput,
    MemoryEntryVersion,
)

from ..corpora.datasets import Corpus, MemoryRecord

__all__ = ["LoadError", "LoadedCorpus", "load_corpus", "text_sequence"]


class LoadError(RuntimeError):
    """The database does not hold the corpus as written (a duplicate, a skipped write)."""




@dataclass(frozen=True)
class LoadedCorpus:
    """A corpus as written into one database."""

    corpus: Corpus
    heads: dict[str, ArtifactRef]  # memory name -> head ref after loading
    entry_ids: dict[str, tuple[str, str]]  # corpus entry id -> (memory name, service entry_id)
    seconds: float = 0.0
    writes: int = 0  # remember/forget calls made
    corpus_ids: dict[tuple[str, str], str] = field(default_factory=dict)  # (artifact_id, entry_id) -> corpus id

    def refs(self, memories: Iterable[str]) -> tuple[ArtifactRef, ...]:
        """The head refs of the named memories, in the given order."""
        return tuple(self.heads[m] for m in memories)

    def corpus_id(self, artifact_id: str, entry_id: str) -> str:
        return self.corpus_ids[(artifact_id, entry_id)]


def text_sequence(record: MemoryRecord) -> tuple[str, ...]:
    """The texts an entry goes through, oldest first, ending with its current text."""
    return (*record.history, record.text)


def _same_text(a: str, b: str) -> bool:
    return nfc(a).strip() == nfc(b).strip()


def _source_payload(corpus: Corpus, name: str) -> ContentSource:
    # The corpora name their evidence but carry no payload: a stable synthetic one keeps
    # entry contents (which hash their Source refs) identical on every backend and run.
    return ContentSource(name=name, content=f"{corpus.name}: evidence {name}")


async def load_corpus(svc: Any, corpus: Corpus, progress: Any = None) -> LoadedCorpus:
    """Write ``corpus`` into the (fresh) database behind ``svc``.

    ``progress`` is an optional tqdm-like object; it is advanced by one per entry
    write (creations, revisions and forgets)."""
    start = time.perf_counter()
    names = sorted({s for e in corpus.memories for s in e.sources})
    sources = {name: await svc.sources.persist(_source_payload(corpus, name)) for name in names}
    heads: dict[str, ArtifactRef] = {}
    entry_ids: dict[str, tuple[str, str]] = {}
    writes = 0
    for memory, records in corpus.entries_by_memory().items():
        head, current, calls = await _load_memory(svc, corpus, memory, records, sources, progress)
        heads[memory] = head
        writes += calls
        for record in records:
            entry_ids[record.id] = (memory, current[record.id].entry_id)
    loaded = LoadedCorpus(
        corpus=corpus,
        heads=heads,
        entry_ids=entry_ids,
        seconds=time.perf_counter() - start,
        writes=writes,
        corpus_ids={(heads[m].artifact_id, e): cid for cid, (m, e) in entry_ids.items()},
    )
    await verify(svc, loaded)
    return loaded


async def _load_memory(svc, corpus, memory, records, sources, progress):
    sequences = {r.id: text_sequence(r) for r in records}
    inputs = [
        MemoryEntryInput(kind=r.kind, text=sequences[r.id][0], sources=tuple(sources[s] for s in r.sources))
        for r in records
    ]
    # An entry may only cite evidence that is part of the operation: the batch cites the
    # union of its entries' Sources.
    evidence = tuple(sources[s] for s in sorted({s for r in records for s in r.sources}))
    revision = await svc.remember(memory=None, sources=evidence, entries=inputs, mode="append")
    calls = 1
    if revision is None:
        raise LoadError(f"{corpus.name}/{memory}: remember() saved nothing")
    current = _match_created(corpus, memory, records, sequences, await svc.entries(revision, state="all"))
    _advance(progress, len(records))

    depth = 1
    while True:
        due = [r for r in records if len(sequences[r.id]) > depth]
        if not due:
            break
        revision = await svc.remember(
            memory=revision,
            entries=[MemoryEntryInput(kind=r.kind, text=sequences[r.id][depth], entry=current[r.id]) for r in due],
            mode="append",
        )
        calls += 1
        latest = {v.entry_id: v for v in await svc.entries(revision, state="all")}
        current = {cid: latest[v.entry_id] for cid, v in current.items()}
        _advance(progress, len(due))
        depth += 1

    inactive = [r for r in records if not r.is_active]
    if inactive:
        revision = await svc.forget(revision, [current[r.id] for r in inactive], reason="corpus: inactive entry")
        calls += 1
        _advance(progress, len(inactive))
    return revision.ref, current, calls


def _match_created(corpus, memory, records, sequences, versions) -> dict[str, MemoryEntryVersion]:
    """Pair each created version with its record by (kind, text, source names)."""

    def key(kind: str, text: str, source_names: Iterable[str]) -> tuple:
        return (kind, nfc(text).strip(), tuple(sorted(source_names)))

    by_key: dict[tuple, MemoryEntryVersion] = {}
    for v in versions:
        by_key[key(v.kind, v.text, (s.name for s in v.sources))] = v
    out: dict[str, MemoryEntryVersion] = {}
    claimed: dict[str, str] = {}
    for r in records:
        k = key(r.kind, sequences[r.id][0], r.sources)
        version = by_key.get(k)
        if version is None:
            raise LoadError(f"{corpus.name}/{memory}: entry {r.id} was not created (its first text is empty or invalid?)")
        if version.entry_id in claimed:
            raise LoadError(
                f"{corpus.name}/{memory}: entries {claimed[version.entry_id]} and {r.id} start with identical content, "
                "so the service kept only one; make their first texts differ"
            )
        claimed[version.entry_id] = r.id
        out[r.id] = version
    return out


async def verify(svc: Any, loaded: LoadedCorpus) -> None:
    """Every corpus entry has its current text and state in the loaded head."""
    problems = []
    for memory, ref in loaded.heads.items():
        revision = await svc.revision(ref)
        states = {item.entry_id: item.state for item in revision.manifest.entries}
        versions = {v.entry_id: v for v in await svc.entries(ref, state="all")}
        for record in loaded.corpus.entries_by_memory()[memory]:
            entry_id = loaded.entry_ids[record.id][1]
            version = versions.get(entry_id)
            if version is None or not _same_text(version.text, record.text):
                problems.append(f"{record.id}: current text differs from memories.jsonl")
            if states.get(entry_id) != record.state:
                problems.append(f"{record.id}: state {states.get(entry_id)!r}, expected {record.state!r}")
    if problems:
        raise LoadError(f"{loaded.corpus.name}: the database does not hold the corpus:\n  " + "\n  ".join(problems))


def _advance(progress: Any, n: int) -> None:
    if progress is not None:
        progress.update(n)
