"""OceanBase writes of ``memory_entry_heads``, the head projection: one row per active
entry whose FULLTEXT and HNSW indexes the server maintains with the row. Mixin of
OceanBaseMemoryBackend."""

from __future__ import annotations

from typing import Any, Sequence

from ..portable import marks
from ..vector_values import float32_bytes


def _marks(n: int) -> str:
    return ",".join(["%s"] * n)


def vector_literal(values: Sequence[float]) -> bytes:
    """Little-endian float32 bytes: OceanBase accepts them for VECTOR columns and they
    are ~5× smaller than the JSON text form."""
    return float32_bytes(values)


class HeadRows:
    _vector_column: bool = False

    def _head_columns(self) -> list[str]:
        names = ["head_revision", "entry_version_id", "entry_content_hash", "searchable_text", "embedding_content_hash"]
        return names + ["embedding"] if self._vector_column else names

    def _head_values(self, head_revision, version_id, content_hash, searchable_text, vector) -> list[Any]:
        embedding_hash, values = (None, None) if vector is None else (vector[0], vector_literal(vector[1]))
        params: list[Any] = [head_revision, version_id, content_hash, searchable_text, embedding_hash]
        return params + [values] if self._vector_column else params  # NULL when no vector: never a stale one

    def _replace_projections(self, tx, artifact_id, head_revision, rows):
        # One UPDATE per rewritten row, as before commits were batched. Not a multi-row
        # upsert: with ON DUPLICATE KEY UPDATE, test_online_equivalence failed once in
        # three CI runs, on hits of revised entries (the rows it had rewritten); the
        # cause was not found, and every earlier run passed with this UPDATE.
        columns = ", ".join(f"{name} = %s" for name in self._head_columns())
        for _, entry_id, *values in rows:
            tx.execute(f"UPDATE memory_entry_heads SET {columns} WHERE memory_artifact_id = %s AND entry_id = %s",
                       (*self._head_values(head_revision, *values), artifact_id, entry_id))

    def _insert_projections(self, tx, artifact_id, head_revision, rows):
        names = ["memory_artifact_id", "entry_id", *self._head_columns()]
        self._insert_many(tx, f"INSERT INTO memory_entry_heads ({', '.join(names)}) VALUES ({_marks(len(names))})",
                          [(artifact_id, row[0], *self._head_values(head_revision, *row[1:])) for row in rows])

    def _delete_projections(self, tx, artifact_id, entry_ids):
        self._count(tx, f"DELETE FROM memory_entry_heads WHERE memory_artifact_id = ? AND entry_id IN ({marks(len(entry_ids))})",
                    (artifact_id, *entry_ids))
