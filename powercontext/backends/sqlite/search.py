"""SQLite reads of the head projection for search: the full-text statement, the vector
statement, and a hybrid search's two channels read at once on two connections. Mixin
of SQLiteMemoryBackend; every check on what the rows say stays in retrieval.py."""

from __future__ import annotations

import contextlib
import math
import threading
from concurrent.futures import wait
from typing import Any, Iterator

import apsw

from ... import analyzer
from .. import vector_values
from ..channel_pool import ChannelPool
from ..retrieval import fts_fetch_size

# Extra rows read by the unfiltered vector statement past the k asked for (rows of
# other Memories, ties at the k-th distance).
VECTOR_MARGIN = 8
# sqlite-vec refuses a KNN ``k`` above 4096.
VEC0_MAX_K = 4096  # FTS reads are held to it too: 16× the deepest pool read today
# Below this share of the database's vectors held by the searched Memories, the
# unfiltered read would rarely hold k of theirs: the filtered statement is read at once.
UNFILTERED_MIN_SHARE = 0.25

_VECTOR_ROW = ("h.memory_artifact_id, h.entry_id, h.entry_version_id, h.entry_content_hash, {distance}, "
               "h.searchable_text")


def load_vec(con: apsw.Connection) -> bool:
    """Load sqlite-vec into ``con``; False when it cannot be (optional until a
    database's profile needs it)."""
    try:
        import sqlite_vec

        con.enable_load_extension(True)
        con.load_extension(sqlite_vec.loadable_path())
        con.enable_load_extension(False)
        return True
    except Exception:
        return False


def proven_top(rows, artifact_ids, k, depth, at):
    """The selection's top k of ``rows`` (an unfiltered read of the ``depth`` best by
    the score at index ``at``, lower first), ordered by (score, memory, entry) — or None
    when the read does not prove it: every row not read scores at least the worst
    read, so the selection's k-th must be strictly better than that (or every row was
    read: fewer than ``depth``)."""
    selected = set(artifact_ids)
    kept = sorted((r for r in rows if r[0] in selected), key=lambda r: (r[at], r[0], r[1]))
    if len(rows) < depth or (len(kept) >= k and kept[k - 1][at] < max(r[at] for r in rows)):
        return kept[:k]
    return None


@contextlib.contextmanager
def read_transaction(con: apsw.Connection) -> Iterator[Any]:
    cur = con.cursor()
    cur.execute("BEGIN")
    try:
        yield cur
    finally:
        cur.execute("COMMIT")  # a read: nothing to keep or undo


