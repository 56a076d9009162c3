"""Embedded SQLite backend: apsw, FTS5, sqlite-vec ``vec0`` (the RFC's "Vec1").

Only SQL and the driver live here; every domain rule is in ``base.py``. One
connection, used from one worker thread, with WAL and a busy timeout so that other
processes can share the file; writes use ``BEGIN IMMEDIATE`` so the head CAS never
races a second writer on the same connection.
"""

from __future__ import annotations

import contextlib
import json
import struct
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

import apsw
import numpy as np

from ...bundled import profile_mismatch
from ...errors import BackendUnavailableError, DatabaseBusyError, PowerContextError
from ...model import EmbeddingProfile
from .. import centroid, vector_values
from ..base import DatabaseMemoryBackend
from ..maintenance import MaintenanceStep
from ..portable import PortableSQL, marks
from ..rules import SCHEMA_VERSION_KEY, check_schema_version, lineage_hash, schema_records
from ... import analyzer
from .bulk import LargeCommitCache
from .database_file import BUSY_TIMEOUT_MS, create_private, enter_wal, remove_if_unwritten
from .search import SQLiteSearch, load_vec

MIN_SQLITE = (3, 38, 0)
# Analyzer tokens are runs of letters, marks, digits and private-use characters, or
# u_/b_ CJK tokens: FTS5 must keep exactly those whole (``_`` included) and must not
# fold diacritics on its own, so that its tokens equal analyzer.tokens() split.
FTS_TOKENIZE = "unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '_'"

# The full-text index is external-content over memory_entry_heads (issue 48): FTS5
# keeps only its index, and reads the text it indexes from the head row, as
# OceanBase's FULLTEXT index does from its column. The first layout kept a second copy
# of every searchable_text (18 MB of 208 at 50k entries); _migrate_fts_layout moves
# such a file to this one. External content makes FTS5 read the old text back from
# the head row when a row is deleted: every write deletes the FTS row BEFORE it
# changes or removes its head row.
FTS_DDL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memory_entry_search_fts USING fts5(searchable_text, "
    f"content='memory_entry_heads', content_rowid='projection_id', tokenize=\"{FTS_TOKENIZE}\")"
)
# The schema record of that layout: a file without it holds the first layout.
FTS_LAYOUT = ("fts_content", "external")
# The file layout's version (schema_version): 2 = the external-content index above. A
# library reading only 1 would not delete FTS rows before head rows and corrupt it, so
# an open refuses a number above its own before it writes anything.
LAYOUT_VERSION = 2

_CORE_DDL = f"""
CREATE TABLE IF NOT EXISTS powercontext_schema (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sources (
    name TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS artifact_revisions (
    artifact_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    family TEXT NOT NULL,
    content TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    lineage TEXT NOT NULL,
    lineage_hash TEXT,
    PRIMARY KEY (artifact_id, revision)
);
CREATE TABLE IF NOT EXISTS artifact_manifest_chunks (
    chunk_key TEXT PRIMARY KEY,
    content TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS artifact_heads (
    artifact_id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    FOREIGN KEY (artifact_id, revision) REFERENCES artifact_revisions (artifact_id, revision)
);
CREATE TABLE IF NOT EXISTS memory_entry_versions (
    memory_artifact_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    entry_version_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    previous_version_id TEXT,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    source_refs TEXT NOT NULL,
    artifact_refs TEXT NOT NULL,
    entry_content_hash TEXT NOT NULL,
    created_in_revision INTEGER NOT NULL,
    PRIMARY KEY (entry_version_id),
    UNIQUE (memory_artifact_id, entry_id, version),
    UNIQUE (memory_artifact_id, entry_id, entry_version_id),
    FOREIGN KEY (previous_version_id) REFERENCES memory_entry_versions (entry_version_id),
    FOREIGN KEY (memory_artifact_id, created_in_revision)
        REFERENCES artifact_revisions (artifact_id, revision)
);
CREATE INDEX IF NOT EXISTS idx_memory_entry_versions_hash
    ON memory_entry_versions (memory_artifact_id, entry_content_hash);
CREATE TABLE IF NOT EXISTS memory_entry_heads (
    projection_id INTEGER PRIMARY KEY,
    memory_artifact_id TEXT NOT NULL,
    head_revision INTEGER NOT NULL,
    entry_id TEXT NOT NULL,
    entry_version_id TEXT NOT NULL,
    entry_content_hash TEXT NOT NULL,
    searchable_text TEXT NOT NULL,
    UNIQUE (memory_artifact_id, entry_id),
    FOREIGN KEY (memory_artifact_id, entry_id, entry_version_id)
        REFERENCES memory_entry_versions (memory_artifact_id, entry_id, entry_version_id)
);
CREATE TABLE IF NOT EXISTS memory_vector_sums (
    memory_artifact_id TEXT PRIMARY KEY,
    vector_count INTEGER NOT NULL,
    vector_sum BLOB NOT NULL
);
{FTS_DDL};
"""

