"""OceanBase reads of the head projection for search: the full-text query with its
top-k pushdown, the vector queries, and the checks that a head's vector projection is
complete. Mixin of OceanBaseMemoryBackend."""

from __future__ import annotations

import json
import math
from concurrent.futures import wait
from typing import Any

from ..channel_pool import ChannelPool
from .heads import _marks, vector_literal
from ..retrieval import fts_fetch_size

FTS_PUSHDOWN_MARGIN = 8  # extra rows read by the unfiltered full-text query (ties at the k-th score)
VECTOR_MARGIN = 8  # extra rows read by the unfiltered vector query (ties at the k-th distance)
VECTOR_MAX_DEPTH = 1000  # deepest unfiltered vector read (16 ms at 20k entries); past it, exact
_VECTOR_COLUMNS = ("memory_artifact_id, entry_id, entry_version_id, entry_content_hash, "
                   "l2_distance(embedding, %s) AS d, searchable_text")


class HeadSearch(ChannelPool):
    _vector_column: bool = False

    # ------------------------------------------------------------- search

    def _channel_rows(self, tx, ids, terms, query_vector, pool, state=None):
        """A hybrid search's two channel statements at once: the vector statement on a
        connection of its own (its own read transaction), the full-text one on ``tx``.
        The server runs them on two cores, where one after the other they add up
        (benchmarks/search_bench.py, MiniLM, hybrid search p50, one after the other → at
        once: 100k entries compacted 64.9 → 38.8 ms, fresh 158 → 90 ms; 10k 18.5 → 14.1
        ms; 1k 7.0 → 6.6 ms). READ COMMITTED gives each statement its own snapshot
        either way; the search re-reads the heads after both have returned and checks
        every candidate against the verified manifest, so rows read on the other
        connection are held to the same checks."""
        if terms is None or query_vector is None or not self.concurrent_channels:
            return super()._channel_rows(tx, ids, terms, query_vector, pool, state)
        vector_read = self._channel_executor().submit(self._vector_read, ids, query_vector, pool)
        try:
            fts_rows = self._fts_query(tx, ids, terms, fts_fetch_size(pool))
        except BaseException:
            wait([vector_read])  # no statement of this search outlives it
            raise
        return fts_rows, vector_read.result()

    def _vector_read(self, ids, query_vector, pool):
        with self._transaction(write=False) as tx:
            return self._vector_query(tx, ids, query_vector, pool)

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
        """The k nearest head rows of the selected Memories. The server searches its
        HNSW index sublinearly only without a predicate: with ``memory_artifact_id IN
        (…)`` the plan is VECTOR INDEX ADAPTIVE SCAN (PRE-FILTER), which evaluates the
        filter over every row of the table (``range(MIN ; MAX)``) before it searches,
        and no hint brings the plain VECTOR INDEX SCAN back (4.3.5.3 takes neither
        ``VECTOR_INDEX(… post_filter)`` nor a subquery). At 20k entries in one Memory:
        pre-filtered 54 ms, unfiltered 4.7 ms, exact 24.5 ms (p50, loaded machine).

        So the index is read unfiltered, ``k + VECTOR_MARGIN`` rows, and the rows of
        other Memories are dropped here: when the searched Memories hold every row (a
        database per corpus, the harness) that is the whole answer. When they hold a
        share of the rows, the read is repeated as deep as that share asks (up to
        VECTOR_MAX_DEPTH); a selection too small for that is searched exactly through
        the Memory index, which then reads few rows. ob_hnsw_ef_search is raised per
        session (see _connection); the server searches with max(ef_search, LIMIT)."""
        literal = vector_literal(vector)
        selected = set(artifact_ids)
        asked = k + VECTOR_MARGIN
        rows = self._nearest_heads(tx, literal, asked)
        kept = [r for r in rows if r[0] in selected]
        if len(kept) < k and len(rows) == asked and kept:
            # Their share among the nearest rows says how deep a read holds k + margin
            # of theirs (× 1.5: the share varies from one neighbourhood to the next).
            deeper = math.ceil(asked * asked / len(kept) * 1.5)
            if deeper <= VECTOR_MAX_DEPTH:
                asked = deeper
                rows = self._nearest_heads(tx, literal, asked)
                kept = [r for r in rows if r[0] in selected]
        if len(kept) < k and len(rows) == asked:  # the index holds more rows than were read
            kept = self._exact_heads(tx, artifact_ids, literal, k)
        # HNSW returns equal distances in arbitrary order (and rows past ef_search out
        # of order): order them like SQLite does, ties by (memory, entry), so channel
        # ranks — and RRF — are deterministic.
        return sorted(kept, key=lambda r: (r[4], r[0], r[1]))[:k]

    def _nearest_heads(self, tx, literal, depth):
        """The ``depth`` nearest head rows of the whole table (VECTOR INDEX SCAN)."""
        tx.execute(f"SELECT {_VECTOR_COLUMNS} FROM memory_entry_heads "
                   "ORDER BY l2_distance(embedding, %s) APPROXIMATE LIMIT %s", (literal, literal, depth))
        return [tuple(r) for r in tx.fetchall() if r[4] is not None]

    def _exact_heads(self, tx, artifact_ids, literal, k):
        """Exact top-k of the selected Memories, read through their index (a TABLE
        RANGE SCAN of uk_memory_entry_heads_entry; without the hint the optimizer
        scans the whole table): for selections too small for the index's share."""
        tx.execute(
            f"SELECT /*+ INDEX(memory_entry_heads uk_memory_entry_heads_entry) */ {_VECTOR_COLUMNS} "
            f"FROM memory_entry_heads WHERE embedding IS NOT NULL AND memory_artifact_id IN ({_marks(len(artifact_ids))}) "
            "ORDER BY d, memory_artifact_id, entry_id LIMIT %s", (literal, *artifact_ids, k))
        return [tuple(r) for r in tx.fetchall()]

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