class SQLiteSearch(ChannelPool):
    busy_timeout_ms: int

    def _init_channels(self) -> None:
        self._channel_local = threading.local()  # each channel thread's connection
        self._channel_cons: list[apsw.Connection] = []  # all of them, for close()
        self._channel_cons_lock = threading.Lock()

    def _fts_query(self, tx, artifact_ids, terms, k):
        """Top-k rows by (FTS5 rank, memory, entry). As for vectors (``_vector_query``):
        FTS5 ranks every matching row either way, and joining each to its head row to
        test its Memory before the sort made the statement ~2× the bare ranked read
        (50k entries: 30.2 against 15.2 ms). So the bare top ``depth`` is read first and
        kept when it provably holds the selection's top k; else the filtered read."""
        match = analyzer.fts5_match_expression(terms)
        depth = self._unfiltered_depth(tx, artifact_ids, k)
        if depth is not None:
            rows = tx.execute(
                "WITH top AS (SELECT rowid, rank FROM memory_entry_search_fts WHERE memory_entry_search_fts MATCH ? "
                "ORDER BY rank LIMIT ?) SELECT h.memory_artifact_id, h.entry_id, h.entry_version_id, "
                "h.entry_content_hash, h.searchable_text, t.rank FROM top AS t "
                "LEFT JOIN memory_entry_heads AS h ON h.projection_id = t.rowid",
                (match, depth),
            ).fetchall()
            kept = proven_top(rows, artifact_ids, k, depth, at=5)
            if kept is not None:
                return [row[:5] for row in kept]
        marks = ",".join("?" * len(artifact_ids))
        return tx.execute(
            "SELECT h.memory_artifact_id, h.entry_id, h.entry_version_id, h.entry_content_hash, h.searchable_text "
            "FROM memory_entry_search_fts AS f JOIN memory_entry_heads AS h ON h.projection_id = f.rowid "
            f"WHERE memory_entry_search_fts MATCH ? AND h.memory_artifact_id IN ({marks}) "
            "ORDER BY f.rank, h.memory_artifact_id, h.entry_id LIMIT ?",
            (match, *artifact_ids, k),
        ).fetchall()

    def _vector_query(self, tx, artifact_ids, vector, k):
        """Top-k rows of the selected Memories, nearest first, ties by (memory, entry).

        vec0 scans every vector either way; restricting it to the Memories' rowids
        (``rowid IN (…)``) made that scan ~1.4× slower than the bare scan at 10k and
        50k entries (benchmarks/search_parts_bench.py). So when the Memories hold most
        of the vectors the bare top ``depth`` is read first, and it IS the answer when
        it provably holds the selection's top k: every vector not read is at least as
        far as the farthest one read, so if the selection's k-th row is strictly
        nearer than that (or every vector was read), no unread row could rank in or
        tie. Otherwise the filtered statement runs, as before."""
        blob = vector_values.float32_bytes(vector)
        depth = self._unfiltered_depth(tx, artifact_ids, k)
        if depth is not None:
            rows = tx.execute(
                "WITH nearest AS (SELECT rowid, distance FROM memory_entry_search_vector "
                "WHERE embedding MATCH ? AND k = ?) "
                f"SELECT {_VECTOR_ROW.format(distance='n.distance')} FROM nearest AS n "
                "LEFT JOIN memory_entry_heads AS h ON h.projection_id = n.rowid",
                (blob, depth),
            ).fetchall()
            kept = proven_top(rows, artifact_ids, k, depth, at=4)
            if kept is not None:
                return kept
        marks = ",".join("?" * len(artifact_ids))
        return tx.execute(
            f"SELECT {_VECTOR_ROW.format(distance='v.distance')} FROM memory_entry_search_vector AS v "
            "JOIN memory_entry_heads AS h ON h.projection_id = v.rowid "
            "WHERE v.embedding MATCH ? AND k = ? AND v.rowid IN "
            f"(SELECT projection_id FROM memory_entry_heads WHERE memory_artifact_id IN ({marks})) "
            "ORDER BY v.distance, h.memory_artifact_id, h.entry_id",
            (blob, k, *artifact_ids),
        ).fetchall()

    def _unfiltered_depth(self, tx, artifact_ids, k) -> int | None:
        """How many rows an unfiltered read takes for a top ``k`` (more when other
        Memories hold part of the rows), or None to read filtered at once. The shares
        come from the c̄ counts (memory_vector_sums; without a vector projection every
        Memory is taken to hold all): only a guess at which read is cheaper — the read
        itself proves its answer or falls back."""
        counts = dict(tx.execute("SELECT memory_artifact_id, vector_count FROM memory_vector_sums").fetchall()
                      ) if self._vector_tables else {}
        total = sum(counts.values())
        share = sum(counts.get(a, 0) for a in set(artifact_ids)) / total if total else 1.0
        if share < UNFILTERED_MIN_SHARE:
            return None
        depth = math.ceil(k / share) + VECTOR_MARGIN
        return depth if depth <= VEC0_MAX_K else None

    # ------------------------------------------------------------- both channels

    def _channel_rows(self, tx, ids, terms, query_vector, pool, state=None):
        """A hybrid search's two channel statements at once: the vector statement on a
        channel thread's connection, the full-text one on ``tx``. The other connection
        reads its own WAL snapshot; it is used only if that snapshot shows the same
        heads and projection generation as ``tx``'s (a commit in between: the vector
        statement runs on ``tx`` after all), so a search still reads the one snapshot
        of its Revisions that SQLite guarantees (tests/conformance/test_search_race.py)."""
        if (terms is None or query_vector is None or not self.concurrent_channels
                or state is None or self.path == ":memory:"):  # a second connection: another, empty database
            return super()._channel_rows(tx, ids, terms, query_vector, pool, state)
        vector_read = self._channel_executor().submit(self._vector_read, ids, query_vector, pool, state)
        try:
            fts_rows = self._fts_query(tx, ids, terms, fts_fetch_size(pool))
        except BaseException:
            wait([vector_read])  # no statement of this search outlives it
            raise
        vector_rows = vector_read.result()
        if vector_rows is None:
            vector_rows = self._vector_query(tx, ids, query_vector, pool)
        return fts_rows, vector_rows

    def _vector_read(self, ids, query_vector, pool, state):
        """The vector rows read on this channel thread's connection, or None when its
        snapshot is not the search's (``state``: the heads and schema values read in
        the search's transaction)."""
        with read_transaction(self._channel_connection()) as tx:
            if self._search_state(tx, ids) != state:
                return None
            return self._vector_query(tx, ids, query_vector, pool)

    def _channel_connection(self) -> apsw.Connection:
        """This channel thread's connection to the same file, opened on first use."""
        con = getattr(self._channel_local, "con", None)
        if con is None:
            con = apsw.Connection(self.path, flags=apsw.SQLITE_OPEN_READWRITE)
            try:
                con.set_busy_timeout(self.busy_timeout_ms)
                if not load_vec(con):
                    raise apsw.ExtensionLoadingError("sqlite-vec could not be loaded on a second connection")
            except BaseException:
                con.close()
                raise
            with self._channel_cons_lock:
                self._channel_cons.append(con)
            self._channel_local.con = con
        return con

    def _close_channels(self) -> None:
        """Closes the channel connections once no channel read is under way (close())."""
        self._close_channel_executor()
        with self._channel_cons_lock:
            cons, self._channel_cons = self._channel_cons, []
        for con in cons:
            with contextlib.suppress(Exception):
                con.close()
