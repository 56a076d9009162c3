"""Moving a Memory database to another embedding model (``svc.migrate_embedding``).

Design: embed first, then one short transaction, catching up in between. Every head's
active entries are embedded as documents by the new model in batches, outside any
transaction (the slow part, with a progress bar); the backend then rewrites every head
row's vector, c̄ and the schema's profile record in ONE transaction
(``ProjectionRebuild.migrate_embedding``), which first locks the profile record and
every head, so no commit can slip an old-model vector in (issue 43).

Writers need not stop. A Memory that moved on during the pass (or a new one) is found
when the transaction compares the heads it locked with those embedded
(``MigrationOvertakenError``, nothing written); the migration then re-reads only the
Memories that moved, embeds only texts it has not embedded yet (a few entries, not the
whole pass again) and retries, at most ``MAX_CATCH_UPS`` times. With one commit every
2.5 s a 320 s pass used to fail every time at its end; a catch-up takes well under a
second, so the retry finds the heads still. Commits that come while the transaction
holds the locks wait for it and then refuse (``EmbeddingProfileMismatchError``: their
handle embeds with the old model and must reopen).

The migration is atomic rather than resumable: a crash or a kill during the embedding
or the write leaves the old profile with all its vectors, and running it again starts
over. No search ever compares one model's query vector with another model's stored
vectors: handles opened before the migration refuse to search or write once the
schema records the new profile, and the migrating service switches its own model and
default policy when the transaction commits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..embedding import embed_checked
from ..errors import InvalidMemoryRequestError, MigrationOvertakenError
from ..profiles import resolve
from .admission import AdmissionPolicy

#: Write transactions retried after catching up with writers, before giving up. Each
#: catch-up embeds only what changed since the last try (well under a second at one
#: commit every 2.5 s), so a retry nearly always finds the heads still; five covers a
#: burst of writers without letting a migration retry forever.
MAX_CATCH_UPS = 5


@dataclass(frozen=True)
class EmbeddingMigration:
    """What ``migrate_embedding`` did: the profiles it moved between, the head rows
    re-embedded per Memory, the rows whose stored vector changed, and where the time
    went (embedding the texts vs the one write transaction)."""

    from_profile: str
    to_profile: str
    memories: dict[str, int] = field(default_factory=dict)
    rows_written: int = 0
    embed_seconds: float = 0.0
    write_seconds: float = 0.0
    #: Write transactions retried because writers had moved Memories on, and the texts
    #: embedded to catch up with them (each embedded once, after the main pass).
    #: ``write_seconds`` is the transaction that committed, not the retries.
    catch_ups: int = 0
    caught_up_texts: int = 0

    @property
    def entries(self) -> int:
        return sum(self.memories.values())

    def __str__(self) -> str:
        return (f"{self.from_profile} → {self.to_profile}: {self.entries} entries in {len(self.memories)} "
                f"Memories re-embedded ({self.embed_seconds:.1f} s), {self.rows_written} head rows rewritten "
                f"in one transaction ({self.write_seconds:.1f} s)"
                + (f"; caught up {self.catch_ups}× with writers ({self.caught_up_texts} texts)" if self.catch_ups else ""))


def check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= 4096:
        raise InvalidMemoryRequestError(f"batch_size must be an integer in 1..4096, got {batch_size!r}"[:200])
    return batch_size


async def migrate_embedding(svc: Any, embedding: Any, batch_size: int = 64, progress: bool = True) -> EmbeddingMigration:
    """Re-embed every head row of every Memory of ``svc``'s database with ``embedding``
    (a bundled name, a model folder or an EmbeddingModel) and record its profile."""
    batch_size = check_batch_size(batch_size)
    if not isinstance(progress, bool):
        raise InvalidMemoryRequestError(f"progress must be True or False, got {type(progress).__name__}")
    model = resolve(embedding)
    if model is None:
        raise InvalidMemoryRequestError("migrate_embedding needs the model to move to, not None")
    backend = svc.backend
    backend.check_migration_target(model.profile)  # before minutes of embedding, not after
    old = backend.embedding_profile
    started = time.perf_counter()
    heads = await _read_heads(svc, {})
    vectors_of: dict[str, Any] = {}  # text → vector: a text is embedded once, however often it recurs
    await _embed_new(model, heads, vectors_of, batch_size, progress)
    embedded = time.perf_counter()
    catch_ups = caught_up = 0
    while True:
        vectors = {
            ref: {e.entry_version_id: (backend.expected_embedding_hash(e.entry_content_hash, model.profile),
                                       vectors_of[e.text]) for e in active}
            for ref, active in heads.items()
        }
        writing = time.perf_counter()
        try:
            rebuilt = await backend.migrate_embedding(model.profile, vectors)
            break
        except MigrationOvertakenError as exc:
            if catch_ups == MAX_CATCH_UPS:
                raise MigrationOvertakenError(
                    f"writers kept moving Memories on: the migration caught up {catch_ups} times and was "
                    f"overtaken again ({exc}); nothing was migrated, retry when writes are quieter") from None
            catch_ups += 1
            heads = await _read_heads(svc, heads)
            caught_up += await _embed_new(model, heads, vectors_of, batch_size, False)
    written = time.perf_counter()
    if svc.policy == AdmissionPolicy.default_for(old):  # the old model's default: the new model's now
        svc.policy = AdmissionPolicy.default_for(model.profile)
    svc.embedding = model
    return EmbeddingMigration(old.profile_id, model.profile.profile_id, rebuilt, backend.last_rebuild_writes or 0,
                              round(embedded - started, 3), round(written - writing, 3), catch_ups, caught_up)


async def _read_heads(svc: Any, known: dict) -> dict:
    """{head ref: its active entries} of every Memory; the entries of a head already in
    ``known`` are reused (a catch-up reads only the Memories that moved)."""
    return {ref: known[ref] if ref in known else await svc.entries(ref) for ref in await svc.backend.list_memories()}


async def _embed_new(model: Any, heads: dict, vectors_of: dict, batch_size: int, progress: bool) -> int:
    """Embed, as documents, every active text of ``heads`` not in ``vectors_of`` yet."""
    texts = [t for t in dict.fromkeys(e.text for active in heads.values() for e in active) if t not in vectors_of]
    bar = _bar(len(texts), f"re-embedding with {model.profile.profile_id}", progress)
    try:
        for start in range(0, len(texts), batch_size):
            batch = texts[start:start + batch_size]
            for text, vector in zip(batch, await embed_checked(model, batch, model.profile, role="document")):
                vectors_of[text] = vector
            if bar is not None:
                bar.update(len(batch))
    finally:
        if bar is not None:
            bar.close()
    return len(texts)


def _bar(total: int, label: str, show: bool):
    if not show or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="text")
