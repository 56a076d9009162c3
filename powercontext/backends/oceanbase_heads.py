"""OceanBase writes of ``memory_entry_heads``, the head projection: one row per active
entry whose FULLTEXT and HNSW indexes the server maintains with the row. Mixin of
OceanBaseMemoryBackend."""

from __future__ import annotations

import struct
from typing import Any, Sequence

from .portable import marks


def _marks(n: int) -> str:
    return ",".join(["%s"] * n)


def vector_literal(values: Sequence[float]) -> bytes:
    """Little-endian float32 bytes: OceanBase accepts them for VECTOR columns and they
    are ~5× smaller than the JSON text form."""
    return struct.pack(f"<{len(values)}f", *values)


class HeadRows:
    _vector_column: bool = False

    def _head_columns(self) -> list[str]:
        names = ["head_revision", "entry_version_id", "entry_content_hash", "searchable_text", "embedding_content_hash"]
        return names + ["embedding"] if self._vector_column else names

    def _head_values(self, head_revision, version_id, content_hash, searchable_text, vector) -> list[Any]:
        embedding_hash, values = (None, None) if vector is None else (vector[0], vector_literal(vector[1]))
        params: list[Any] = [head_revision, version_id, content_hash, searchable_text, embedding_hash]
        return params + [values] if self._vector_column else params  # NULL when no vector: never a stale one

    def _put_projections(self, tx, artifact_id, head_revision, rows):
        # One multi-row upsert on (memory_artifact_id, entry_id): a new entry's row is
        # inserted and a replaced version's row rewritten (the server keeps its
        # FULLTEXT and HNSW entries with it), where an UPDATE then an INSERT per entry
        # made a 10k-entry remember() ~30,000 round trips.
        update = ", ".join(f"{name} = VALUES({name})" for name in self._head_columns())
        self._insert_heads(tx, artifact_id, head_revision, rows, f" ON DUPLICATE KEY UPDATE {update}")

    def _insert_projections(self, tx, artifact_id, head_revision, rows):
        self._insert_heads(tx, artifact_id, head_revision, rows)

    def _insert_heads(self, tx, artifact_id, head_revision, rows, suffix=""):
        names = ["memory_artifact_id", "entry_id", *self._head_columns()]
        self._insert_many(tx, f"INSERT INTO memory_entry_heads ({', '.join(names)}) VALUES ({_marks(len(names))}){suffix}",
                          [(artifact_id, row[0], *self._head_values(head_revision, *row[1:])) for row in rows])

    def _delete_projections(self, tx, artifact_id, entry_ids):
        self._count(tx, f"DELETE FROM memory_entry_heads WHERE memory_artifact_id = ? AND entry_id IN ({marks(len(entry_ids))})",
                    (artifact_id, *entry_ids))
