"""Moving a Memory database to another embedding model (``svc.migrate_embedding``).

Design: embed first, then one transaction. Every head's active entries are embedded
as documents by the new model in batches, outside any transaction (the slow part, with
a progress bar); the backend then rewrites every head row's vector, c̄ and the schema's
profile record in ONE transaction (``ProjectionRebuild.migrate_embedding``). So the
migration is atomic rather than resumable: a crash or a kill during the embedding or
the write leaves the old profile with all its vectors, and running it again starts
over. No search ever compares one model's query vector with another model's stored
vectors: handles opened before the migration refuse to search or write once the
schema records the new profile (``EmbeddingProfileMismatchError``), and the migrating
service switches its own model and default policy when the transaction commits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ..embedding import embed_checked
from ..errors import InvalidMemoryRequestError
from ..profiles import resolve
from .admission import AdmissionPolicy


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

    @property
    def entries(self) -> int:
        return sum(self.memories.values())

    def __str__(self) -> str:
        return (f"{self.from_profile} → {self.to_profile}: {self.entries} entries in {len(self.memories)} "
                f"Memories re-embedded ({self.embed_seconds:.1f} s), {self.rows_written} head rows rewritten "
                f"in one transaction ({self.write_seconds:.1f} s)")


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
    heads = {ref: await svc.entries(ref) for ref in await backend.list_memories()}
    texts = list(dict.fromkeys(e.text for active in heads.values() for e in active))  # embed each text once
    vectors_of: dict[str, Any] = {}
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
    vectors = {
        ref: {e.entry_version_id: (backend.expected_embedding_hash(e.entry_content_hash, model.profile),
                                   vectors_of[e.text]) for e in active}
        for ref, active in heads.items()
    }
    embedded = time.perf_counter()
    rebuilt = await backend.migrate_embedding(model.profile, vectors)
    written = time.perf_counter()
    if svc.policy == AdmissionPolicy.default_for(old):  # the old model's default: the new model's now
        svc.policy = AdmissionPolicy.default_for(model.profile)
    svc.embedding = model
    return EmbeddingMigration(old.profile_id, model.profile.profile_id, rebuilt, backend.last_rebuild_writes or 0,
                              round(embedded - started, 3), round(written - embedded, 3))


def _bar(total: int, label: str, show: bool):
    if not show or total == 0:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="text")