_VECTOR_DDL = """
CREATE TABLE IF NOT EXISTS memory_entry_vector_metadata (
    projection_id INTEGER PRIMARY KEY,
    entry_version_id TEXT NOT NULL,
    entry_content_hash TEXT NOT NULL,
    embedding_content_hash TEXT NOT NULL,
    UNIQUE (entry_version_id),
    FOREIGN KEY (projection_id) REFERENCES memory_entry_heads (projection_id) ON DELETE CASCADE
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_entry_search_vector USING vec0(embedding float[{dimension}]);
"""


def _float32(values: Sequence[float]) -> bytes:
    return vector_values.float32_bytes(values)


# A Memory's head rows, each with its vector metadata if that row is for the same
# version and content hash (else NULLs): the anti-join of the completeness checks.
_HEAD_METADATA = (
    "FROM memory_entry_heads AS h LEFT JOIN memory_entry_vector_metadata AS m "
    "ON m.projection_id = h.projection_id AND m.entry_version_id = h.entry_version_id "
    "AND m.entry_content_hash = h.entry_content_hash WHERE h.memory_artifact_id = ?"
)


# Head rows joined to the full-text index's record of each row it holds (its docsize
# row, keyed by projection_id): the index reads its text from the head row itself.
_INDEXED = ("FROM memory_entry_heads AS h LEFT JOIN memory_entry_search_fts_docsize AS f "
            "ON f.id = h.projection_id")


