"""A database's first large load on OceanBase builds its HNSW index after the rows
(issue 37). Mixin of OceanBaseMemoryBackend, before DatabaseMemoryBackend.

The server keeps the HNSW graph up to date row by row: 100k head rows with both
indexes took 178.8 s here, and the graph so built answered a search in ~74 ms until
the server compacted it. Built at once after the rows (``CREATE /*+ PARALLEL(2) */
VECTOR INDEX``, 50.7 s for 100k) it answers at once: one ``remember()`` of 100,000
MiniLM-embedded entries 250–272 → 230 s, and the hybrid search right after it 90.1 →
27.7 ms at p50 (recall@32 0.963 → 0.968; benchmarks/search_bench.py). A load into a
table that holds rows must not drop the index other Memories are searched by, so only
a commit into an empty head table takes this way: a new database's first
``remember()``, which is how the harness loads each corpus.

DDL commits by itself on OceanBase, so the index is dropped before the commit's
transaction and created after it, whatever the commit did. In between — another
process searching, or this one killed — nothing is wrong, only slow: without the
index the vector statement (``ORDER BY l2_distance(…) APPROXIMATE``) is a full scan,
exact. ``open()`` creates the index if it is missing (``_ensure_vector_index``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger(__name__)

VECTOR_INDEX = "vidx_memory_entry_heads_embedding"
VECTOR_INDEX_WITH = "WITH (distance=L2, type=hnsw)"
# MySQL codes: 1091 the index to drop is not there, 1061 the index to create is
# (another process's first load dropped or created it first)
_NO_SUCH_INDEX, _DUPLICATE_INDEX = 1091, 1061
# 1235 "create vector index on column has vector index is not supported": the column's
# old index is still being dropped. The server finishes a DROP INDEX on its own, ~0.5 s
# here, after the index has left SHOW INDEX and DBA_OBJECTS — also when its client was
# killed, which is how the next open() meets it (a CI failure: the open was refused).
_INDEX_STILL_GOING, _STILL_GOING_TEXT = 1235, "has vector index"
#: How long the re-creation waits for such a drop to finish before the refusal stands.
INDEX_DDL_SETTLE_S = 60.0


class FirstLoad:
    #: Vectors a commit into an empty head table must carry before its index is built
    #: after the rows: the two DDL statements cost ~1.3 s (400 rows: 0.53 → 1.83 s), the
    #: row-by-row upkeep 1.3–1.8 s per 1,000 rows (20k–100k).
    vector_index_after_rows: int = 10_000

    def _commit_sync(self, plan) -> Any:
        if not (self._index_after_rows(plan) and self._drop_vector_index()):
            return super()._commit_sync(plan)
        try:
            return super()._commit_sync(plan)
        finally:
            # Whatever the commit did. Not an error of the commit if this fails (the
            # revision is written, searches are exact without the index): the next
            # open() creates it.
            try:
                self._ensure_vector_index()
            except self._pymysql.err.MySQLError as exc:
                log.warning("the HNSW index of the head table was not re-created after a first load (%s); "
                            "vector searches scan every row until the next open() creates it", exc.args[-1])

    def _index_after_rows(self, plan) -> bool:
        if not self._vector_column or plan.base_revision is not None or len(plan.vectors) < self.vector_index_after_rows:
            return False
        with self._connection().cursor() as cur:
            cur.execute("SELECT 1 FROM memory_entry_heads LIMIT 1")
            return cur.fetchone() is None

    def _drop_vector_index(self) -> bool:
        """Whether the commit may go on without the index: dropped here, or already
        gone (another process's first load). A refusal (no ALTER privilege on the
        table) keeps the row-by-row path."""
        try:
            with self._connection().cursor() as cur:
                cur.execute(f"DROP INDEX {VECTOR_INDEX} ON memory_entry_heads")
        except self._pymysql.err.MySQLError as exc:
            return bool(exc.args) and exc.args[0] == _NO_SUCH_INDEX
        return True

    def _ensure_vector_index(self) -> None:
        """Create the HNSW index, with two threads, if the head table lacks it; while an
        earlier DROP of it is still finishing on the server, wait for that first."""
        if not self._vector_column:
            return
        deadline, pause = time.monotonic() + INDEX_DDL_SETTLE_S, 0.05
        with self._connection().cursor() as cur:
            while True:
                cur.execute(f"SHOW INDEX FROM memory_entry_heads WHERE Key_name = '{VECTOR_INDEX}'")
                if cur.fetchall():
                    return
                try:
                    cur.execute(f"CREATE /*+ PARALLEL(2) */ VECTOR INDEX {VECTOR_INDEX} ON memory_entry_heads "
                                f"(embedding) {VECTOR_INDEX_WITH}")
                    return
                except self._pymysql.err.MySQLError as exc:
                    if exc.args and exc.args[0] == _DUPLICATE_INDEX:
                        return
                    dropping = exc.args[:1] == (_INDEX_STILL_GOING,) and _STILL_GOING_TEXT in str(exc)
                    if not dropping or time.monotonic() >= deadline:
                        raise
                time.sleep(pause)
                pause = min(pause * 2, 1.0)
