"""OceanBase reads of the head projection for search: the full-text query with its
top-k pushdown, the vector queries, and the checks that a head's vector projection is
complete. Mixin of OceanBaseMemoryBackend."""

from __future__ import annotations

import json
from typing import Any

from .oceanbase_heads import _marks, vector_literal

FTS_PUSHDOWN_MARGIN = 8  # extra rows read by the unfiltered full-text query (ties at the k-th score)


class HeadSearch:
    _vector_column: bool = False

    # ------------------------------------------------------------- search

    def _fts_query(self, tx, artifact_ids, terms, k):
        """Top-k by (score desc, memory, entry). The server pushes ORDER BY score LIMIT
        into its text retrieval scan only without other predicates (EXPLAIN: a bare
        TEXT RETRIEVAL SCAN; with ``memory_artifact_id = …`` or ``IN (…)`` it scores
        every match and sorts them: TOP-N SORT over the scan — one MATCH per Memory
        does not bring the pushdown back). So the unfiltered top ``k + margin`` is read
        first; it is the exact answer when every row belongs to the searched Memories
        and the k-th score is not tied with the last row read (or fewer rows matched).
        Otherwise the filtered query runs, as before."""
        text = " ".join(terms)
        selected = set(artifact_ids)
        margin = k + FTS_PUSHDOWN_MARGIN
        score = "MATCH(searchable_text) AGAINST (%s IN NATURAL LANGUAGE MODE)"
        columns = f"memory_artifact_id, entry_id, entry_version_id, entry_content_hash, searchable_text, {score} AS score"
        tx.execute(f"SELECT {columns} FROM memory_entry_heads WHERE {score} ORDER BY score DESC LIMIT %s",
                   (text, text, margin))
        rows = [tuple(r) for r in tx.fetchall()]
        if all(r[0] in selected for r in rows) and (len(rows) < margin or rows[-1][5] < sorted(
                (r[5] for r in rows), reverse=True)[min(k, len(rows)) - 1]):
            rows.sort(key=lambda r: (-r[5], r[0], r[1]))
            return [r[:5] for r in rows[:k]]
        tx.execute(
            f"SELECT {columns} FROM memory_entry_heads WHERE {score} "
            f"AND memory_artifact_id IN ({_marks(len(artifact_ids))}) "
            "ORDER BY score DESC, memory_artifact_id, entry_id LIMIT %s",
            (text, text, *artifact_ids, k),
        )
        return [tuple(row[:5]) for row in tx.fetchall()]

    # ------------------------------------------------------------- vectors

    def _vector_supported_sync(self):
        return self._vector_column

    def _vector_rows(self, tx, artifact_id):
        tx.execute(
            "SELECT entry_content_hash, embedding_content_hash, embedding IS NOT NULL FROM memory_entry_heads "
            "WHERE memory_artifact_id = %s",
            (artifact_id,),
        )
        return [(c, e, bool(v)) for c, e, v in tx.fetchall()]

    def _vectors_proven_by_server(self, tx, artifact_id):
        # The server hashes each row as canonical.embedding_hash_template splices it and
        # counts the rows that pass; only rows whose entry hash is 64 lowercase hex digits
        # can (the template's domain), and the hash columns are utf8mb4_bin, so "=" is
        # exact. Reading every row's two hashes into Python instead took 255 ms of the
        # first search after a reopen at 20k entries. A row that fails here is judged
        # by the full check in Python, which decides.
        template = self.embedding_hash_template()
        if template is None:
            return False
        prefix, suffix = template
        tx.execute(
            "SELECT COUNT(*), COALESCE(SUM(embedding IS NOT NULL AND entry_content_hash REGEXP '^[0-9a-f]{64}$' "
            "AND embedding_content_hash = SHA2(CONCAT(%s, entry_content_hash, %s), 256)), 0) "
            "FROM memory_entry_heads WHERE memory_artifact_id = %s",
            (prefix, suffix, artifact_id),
        )
        total, passed = tx.fetchone()
        return int(total) == int(passed)

    def _missing_vectors(self, tx, artifact_id):
        tx.execute(
            "SELECT COUNT(*) FROM memory_entry_heads WHERE memory_artifact_id = %s "
            "AND (embedding IS NULL OR embedding_content_hash IS NULL)",
            (artifact_id,),
        )
        return tx.fetchone()[0]

    def _vector_query(self, tx, artifact_ids, vector, k):
        # HNSW (APPROXIMATE) with a pre-filter on the selected Memories; ob_hnsw_ef_search
        # is raised per session (see _connection) for recall ≥ 0.99 at k = 32. The
        # unfiltered VECTOR INDEX SCAN is faster (19 vs 86 ms at 10k entries) but, unlike
        # the full-text pushdown, not the same answer: on the bench's seeded vectors its
        # recall@32 against the exact top-k was 0.91 (min 0.63), the pre-filtered
        # ADAPTIVE SCAN's 1.00 (measured at 10k).
        literal = vector_literal(vector)
        tx.execute(
            "SELECT memory_artifact_id, entry_id, entry_version_id, entry_content_hash, l2_distance(embedding, %s) AS d, "
            f"searchable_text FROM memory_entry_heads WHERE memory_artifact_id IN ({_marks(len(artifact_ids))}) "
            "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT %s",
            (literal, *artifact_ids, literal, k),
        )
        rows = [tuple(r) for r in tx.fetchall() if r[4] is not None]
        # HNSW returns equal distances in arbitrary order; order ties like SQLite does
        # (memory, entry) so channel ranks — and RRF — are deterministic.
        return sorted(rows, key=lambda r: (r[4], r[0], r[1]))

    def exact_vector_query(self, artifact_ids, vector, k):
        """Exact top-k (full scan) — the yardstick for HNSW recall measurements."""
        def run():
            with self._transaction(write=False) as tx:
                literal = vector_literal(vector)
                tx.execute(
                    "SELECT memory_artifact_id, entry_id, entry_version_id, entry_content_hash, l2_distance(embedding, %s) AS d "
                    f"FROM memory_entry_heads WHERE embedding IS NOT NULL AND memory_artifact_id IN ({_marks(len(artifact_ids))}) "
                    "ORDER BY d, projection_id LIMIT %s",
                    (literal, *artifact_ids, k),
                )
                return [tuple(r) for r in tx.fetchall()]
        return self._executor.submit(run).result()

    def stored_vector(self, entry_version_id: str) -> tuple[float, ...] | None:
        """Debugging read of one stored vector (tests prove re-embedding with it)."""
        def read():
            with self._transaction(write=False) as tx:
                tx.execute("SELECT embedding FROM memory_entry_heads WHERE entry_version_id = %s", (entry_version_id,))
                row = tx.fetchone()
            return None if row is None or row[0] is None else stored_vector_values(row[0])
        return self._executor.submit(read).result()


def stored_vector_values(value: Any) -> tuple[float, ...]:
    """A VECTOR column as the server returns it (the text form ``[0.1,…]``)."""
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("ascii")
    return tuple(float(v) for v in json.loads(value))