class SQLiteMemoryBackend(LargeCommitCache, SQLiteSearch, PortableSQL, DatabaseMemoryBackend):
    name = "sqlite"
    max_workers = 1
    busy_timeout_ms = BUSY_TIMEOUT_MS

    def __init__(self, path: str | Path, embedding_profile: EmbeddingProfile | None = None,
                 analyzer: str | None = None) -> None:
        super().__init__(embedding_profile, analyzer)
        self.path = str(path)
        self._init_channels()
        version = tuple(int(p) for p in apsw.sqlite_lib_version().split(".")[:3])
        if version < MIN_SQLITE:
            raise BackendUnavailableError(
                f"SQLite {apsw.sqlite_lib_version()} is too old: PowerContext needs 3.38.0+ (FTS5 and vec0 APIs)"
            )
        created = self.path != ":memory:" and create_private(self.path)
        # The connection is created and used only on the worker thread. A file that is
        # not a database (or not ours) is refused with the connection closed, and a file
        # this call created is removed again (unless another process's open committed to
        # it meanwhile: remove_if_unwritten): a refused open leaves nothing behind.
        try:
            self._executor.submit(self._open_sync).result()
        except BaseException as exc:
            self._executor.submit(self._close_quietly).result()
            self._executor.shutdown(wait=True)
            self._closed = True
            if created:
                remove_if_unwritten(self.path)
            if isinstance(exc, apsw.Error):
                raise BackendUnavailableError(
                    f"cannot open {self.path!r} as a PowerContext SQLite database: {type(exc).__name__}: {exc}"
                ) from None
            raise

    def _close_quietly(self) -> None:
        con, self._con = getattr(self, "_con", None), None
        if con is not None:
            with contextlib.suppress(Exception):
                con.close()

    def _open_sync(self) -> None:
        try:
            con = apsw.Connection(self.path)
        except apsw.Error as exc:
            raise BackendUnavailableError(f"cannot open SQLite database {self.path!r}: {exc}") from exc
        self._con = con  # from here on, a failure closes it (__init__)
        con.set_busy_timeout(BUSY_TIMEOUT_MS)
        cur = con.cursor()
        self._refuse_newer_layout(cur)  # before the first write, the journal-mode pragma included
        if self.path != ":memory:":
            enter_wal(con, BUSY_TIMEOUT_MS)
        cur.execute("PRAGMA foreign_keys=ON")
        self._con = con
        self._vector_tables = False
        self._load_vec()
        with self._transaction(write=True) as tx:
            tx.execute(_CORE_DDL)
            columns = {row[1] for row in tx.execute("PRAGMA table_info(artifact_revisions)")}
            if "lineage_hash" not in columns:  # created before lineage was hashed
                tx.execute("ALTER TABLE artifact_revisions ADD COLUMN lineage_hash TEXT")
            self._backfill_lineage_hashes(tx, lineage_hash)
            self._migrate_inline_revisions(tx)
            stored = dict(tx.execute("SELECT key, value FROM powercontext_schema").fetchall())
            records, version = schema_records(stored, self.path, self._requested_analyzer, LAYOUT_VERSION)
            for key, value in records:
                tx.execute("INSERT INTO powercontext_schema (key, value) VALUES (?, ?)", (key, value))
            self.analyzer = analyzer.get(version)
            self._adopt_profile(tx, stored.get("embedding_profile"))
            self._migrate_fts_layout(tx, stored)
            if stored and "vector_sums" not in stored:  # created before c̄ was kept
                self._backfill_vector_sums(tx)
            # In the schema's own transaction: a refused probe leaves a new file unwritten,
            # so the refused open removes it (see __init__).
            self._probe_fts(tx)

    def _refuse_newer_layout(self, cur: Any) -> None:
        """SchemaTooNewError for a file a newer library wrote (read without writing)."""
        if cur.execute("SELECT 1 FROM sqlite_schema WHERE name = 'powercontext_schema'").fetchone() is None:
            return
        row = cur.execute("SELECT value FROM powercontext_schema WHERE key = ?", (SCHEMA_VERSION_KEY,)).fetchone()
        check_schema_version(None if row is None else row[0], f"SQLite database {self.path!r}", LAYOUT_VERSION)

    def _migrate_fts_layout(self, tx: Any, stored: dict[str, str]) -> None:
        """A file of the first layout (FTS5 keeping its own copy of the text) gets the
        external-content index, built from the head rows in this transaction: the
        projection is rebuildable from the head rows by design (RFC 000), and a copy
        that differed from them was wrong anyway (verify reported it). Then the records
        (a file converted by the release that wrote only ``fts_content`` gets version 2)."""
        if stored.get(FTS_LAYOUT[0]) == FTS_LAYOUT[1] and stored.get(SCHEMA_VERSION_KEY) == str(LAYOUT_VERSION):
            return
        (sql,) = tx.execute("SELECT sql FROM sqlite_schema WHERE name = 'memory_entry_search_fts'").fetchone()
        if "content=" not in sql:
            tx.execute("DROP TABLE memory_entry_search_fts")
            tx.execute(FTS_DDL)
            tx.execute("INSERT INTO memory_entry_search_fts(memory_entry_search_fts) VALUES ('rebuild')")
        self._write_schema_value(tx, *FTS_LAYOUT)
        self._write_schema_value(tx, SCHEMA_VERSION_KEY, str(LAYOUT_VERSION))

    def _load_vec(self) -> None:
        self._vec_loaded = load_vec(self._con)  # optional until a profile needs it

    def _adopt_profile(self, tx: Any, stored: str | None) -> None:
        """The embedding profile is fixed with the schema. A database created without
        one may adopt one once; a different profile is refused."""
        profile = self.embedding_profile
        if stored is not None:
            self._vector_tables = True
            # Opened without a model, the database still knows its profile: writes then
            # leave rows without vectors (incomplete) rather than pretending otherwise.
            self.embedding_profile = profile or EmbeddingProfile(**json.loads(stored))
            if profile is not None and json.loads(stored) != profile.to_canonical():
                raise BackendUnavailableError(profile_mismatch(str(self.path), json.loads(stored), profile))
            if not self._vec_loaded:
                raise BackendUnavailableError("this database has a vector projection but sqlite-vec could not be loaded")
            return
        if profile is None:
            return
        if not self._vec_loaded:
            raise BackendUnavailableError("sqlite-vec could not be loaded: install the sqlite-vec package")
        tx.execute(_VECTOR_DDL.format(dimension=int(profile.dimension)))
        tx.execute(
            "INSERT INTO powercontext_schema (key, value) VALUES ('embedding_profile', ?)",
            (json.dumps(profile.to_canonical(), sort_keys=True),),
        )
        self._vector_tables = True

    def _probe_fts(self, tx: Any) -> None:
        """Capability comes from a real round trip, not from compile options."""
        tx.execute("INSERT INTO memory_entry_search_fts (rowid, searchable_text) VALUES (-1, 'u_4e2d probe')")
        # rowid = -1 only: stored entries may contain the probe token too (any 中)
        hit = tx.execute(
            "SELECT rowid FROM memory_entry_search_fts WHERE memory_entry_search_fts MATCH ? AND rowid = -1",
            ('"u_4e2d"',),
        ).fetchall()
        # external content: FTS5 cannot read this row's text back, so it is given
        tx.execute("INSERT INTO memory_entry_search_fts (memory_entry_search_fts, rowid, searchable_text) "
                   "VALUES ('delete', -1, 'u_4e2d probe')")
        if hit != [(-1,)]:
            raise BackendUnavailableError("FTS5 probe failed: analyzer tokens are not indexed whole")

    # ------------------------------------------------------------- transactions

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        cur = self._con.cursor()
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        else:
            cur.execute("COMMIT")

    def _close_sync(self) -> None:
        self._close_channels()
        self._con.close()

    def _driver_error(self, exc: BaseException) -> PowerContextError | None:
        if isinstance(exc, (apsw.BusyError, apsw.LockedError)):
            return DatabaseBusyError(
                f"{self.path} is locked by another writer: waited {BUSY_TIMEOUT_MS / 1000:g} s (the busy timeout) "
                "and nothing was written. Retry when the other writer has finished"
            )
        if isinstance(exc, apsw.Error):
            return BackendUnavailableError(f"SQLite refused the operation on {self.path}: {type(exc).__name__}: {exc}"[:500])
        return None

    def _rows(self, tx, sql, params=()):
        return [tuple(r) for r in tx.execute(sql, tuple(params))]

    def _count(self, tx, sql, params=()):
        tx.execute(sql, tuple(params))
        return self._con.changes()

    def _insert_many(self, tx, sql, rows):
        tx.executemany(sql, rows)

    def _insert_chunks(self, tx, chunks):
        self._insert_many(
            tx, "INSERT OR IGNORE INTO artifact_manifest_chunks (chunk_key, content) VALUES (?, ?)", list(chunks.items())
        )

    def _is_unique_violation(self, exc: BaseException) -> bool:
        message = str(exc).upper()
        return isinstance(exc, apsw.ConstraintError) and ("UNIQUE" in message or "PRIMARY KEY" in message)

    # ------------------------------------------------------------- projections

    def _drop_vector(self, tx, projection_id):
        if self._vector_tables:
            tx.execute("DELETE FROM memory_entry_vector_metadata WHERE projection_id = ?", (projection_id,))
            tx.execute("DELETE FROM memory_entry_search_vector WHERE rowid = ?", (projection_id,))

    def _drop_fts_row(self, tx, pid):
        """Remove one row from the full-text index, if it is there: FTS5 reads the
        tokens to remove from the head row, so a row the index never held (a crash
        repair, a rebuild) must not be 'deleted' (it would remove another's tokens)."""
        tx.execute("DELETE FROM memory_entry_search_fts WHERE rowid = ? AND EXISTS "
                   "(SELECT 1 FROM memory_entry_search_fts_docsize WHERE id = ?)", (pid, pid))

    def _replace_projections(self, tx, artifact_id, head_revision, rows):
        for pid, _, version_id, content_hash, searchable_text, _ in rows:
            self._drop_fts_row(tx, pid)  # while the head row still holds the indexed text
            tx.execute(
                "UPDATE memory_entry_heads SET head_revision = ?, entry_version_id = ?, entry_content_hash = ?, "
                "searchable_text = ? WHERE projection_id = ?",
                (head_revision, version_id, content_hash, searchable_text, pid),
            )
            self._drop_vector(tx, pid)  # never keep a vector of older content
        self._insert_search_rows(tx, [(pid, *row) for pid, _, *row in rows])

    def _insert_projections(self, tx, artifact_id, head_revision, rows):
        # RETURNING gives each head row its projection_id, in order (one row per
        # statement of the executemany): its FTS and vector rows take that id
        pids = [r[0] for r in tx.executemany(
            "INSERT INTO memory_entry_heads (memory_artifact_id, head_revision, entry_id, entry_version_id, "
            "entry_content_hash, searchable_text) VALUES (?, ?, ?, ?, ?, ?) RETURNING projection_id",
            [(artifact_id, head_revision, entry_id, version_id, content_hash, text)
             for entry_id, version_id, content_hash, text, _ in rows],
        )]
        self._insert_search_rows(tx, [(pid, *row[1:]) for pid, row in zip(pids, rows, strict=True)])

    def _insert_search_rows(self, tx, rows):
        """The FTS row and, with a vector, the vector rows of head rows that have
        none: each (projection_id, version_id, content_hash, searchable_text, vector)."""
        if not rows:
            return
        tx.executemany("INSERT INTO memory_entry_search_fts (rowid, searchable_text) VALUES (?, ?)",
                       [(row[0], row[3]) for row in rows])
        vectors = [row for row in rows if row[4] is not None]
        if vectors and self._vector_tables:
            tx.executemany(
                "INSERT INTO memory_entry_vector_metadata (projection_id, entry_version_id, entry_content_hash, "
                "embedding_content_hash) VALUES (?, ?, ?, ?)",
                [(pid, version_id, content_hash, vector[0]) for pid, version_id, content_hash, _, vector in vectors],
            )
            tx.executemany("INSERT INTO memory_entry_search_vector (rowid, embedding) VALUES (?, ?)",
                           [(pid, _float32(vector[1])) for pid, _, _, _, vector in vectors])

    def _delete_projections(self, tx, artifact_id, entry_ids):
        pids = [r[0] for r in tx.execute(
            f"SELECT projection_id FROM memory_entry_heads WHERE memory_artifact_id = ? "
            f"AND entry_id IN ({marks(len(entry_ids))})", (artifact_id, *entry_ids))]
        if not pids:
            return
        in_pids = marks(len(pids))
        if self._vector_tables:
            tx.execute(f"DELETE FROM memory_entry_vector_metadata WHERE projection_id IN ({in_pids})", pids)
            tx.execute(f"DELETE FROM memory_entry_search_vector WHERE rowid IN ({in_pids})", pids)
        # before the head rows go (FTS5 reads their text back), and only rows it holds
        tx.execute(f"DELETE FROM memory_entry_search_fts WHERE rowid IN ({in_pids}) AND rowid IN "
                   f"(SELECT id FROM memory_entry_search_fts_docsize WHERE id IN ({in_pids}))", pids * 2)
        tx.execute(f"DELETE FROM memory_entry_heads WHERE projection_id IN ({in_pids})", pids)

    # ------------------------------------------------------------- schema, analyzer, c̄

    def _read_schema_value(self, tx, key):
        row = tx.execute("SELECT value FROM powercontext_schema WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def _write_schema_value(self, tx, key, value):
        tx.execute("INSERT OR REPLACE INTO powercontext_schema (key, value) VALUES (?, ?)", (key, value))

    def _head_rows(self, tx):
        return [tuple(r) for r in tx.execute(
            "SELECT h.projection_id, h.memory_artifact_id, h.entry_version_id, "
            f"CASE WHEN f.id IS NOT NULL THEN h.searchable_text END {_INDEXED} ORDER BY h.projection_id")]

    def _projection_rows(self, tx, artifact_id, entry_ids):
        vector_columns = vector_joins = ""
        if self._vector_tables:
            # metadata of another version or content does not belong to this row
            vector_columns = (", CASE WHEN m.entry_version_id = h.entry_version_id AND m.entry_content_hash = "
                              "h.entry_content_hash THEN m.embedding_content_hash END, v.embedding")
            vector_joins = (" LEFT JOIN memory_entry_vector_metadata AS m ON m.projection_id = h.projection_id"
                            " LEFT JOIN memory_entry_search_vector AS v ON v.rowid = h.projection_id")
        out = {}
        for row in tx.execute(
                "SELECT h.entry_id, h.projection_id, h.entry_version_id, h.entry_content_hash, "
                f"CASE WHEN f.id IS NOT NULL THEN h.searchable_text END{vector_columns} {_INDEXED}"
                f"{vector_joins} WHERE h.memory_artifact_id = ? AND h.entry_id IN ({marks(len(entry_ids))})",
                (artifact_id, *entry_ids)):
            embedding_hash, blob = row[5:] if self._vector_tables else (None, None)
            values = None if blob is None else np.frombuffer(blob, dtype="<f4").astype(np.float64)
            out[row[0]] = (row[1], row[2], row[3], row[4], embedding_hash, values)
        return out

    def _read_projection_texts(self, tx, artifact_id):
        return [tuple(r) for r in tx.execute(
            f"SELECT h.entry_id, h.searchable_text, CASE WHEN f.id IS NOT NULL THEN h.searchable_text END {_INDEXED} "
            "WHERE h.memory_artifact_id = ?", (artifact_id,))]

    def _full_text_index_issues(self, tx):
        """FTS5's own check of its tokens against the head rows' text (the external
        content): an index edited or left behind by a crash repair matches words the
        entries never say. It checks the whole index, not one Memory: the tokens of a
        row cannot be read back one by one."""
        try:
            tx.execute("INSERT INTO memory_entry_search_fts (memory_entry_search_fts, rank) VALUES ('integrity-check', 1)")
        except apsw.CorruptError:
            return ["projection: the full-text index rows differ from the head rows' search text; "
                    "run svc.rebuild_projections()"]
        return []

    def _rebuild_rows(self, tx, ref, vectors, profile):
        """A rebuild also brings the full-text index back to the head rows' text when
        FTS5's check finds it differs: its tokens cannot be repaired row by row (a
        delete removes the tokens of the row's current text, not the ones indexed)."""
        done = super()._rebuild_rows(tx, ref, vectors, profile)
        if self._full_text_index_issues(tx):
            tx.execute("INSERT INTO memory_entry_search_fts (memory_entry_search_fts) VALUES ('rebuild')")
        return done

    def _set_searchable_text(self, tx, pid, searchable_text):
        self._drop_fts_row(tx, pid)  # before the head row's text changes: FTS5 reads it back
        tx.execute("UPDATE memory_entry_heads SET searchable_text = ? WHERE projection_id = ?", (searchable_text, pid))
        tx.execute("INSERT INTO memory_entry_search_fts (rowid, searchable_text) VALUES (?, ?)", (pid, searchable_text))

    def _projection_vectors(self, tx, artifact_id, entry_ids):
        if not self._vector_tables:
            return {}
        sql = ("SELECT h.entry_id, v.embedding FROM memory_entry_heads AS h "
               "JOIN memory_entry_search_vector AS v ON v.rowid = h.projection_id WHERE h.memory_artifact_id = ?")
        # a batch of 40k entries would bind 40k variables in one IN list: split it
        parts = [None] if entry_ids is None else self._in_lists(list(entry_ids))
        out = {}
        for part in parts:
            query, params = (sql, [artifact_id]) if part is None else (
                sql + f" AND h.entry_id IN ({','.join('?' * len(part))})", [artifact_id, *part])
            out.update((entry_id, struct.unpack(f"<{len(blob) // 4}f", blob)) for entry_id, blob in tx.execute(query, params))
        return out

    def _returned_values(self, vectors):
        return vector_values.as_float32(vectors)  # vec0 keeps the float32 bytes

    def _read_vector_sum(self, tx, artifact_id):
        row = tx.execute(
            "SELECT vector_count, vector_sum FROM memory_vector_sums WHERE memory_artifact_id = ?", (artifact_id,)
        ).fetchone()
        dimension = self.embedding_profile.dimension
        return (0, [0] * dimension) if row is None else (int(row[0]), centroid.unpack(row[1], dimension))

    def _write_vector_sum(self, tx, artifact_id, count, sums):
        tx.execute(
            "INSERT OR REPLACE INTO memory_vector_sums (memory_artifact_id, vector_count, vector_sum) VALUES (?, ?, ?)",
            (artifact_id, count, centroid.pack(sums)),
        )

    # ------------------------------------------------------------- maintenance

    def _maintenance_steps(self, deadline):
        """svc.maintain(): FTS5 merges its index segments into one (a large load leaves
        many), the WAL is checkpointed into the database file, and ``PRAGMA optimize``
        refreshes the planner's statistics."""
        for name, statement, in_transaction in (
                ("full-text index segments merged",
                 "INSERT INTO memory_entry_search_fts(memory_entry_search_fts) VALUES ('optimize')", True),
                ("WAL checkpointed", "PRAGMA wal_checkpoint(TRUNCATE)", False),
                ("PRAGMA optimize", "PRAGMA optimize", False)):
            started = time.monotonic()
            if in_transaction:
                with self._transaction(write=True) as tx:
                    tx.execute(statement)
            else:
                self._con.execute(statement).fetchall()
            yield MaintenanceStep(name, time.monotonic() - started)

    # ------------------------------------------------------------- search

    # ------------------------------------------------------------- vectors

    def _vector_supported_sync(self):
        return self._vector_tables

    def _vector_rows(self, tx, artifact_id):
        # The metadata anti-join per row, and the Memory's vec0 rows counted in one
        # statement: probing vec0 by rowid for every row (EXISTS) cost ~14 µs a row,
        # 280 of 320 ms at 20k entries, where vec0 counts a rowid IN (…) in 23 ms.
        # Rowids are unique, so the count equals the head rows' iff each has its vec0
        # row; only when it does not are the rows probed one by one, to say which.
        rows = [
            (content_hash, embedding_hash, bool(has_metadata))
            for content_hash, embedding_hash, has_metadata in tx.execute(
                f"SELECT h.entry_content_hash, m.embedding_content_hash, m.projection_id IS NOT NULL {_HEAD_METADATA}",
                (artifact_id,),
            )
        ]
        (in_vec0,) = tx.execute(
            "SELECT COUNT(*) FROM memory_entry_search_vector WHERE rowid IN "
            "(SELECT projection_id FROM memory_entry_heads WHERE memory_artifact_id = ?)",
            (artifact_id,),
        ).fetchone()
        if in_vec0 == len(rows):
            return rows
        return [
            (content_hash, embedding_hash, bool(has_vector))
            for content_hash, embedding_hash, has_vector in tx.execute(
                "SELECT h.entry_content_hash, m.embedding_content_hash, m.projection_id IS NOT NULL AND EXISTS "
                f"(SELECT 1 FROM memory_entry_search_vector v WHERE v.rowid = h.projection_id) {_HEAD_METADATA}",
                (artifact_id,),
            )
        ]

    def _missing_vectors(self, tx, artifact_id):
        # Metadata and vec0 rows are written and deleted together in one transaction, so
        # the per-search check joins the metadata only: probing vec0 by rowid costs ~4 µs
        # a row (40 ms at 10k entries). _vector_rows, run once per head Revision, counts
        # vec0's rows too.
        return tx.execute(
            f"SELECT COUNT(*) {_HEAD_METADATA} AND m.projection_id IS NULL",
            (artifact_id,),
        ).fetchone()[0]

    def stored_vector(self, entry_version_id: str) -> tuple[float, ...] | None:
        """Debugging read of one stored vector (tests prove re-embedding with it)."""
        def read():
            with self._transaction(write=False) as tx:
                row = tx.execute(
                    "SELECT v.embedding FROM memory_entry_search_vector v JOIN memory_entry_heads h "
                    "ON h.projection_id = v.rowid WHERE h.entry_version_id = ?", (entry_version_id,)
                ).fetchone()
            return None if row is None else struct.unpack(f"<{len(row[0]) // 4}f", row[0])
        return self._executor.submit(read).result()
