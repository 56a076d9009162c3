"""OceanBase backend (MySQL mode, 4.3.5.3+): pymysql, FULLTEXT WITH PARSER SPACE and an
HNSW vector index on ``memory_entry_heads``, head CAS in a transaction.

Only SQL and the driver live here; every domain rule is in ``base.py``. Facts this
adapter relies on were measured on a seekdb server (see OCEANBASE_NOTES.md):

* identity and hash columns are ``utf8mb4_bin`` (this server has no ``ascii`` charset;
  the binary collation keeps ``Alpha`` and ``alpha`` distinct);
* the SPACE parser needs ``min_token_size=1`` or two-letter terms (``uv``, ``go``) are
  never indexed; its stop words are the ones Analyzer v1 already drops;
* the lock-wait bound is ``ob_trx_lock_timeout`` (µs); ``innodb_lock_wait_timeout`` is
  accepted but ignored, and the default is to wait without limit;
* statements are READ COMMITTED snapshots, so search re-reads heads after the channel
  queries (done in the base class).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import re
import threading
import time
from typing import Any, Iterator
from urllib.parse import unquote, urlparse

import numpy as np

from ...bundled import profile_mismatch
from ...errors import (
    BackendUnavailableError,
    ConnectionLostError,
    InvalidMemoryRequestError,
    PowerContextError,
    QueryTimeoutError,
    ServerStalledError,
)
from ...model import EmbeddingProfile
from ...redaction import redact
from ... import analyzer as analyzer_module
from .. import centroid, vector_values
from ..base import DatabaseMemoryBackend
from ..driver import (
    DATABASE_NAME,
    RECOVERY_PAUSE_S,
    connect,
    is_connection_lost,
    is_query_timeout,
    is_recovering,
    is_stalled,
    pyformat,
    stall_bound_s,
)
from .access import AccountAccess
from .first_load import VECTOR_INDEX, VECTOR_INDEX_WITH, FirstLoad
from .heads import HeadRows, _marks
from .limits import PacketLimit
from .maintenance import ServerUpkeep
from .search import HeadSearch, stored_vector_values
from ..portable import PortableSQL
from ..rules import SCHEMA_VERSION_KEY, check_schema_version, lineage_hash, schema_records
from ..seekdb.store import stalled_message

MIN_VERSION = (4, 3, 5, 3)
# This database layout's version (powercontext_schema.schema_version). A layout change
# an older library's writes would break bumps it; an open refuses a number above it
# before it creates or writes anything.
LAYOUT_VERSION = 1
LOCK_TIMEOUT_US = 10_000_000
QUERY_TIMEOUT_US = 60_000_000  # default ob_query_timeout of this adapter's sessions
QUERY_TIMEOUT_ENV = "POWERCONTEXT_OB_QUERY_TIMEOUT_S"
# The HNSW search breadth of this adapter's sessions. Recall@32 of the vector channel
# against exact search (benchmarks/hnsw_build_bench.py, MiniLM vectors of the bench
# corpus, server-default build): 100k rows 0.909 at 200, 0.942 at 400, 0.964 at 800,
# 0.968 at 1600, the statement's time the same at each (76 ms fresh, 26-30 ms
# compacted); 10k rows 0.997 at 200, 1.000 at 800 (+1.7 ms), 1k 1.000 (+0.35 ms).
HNSW_EF_SEARCH = 800
ID = "VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
HASH = "CHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
BIN_TEXT = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
ER_DUP_ENTRY = 1062
ACCESS_DENIED = 1045  # ER_ACCESS_DENIED_ERROR: the server answered and refused the login
PACKET_MARGIN = 4096  # protocol header and statement framing around the SQL text

_CORE_DDL = [
    f"""CREATE TABLE IF NOT EXISTS powercontext_schema (
        `key` VARCHAR(64) {BIN_TEXT} NOT NULL PRIMARY KEY,
        value LONGTEXT {BIN_TEXT} NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS sources (
        name {ID} NOT NULL PRIMARY KEY,
        content_hash {HASH} NOT NULL,
        payload LONGTEXT {BIN_TEXT} NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS artifact_revisions (
        artifact_id {ID} NOT NULL,
        revision BIGINT NOT NULL,
        family VARCHAR(64) {BIN_TEXT} NOT NULL,
        content LONGTEXT {BIN_TEXT} NOT NULL,
        content_hash {HASH} NOT NULL,
        lineage LONGTEXT {BIN_TEXT} NOT NULL,
        lineage_hash {HASH},
        PRIMARY KEY (artifact_id, revision))""",
    f"""CREATE TABLE IF NOT EXISTS artifact_manifest_chunks (
        chunk_key {HASH} NOT NULL PRIMARY KEY,
        content LONGTEXT {BIN_TEXT} NOT NULL)""",
    f"""CREATE TABLE IF NOT EXISTS artifact_heads (
        artifact_id {ID} NOT NULL,
        revision BIGINT NOT NULL,
        PRIMARY KEY (artifact_id),
        CONSTRAINT fk_artifact_heads_revision FOREIGN KEY (artifact_id, revision)
            REFERENCES artifact_revisions (artifact_id, revision))""",
    f"""CREATE TABLE IF NOT EXISTS memory_entry_versions (
        memory_artifact_id {ID} NOT NULL,
        entry_id {ID} NOT NULL,
        entry_version_id {ID} NOT NULL,
        version BIGINT NOT NULL,
        previous_version_id {ID},
        kind VARCHAR(64) {BIN_TEXT} NOT NULL,
        text TEXT {BIN_TEXT} NOT NULL,
        source_refs LONGTEXT {BIN_TEXT} NOT NULL,
        artifact_refs LONGTEXT {BIN_TEXT} NOT NULL,
        entry_content_hash {HASH} NOT NULL,
        created_in_revision BIGINT NOT NULL,
        PRIMARY KEY (entry_version_id),
        UNIQUE KEY uk_memory_entry_versions_number (memory_artifact_id, entry_id, version),
        UNIQUE KEY uk_memory_entry_versions_identity (memory_artifact_id, entry_id, entry_version_id),
        KEY idx_memory_entry_versions_hash (memory_artifact_id, entry_content_hash),
        CONSTRAINT fk_memory_entry_versions_previous FOREIGN KEY (previous_version_id)
            REFERENCES memory_entry_versions (entry_version_id),
        CONSTRAINT fk_memory_entry_versions_revision FOREIGN KEY (memory_artifact_id, created_in_revision)
            REFERENCES artifact_revisions (artifact_id, revision))""",
    f"""CREATE TABLE IF NOT EXISTS memory_vector_sums (
        memory_artifact_id {ID} NOT NULL PRIMARY KEY,
        vector_count BIGINT NOT NULL,
        vector_sum LONGBLOB NOT NULL)""",
]

_HEADS_DDL = """CREATE TABLE IF NOT EXISTS memory_entry_heads (
    projection_id BIGINT NOT NULL AUTO_INCREMENT,
    memory_artifact_id {ID} NOT NULL,
    head_revision BIGINT NOT NULL,
    entry_id {ID} NOT NULL,
    entry_version_id {ID} NOT NULL,
    entry_content_hash {HASH} NOT NULL,
    searchable_text TEXT {BIN_TEXT} NOT NULL,
    embedding_content_hash {HASH},
    {vector_column}
    PRIMARY KEY (projection_id),
    UNIQUE KEY uk_memory_entry_heads_entry (memory_artifact_id, entry_id),
    KEY idx_memory_entry_heads_version (entry_version_id),
    FULLTEXT INDEX ftx_memory_entry_heads_text (searchable_text)
        WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1),
    {vector_index}
    CONSTRAINT fk_memory_entry_heads_version FOREIGN KEY (memory_artifact_id, entry_id, entry_version_id)
        REFERENCES memory_entry_versions (memory_artifact_id, entry_id, entry_version_id))"""


log = logging.getLogger(__name__)

#: The database a server URL without one (``oceanbase://root:pw@host:port/``) uses.
DEFAULT_DATABASE = "pc"


def parse_url(url: str) -> dict[str, Any]:
    """Connection parameters of ``oceanbase://user[:password]@host:port/database``.

    A URL with no database uses DEFAULT_DATABASE (``default_database`` is then its
    name, else None).
    Errors quote the URL without its password."""
    try:
        parsed = urlparse(url)
        port = parsed.port
    except ValueError as exc:
        raise InvalidMemoryRequestError(f"{redact(url)!r} is not a valid URL: {exc}") from None
    if parsed.scheme not in ("oceanbase", "mysql"):
        raise InvalidMemoryRequestError(f"not an OceanBase URL: {redact(url)!r}")
    database = parsed.path.lstrip("/")
    if not database:
        database = DEFAULT_DATABASE
    if not DATABASE_NAME.fullmatch(database):
        raise InvalidMemoryRequestError(
            f"{redact(url)!r} names no usable database: use oceanbase://user[:password]@host:port/database "
            "(letters, digits and _)"
        )
    return dict(
        host=parsed.hostname or "127.0.0.1",
        port=port or 2881,
        user=unquote(parsed.username or "root"),
        password=unquote(parsed.password or ""),
        database=database,
        # the name, not a flag: a user reading ``svc.backend.default_database`` saw
        # ``True`` and could not tell which database that was (issue 45)
        default_database=None if parsed.path.lstrip("/") else DEFAULT_DATABASE,
    )


def query_timeout_us() -> int:
    """The ob_query_timeout this adapter sets on its sessions: ``POWERCONTEXT_OB_QUERY_TIMEOUT_S``
    seconds, default 60. One statement may run that long; maintenance of a very large
    Memory (a 100k-entry rebuild on a loaded machine) may want more."""
    raw = os.environ.get(QUERY_TIMEOUT_ENV, "").strip()
    if not raw:
        return QUERY_TIMEOUT_US
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 86_400 * 365):
        raise InvalidMemoryRequestError(f"{QUERY_TIMEOUT_ENV} must be a positive number of seconds, got {raw!r}")
    return max(1, round(seconds * 1_000_000))


class OceanBaseMemoryBackend(AccountAccess, FirstLoad, HeadRows, HeadSearch, PacketLimit, ServerUpkeep, PortableSQL,
                             DatabaseMemoryBackend):
    name = "oceanbase"
    max_workers = 4
    # A plain SELECT reads the last committed version and locks nothing: a migration
    # that read the heads that way let a commit pass its CAS under it (issue 43).
    ROW_LOCK = " FOR UPDATE"

    def __init__(self, url: str, embedding_profile: EmbeddingProfile | None = None, *, create_database: bool = True,
                 analyzer: str | None = None) -> None:
        super().__init__(embedding_profile, analyzer)
        import pymysql

        self._pymysql = pymysql
        self.query_timeout_us = query_timeout_us()  # refused before anything connects
        self._params = parse_url(url)
        self.url = url  # may carry the password: never put it in a message (see __repr__)
        self.database = self._params["database"]
        #: DEFAULT_DATABASE's name when the URL named no database and it was used, else None.
        self.default_database: str | None = self._params["default_database"]
        if self.default_database:
            log.info("%s names no database; using database %r", redact(url), self.database)
        self._local = threading.local()
        self._connections: list[Any] = []
        self._connections_lock = threading.Lock()
        self._vector_column = False
        self.max_allowed_packet = 1 << 20  # until read from the server in _setup_sync
        try:
            if create_database:
                self._create_database()
            self._executor.submit(self._setup_sync).result()
        except self._pymysql.err.MySQLError as exc:  # no raw driver error leaves open
            self._close_sync()
            raise (self._driver_error(exc) or BackendUnavailableError(str(exc))) from None
        except BaseException:
            self._close_sync()
            raise

    # ------------------------------------------------------------- connections

    def __repr__(self) -> str:
        return f"OceanBaseMemoryBackend({redact(self.url)!r})"

    def _raw_connect(self, database: str | None):
        p = self._params
        bound = stall_bound_s(self.query_timeout_us / 1e6)  # no statement waits forever on a stalled server
        try:
            return connect(
                host=p["host"], port=p["port"], user=p["user"], password=p["password"],
                database=database, autocommit=True, connect_timeout=10, read_timeout=bound, write_timeout=bound,
            )
        except self._pymysql.err.MySQLError as exc:
            if exc.args and exc.args[0] == ACCESS_DENIED:  # the server is there; starting another would not help
                raise BackendUnavailableError(
                    f"OceanBase at {p['host']}:{p['port']} refused the credentials of {p['user']!r} "
                    "(a wrong password, or no such user): check the URL's user and password"
                ) from None
            if is_stalled(exc):
                # the port accepted and the handshake never came: a wedged server, not a
                # missing one — the same error a statement on it gets, not "start one"
                raise ServerStalledError(*stalled_message(p["host"], p["port"], bound)) from None
            error = ConnectionLostError if is_connection_lost(exc, connecting=True) else BackendUnavailableError
            raise error(
                f"cannot reach OceanBase at {p['host']}:{p['port']} as {p['user']!r}: {exc.args[-1]}. "
                "Start one with `python -m powercontext.backends.seekdb start` or set POWERCONTEXT_OCEANBASE_URL"
            ) from None

    def _connection(self):
        con = getattr(self._local, "con", None)
        if con is None:
            con = self._raw_connect(self._params["database"])
            with con.cursor() as cur:
                cur.execute(f"SET ob_trx_lock_timeout = {LOCK_TIMEOUT_US}")
                cur.execute(f"SET ob_query_timeout = {int(self.query_timeout_us)}")
                cur.execute(f"SET ob_hnsw_ef_search = {HNSW_EF_SEARCH}")
            self._local.con = con
            with self._connections_lock:
                self._connections.append(con)
        return con

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        if write:
            self._refuse_write()  # a read-only account: refused before any statement
        con = self._connection()
        try:
            con.begin()
            cur = con.cursor()
        except BaseException as exc:
            self._drop_connection_after(exc)
            raise
        try:
            yield cur
        except BaseException as exc:
            try:
                con.rollback()
            except Exception:  # noqa: BLE001 - the connection is gone; the server rolls back
                self._drop_connection()
            self._drop_connection_after(exc)
            raise
        else:
            try:
                con.commit()
            except BaseException as exc:
                self._drop_connection_after(exc)
                raise
        finally:
            with contextlib.suppress(Exception):
                cur.close()

    def _drop_connection_after(self, exc: BaseException) -> None:
        if not isinstance(exc, PowerContextError) and is_connection_lost(exc):
            self._drop_connection()

    def _drop_connection(self) -> None:
        """Forget this worker's connection (it died with the server); the next
        statement on this thread opens a new one."""
        con = getattr(self._local, "con", None)
        self._local.con = None
        if con is not None:
            with self._connections_lock:
                if con in self._connections:
                    self._connections.remove(con)
            with contextlib.suppress(Exception):
                con.close()

    def _is_connection_lost(self, exc: BaseException) -> bool:
        # a stalled server is not retried: the second try would wait as long again
        return is_connection_lost(exc) and not is_stalled(exc)

    def _pause_before_retry(self, lost: BaseException) -> None:
        if is_recovering(lost):  # up, but its transaction service is not: retrying at once fails again
            time.sleep(RECOVERY_PAUSE_S)

    def _driver_error(self, exc: BaseException) -> PowerContextError | None:
        if (denied := self._refused_error(exc)) is not None:
            return denied
        if is_stalled(exc):
            message, store = stalled_message(self._params["host"], self._params["port"],
                                             stall_bound_s(self.query_timeout_us / 1e6))
            return ServerStalledError(message, store)
        if is_query_timeout(exc):
            # the server's text names the session's value: "…timeout: 60000000(us)…"
            found = re.search(r"timeout: (\d+)", str(exc.args[-1]))
            value = int(found.group(1)) if found else self.query_timeout_us
            return QueryTimeoutError(
                f"a statement ran longer than the OceanBase session's ob_query_timeout ({value:,} µs) and was "
                "stopped; the transaction was rolled back: nothing was written. Do the work in smaller calls, "
                f"or open with {QUERY_TIMEOUT_ENV} set to more seconds", "ob_query_timeout", value)
        if isinstance(exc, self._pymysql.err.MySQLError):
            return BackendUnavailableError(f"OceanBase refused the statement: {exc.args[-1] if exc.args else exc}"[:500])
        return None

    def _close_sync(self) -> None:
        # Each worker thread owns a connection (so does each thread reading a search's
        # vector channel); all are listed here, so one call (on any worker) closes every
        # one of them, once no vector read is under way.
        self._close_channel_executor()
        with self._connections_lock:
            for con in self._connections:
                with contextlib.suppress(Exception):
                    con.close()
            self._connections.clear()

    def _rows(self, tx, sql, params=()):
        self._check_packet(sql, params)
        tx.execute(pyformat(sql), tuple(params))
        return [tuple(r) for r in tx.fetchall()]

    def _count(self, tx, sql, params=()):
        self._check_packet(sql, params)
        return tx.execute(pyformat(sql), tuple(params))

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, self._pymysql.err.IntegrityError) and exc.args and exc.args[0] == ER_DUP_ENTRY

    # ------------------------------------------------------------- schema and probes

    def _setup_sync(self) -> None:
        with self._transaction(write=False) as cur:
            try:
                cur.execute("SELECT ob_version()")
            except self._pymysql.err.MySQLError as exc:
                raise BackendUnavailableError(f"{self._params['host']}:{self._params['port']} is not OceanBase: {exc}") from exc
            version_text = cur.fetchone()[0]
            cur.execute("SELECT @@max_allowed_packet")
            self.max_allowed_packet = int(cur.fetchone()[0])
            # Full OceanBase tenants report their mode here; seekdb has no such
            # variable because it only speaks MySQL mode.
            cur.execute("SHOW VARIABLES LIKE 'ob_compatibility_mode'")
            row = cur.fetchone()
            mode = "MYSQL" if row is None else row[1]
        version = tuple(int(x) for x in re.findall(r"\d+", version_text)[:4])
        if version < MIN_VERSION:
            raise BackendUnavailableError(f"OceanBase {version_text} is too old: PowerContext needs 4.3.5.3+")
        if str(mode).upper() != "MYSQL":
            raise BackendUnavailableError(f"the tenant is in {mode} mode; PowerContext needs a MySQL-mode tenant")
        con = self._connection()
        with con.cursor() as cur:  # DDL is auto-committed in MySQL mode
            self._refuse_newer_layout(cur)
            self.read_only = not self._account_may_write(cur)
            for ddl in self._missing_tables(cur, _CORE_DDL):  # CREATE needs its privilege even if the table exists
                cur.execute(ddl)
            cur.execute("SHOW COLUMNS FROM artifact_revisions LIKE 'lineage_hash'")
            if cur.fetchone() is None:  # created before lineage was hashed
                cur.execute(f"ALTER TABLE artifact_revisions ADD COLUMN lineage_hash {HASH}")
        with self._transaction(write=not self.read_only) as tx:  # writes only what an old database lacks
            self._backfill_lineage_hashes(tx, lineage_hash)
            self._migrate_inline_revisions(tx)
        with con.cursor() as cur:
            cur.execute("SELECT `key`, value FROM powercontext_schema")
            stored = dict(cur.fetchall())
            stored_profile = stored.get("embedding_profile")
            if stored_profile is not None and self.embedding_profile is not None:
                if json.loads(stored_profile) != self.embedding_profile.to_canonical():
                    raise BackendUnavailableError(profile_mismatch(
                        f"database {self._params['database']!r}", json.loads(stored_profile), self.embedding_profile))
            cur.execute("SHOW TABLES LIKE 'memory_entry_heads'")
            heads_exist = cur.fetchone() is not None
            profile = self.embedding_profile if stored_profile is None else EmbeddingProfile(**json.loads(stored_profile))
            if not heads_exist:
                cur.execute(self._heads_ddl(profile if stored or profile else None))
            records, version = schema_records(stored, f"database {self._params['database']!r}",
                                              self._requested_analyzer, LAYOUT_VERSION)
            for key, value in records:
                cur.execute("INSERT INTO powercontext_schema (`key`, value) VALUES (%s, %s)", (key, value))
            self.analyzer = analyzer_module.get(version)
            if stored_profile is None and self.embedding_profile is not None:
                if heads_exist:
                    self._adopt_vector_column(cur, self.embedding_profile)
                cur.execute(
                    "INSERT INTO powercontext_schema (`key`, value) VALUES ('embedding_profile', %s)",
                    (json.dumps(self.embedding_profile.to_canonical(), sort_keys=True),),
                )
                stored_profile = "set"
            self._vector_column = stored_profile is not None
            if self._vector_column and self.embedding_profile is None:
                cur.execute("SELECT value FROM powercontext_schema WHERE `key` = 'embedding_profile'")
                self.embedding_profile = EmbeddingProfile(**json.loads(cur.fetchone()[0]))
        if stored and "vector_sums" not in stored:  # created before c̄ was kept
            with self._transaction(write=not self.read_only) as tx:
                self._backfill_vector_sums(tx)
        self._ensure_vector_index()  # a first load killed between dropping and re-creating it
        if not self.read_only:  # the probe writes a row; a reader's database was probed by its writer
            self._probe_fulltext()

    def _refuse_newer_layout(self, cur: Any) -> None:
        """SchemaTooNewError for a database a newer library wrote, read without writing."""
        cur.execute("SHOW TABLES LIKE 'powercontext_schema'")
        if cur.fetchone() is None:  # a new database
            return
        cur.execute("SELECT value FROM powercontext_schema WHERE `key` = %s", (SCHEMA_VERSION_KEY,))
        row = cur.fetchone()
        check_schema_version(None if row is None else row[0],
                             f"OceanBase database {self._params['database']!r}", LAYOUT_VERSION)

    @staticmethod
    def _heads_ddl(profile: EmbeddingProfile | None) -> str:
        vector_column = vector_index = ""
        if profile is not None:
            vector_column = f"embedding VECTOR({int(profile.dimension)}),"
            vector_index = f"VECTOR INDEX {VECTOR_INDEX} (embedding) {VECTOR_INDEX_WITH},"
        return _HEADS_DDL.format(ID=ID, HASH=HASH, BIN_TEXT=BIN_TEXT, vector_column=vector_column, vector_index=vector_index)

    @staticmethod
    def _adopt_vector_column(cur, profile: EmbeddingProfile) -> None:
        """A database created without a profile adopts one once (its vector
        projection is then incomplete until rebuild_projections())."""
        cur.execute(f"ALTER TABLE memory_entry_heads ADD COLUMN embedding VECTOR({int(profile.dimension)})")
        cur.execute(f"CREATE VECTOR INDEX {VECTOR_INDEX} ON memory_entry_heads (embedding) {VECTOR_INDEX_WITH}")

    def _probe_fulltext(self) -> None:
        """A real insert/match/delete round trip on a scratch table with the same
        parser settings: capability comes from behaviour, not from the version string."""
        con = self._connection()
        with con.cursor() as cur:
            cur.execute("SHOW TABLES LIKE 'powercontext_fts_probe'")
            if cur.fetchone() is None:  # CREATE … IF NOT EXISTS needs CREATE even when it exists
                cur.execute(
                    f"CREATE TABLE IF NOT EXISTS powercontext_fts_probe (id BIGINT PRIMARY KEY, "
                    f"t TEXT {BIN_TEXT} NOT NULL, "
                    "FULLTEXT INDEX ftx_probe (t) WITH PARSER SPACE PARSER_PROPERTIES=(min_token_size=1))"
                )
        with self._transaction(write=True) as cur:
            cur.execute("REPLACE INTO powercontext_fts_probe (id, t) VALUES (1, 'u_4e2d uv probe')")
            cur.execute("SELECT id FROM powercontext_fts_probe WHERE MATCH(t) AGAINST (%s IN NATURAL LANGUAGE MODE)", ("uv",))
            hits = cur.fetchall()
            cur.execute("DELETE FROM powercontext_fts_probe WHERE id = 1")
        if [tuple(h) for h in hits] != [(1,)]:
            raise BackendUnavailableError(
                "OceanBase FULLTEXT probe failed: the SPACE parser did not index two-letter analyzer tokens"
            )

    # ------------------------------------------------------------- projections: heads.py

    # ------------------------------------------------------------- schema, analyzer, c̄

    def _read_schema_value(self, tx, key):
        tx.execute("SELECT value FROM powercontext_schema WHERE `key` = %s", (key,))
        row = tx.fetchone()
        return None if row is None else row[0]

    def _write_schema_value(self, tx, key, value):
        tx.execute("REPLACE INTO powercontext_schema (`key`, value) VALUES (%s, %s)", (key, value))

    def _head_rows(self, tx):
        # the FULLTEXT index is the server's, maintained with the row: the row's text is its text
        tx.execute("SELECT projection_id, memory_artifact_id, entry_version_id, searchable_text FROM memory_entry_heads "
                   "ORDER BY projection_id")
        return [tuple(r) for r in tx.fetchall()]

    def _projection_rows(self, tx, artifact_id, entry_ids):
        vector = ", embedding" if self._vector_column else ""
        tx.execute(f"SELECT entry_id, projection_id, entry_version_id, entry_content_hash, searchable_text, "
                   f"embedding_content_hash{vector} FROM memory_entry_heads WHERE memory_artifact_id = %s "
                   f"AND entry_id IN ({_marks(len(entry_ids))})", (artifact_id, *entry_ids))
        out = {}
        for row in tx.fetchall():
            text = row[6] if self._vector_column else None
            values = None if text is None else np.asarray(stored_vector_values(text))
            out[row[0]] = (row[1], row[2], row[3], row[4], row[5], values)
        return out

    def _set_searchable_text(self, tx, projection_id, searchable_text):
        # The FULLTEXT index is maintained by the server with the row.
        tx.execute("UPDATE memory_entry_heads SET searchable_text = %s WHERE projection_id = %s",
                   (searchable_text, projection_id))

    def _projection_vectors(self, tx, artifact_id, entry_ids):
        if not self._vector_column:
            return {}
        sql = "SELECT entry_id, embedding FROM memory_entry_heads WHERE memory_artifact_id = %s AND embedding IS NOT NULL"
        # one IN list per part: a 100k-entry batch must stay under max_allowed_packet
        parts = [None] if entry_ids is None else self._in_lists(list(entry_ids))
        out = {}
        for part in parts:
            if part is None:
                tx.execute(sql, [artifact_id])
            else:
                tx.execute(sql + f" AND entry_id IN ({_marks(len(part))})", [artifact_id, *part])
            out.update((entry_id, stored_vector_values(value)) for entry_id, value in tx.fetchall())
        return out

    def _returned_values(self, vectors):
        return vector_values.six_digits(vectors)  # the VECTOR column reads back as 6-digit text

    def _read_vector_sum(self, tx, artifact_id):
        tx.execute("SELECT vector_count, vector_sum FROM memory_vector_sums WHERE memory_artifact_id = %s", (artifact_id,))
        row = tx.fetchone()
        dimension = self.embedding_profile.dimension
        return (0, [0] * dimension) if row is None else (int(row[0]), centroid.unpack(row[1], dimension))

    def _write_vector_sum(self, tx, artifact_id, count, sums):
        tx.execute(
            "INSERT INTO memory_vector_sums (memory_artifact_id, vector_count, vector_sum) VALUES (%s, %s, %s) "
            "ON DUPLICATE KEY UPDATE vector_count = VALUES(vector_count), vector_sum = VALUES(vector_sum)",
            (artifact_id, count, centroid.pack(sums)),
        )

    # ------------------------------------------------------------- search and vectors: search.py
