"""The OceanBase profile of RuntimeStorage: the journal, bindings and cursors are tables
in the same OceanBase database as the Memory tables (MySQL mode, pymysql).

The storage keeps one connection on its worker thread, pings it (reconnecting) before
each transaction so that a restarted server is picked up again, and uses binary
collations for every identity column: scopes are opaque and ``"A"`` is not ``"a"``.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from ..backends.driver import connect, database_identifier, pyformat
from ..backends.oceanbase.backend import parse_url
from ..errors import BackendUnavailableError
from .sql_storage import SQLRuntimeStorage

LOCK_TIMEOUT_US = 10_000_000
ER_DUP_ENTRY = 1062
TEXT = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"

_DDL = {
    "runtime_schema": f"""CREATE TABLE IF NOT EXISTS runtime_schema (
        name VARCHAR(64) {TEXT} NOT NULL PRIMARY KEY,
        value VARCHAR(256) {TEXT} NOT NULL)""",
    "runtime_memory_bindings": f"""CREATE TABLE IF NOT EXISTS runtime_memory_bindings (
        scope VARCHAR(256) {TEXT} NOT NULL PRIMARY KEY,
        memory_artifact_id VARCHAR(128) {TEXT} NOT NULL,
        created_at VARCHAR(40) {TEXT} NOT NULL,
        UNIQUE KEY uk_runtime_memory_bindings_memory (memory_artifact_id))""",
    "runtime_source_journal": f"""CREATE TABLE IF NOT EXISTS runtime_source_journal (
        scope VARCHAR(256) {TEXT} NOT NULL,
        sequence BIGINT NOT NULL,
        source_type VARCHAR(64) {TEXT} NOT NULL,
        source_id VARCHAR(128) {TEXT} NOT NULL,
        memory_source_name VARCHAR(128) {TEXT} NOT NULL,
        payload LONGTEXT {TEXT} NOT NULL,
        payload_hash CHAR(64) {TEXT} NOT NULL,
        captured_at VARCHAR(40) {TEXT} NOT NULL,
        PRIMARY KEY (scope, sequence),
        UNIQUE KEY uk_runtime_source_journal_identity (scope, source_type, source_id),
        KEY idx_runtime_source_journal_memory_name (scope, memory_source_name))""",
    "runtime_trigger_cursors": f"""CREATE TABLE IF NOT EXISTS runtime_trigger_cursors (
        scope VARCHAR(256) {TEXT} NOT NULL,
        trigger_name VARCHAR(64) {TEXT} NOT NULL,
        sequence BIGINT NOT NULL,
        updated_at VARCHAR(40) {TEXT} NOT NULL,
        PRIMARY KEY (scope, trigger_name))""",
    "runtime_source_windows": f"""CREATE TABLE IF NOT EXISTS runtime_source_windows (
        window_id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
        scope VARCHAR(256) {TEXT} NOT NULL,
        trigger_name VARCHAR(64) {TEXT} NOT NULL,
        after_sequence BIGINT NOT NULL,
        through_sequence BIGINT NOT NULL,
        outcome VARCHAR(32) {TEXT} NOT NULL,
        memory_artifact_id VARCHAR(128) {TEXT},
        revision BIGINT,
        detail TEXT {TEXT},
        started_at VARCHAR(40) {TEXT} NOT NULL,
        finished_at VARCHAR(40) {TEXT} NOT NULL,
        KEY idx_runtime_source_windows_scope (scope, trigger_name, window_id))""",
}


def oceanbase_database_key(url: str) -> tuple[str, dict[str, Any]]:
    """(``oceanbase://HOST:PORT/DATABASE``, connection parameters). The key names the
    database without credentials: it is what the scheduler job stores."""
    params = parse_url(url)
    return f"oceanbase://{params['host'].lower()}:{params['port']}/{params['database']}", params


class OceanBaseRuntimeStorage(SQLRuntimeStorage):
    profile = "oceanbase"

    def __init__(self, url: str) -> None:
        key, self._params = oceanbase_database_key(url)
        super().__init__(key=key, location=key)
        self._con: Any = None

    @classmethod
    async def open(cls, url: str) -> "OceanBaseRuntimeStorage":
        import asyncio

        storage = cls(url)
        await asyncio.get_running_loop().run_in_executor(None, storage.start)
        return storage

    def _driver_errors(self):
        import pymysql

        return (pymysql.err.MySQLError,)

    def _connection(self):
        import pymysql

        if self._con is not None:
            try:
                self._con.ping(reconnect=False)
            except pymysql.err.Error:  # the server restarted or dropped us: start over
                self._close_sync()
        if self._con is None:
            p = self._params
            try:
                self._con = connect(  # multi-statements off, like every library connection
                    host=p["host"], port=p["port"], user=p["user"], password=p["password"], database=p["database"],
                    autocommit=True, charset="utf8mb4", connect_timeout=10,
                )
            except pymysql.err.MySQLError as exc:
                raise BackendUnavailableError(f"cannot reach OceanBase at {self.location}: {exc.args[-1]}") from None
            with self._con.cursor() as cur:
                cur.execute(f"SET ob_trx_lock_timeout = {LOCK_TIMEOUT_US}")
        return self._con

    def _create_database(self) -> None:
        """Like the Memory backend, create the database if it does not exist yet (the
        name was validated by ``parse_url``), so opening order does not matter."""
        import pymysql

        p = self._params
        try:
            con = connect(host=p["host"], port=p["port"], user=p["user"], password=p["password"],
                          autocommit=True, charset="utf8mb4", connect_timeout=10)
        except pymysql.err.MySQLError as exc:
            raise BackendUnavailableError(f"cannot reach OceanBase at {self.location}: {exc.args[-1]}") from None
        try:
            with con.cursor() as cur:
                cur.execute(f"CREATE DATABASE IF NOT EXISTS {database_identifier(p['database'])}")
        finally:
            con.close()

    def _connect_sync(self) -> None:
        try:
            con = self._connection()
        except BackendUnavailableError:
            self._create_database()
            con = self._connection()
        with con.cursor() as cur:
            # DDL is slow on OceanBase even when it changes nothing: create only what is
            # missing (the probe then checks every column of every table).
            cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE()")
            existing = {row[0] for row in cur.fetchall()}
            for name, ddl in _DDL.items():
                if name not in existing:
                    cur.execute(ddl)  # auto-committed in MySQL mode
        with self._transaction(write=True) as tx:
            self._check_schema_version(tx)

    @contextlib.contextmanager
    def _transaction(self, write: bool) -> Iterator[Any]:
        con = self._connection()
        con.begin()
        cur = con.cursor()
        try:
            yield cur
        except BaseException:
            with contextlib.suppress(Exception):
                con.rollback()
            raise
        else:
            con.commit()
        finally:
            cur.close()

    def _rows(self, tx, sql, params=()):
        tx.execute(pyformat(sql), tuple(params))
        return [tuple(r) for r in tx.fetchall()]

    def _count(self, tx, sql, params=()):
        return tx.execute(pyformat(sql), tuple(params))

    def _is_unique_violation(self, exc: BaseException) -> bool:
        import pymysql

        return isinstance(exc, pymysql.err.IntegrityError) and bool(exc.args) and exc.args[0] == ER_DUP_ENTRY

    def _close_sync(self) -> None:
        if self._con is not None:
            with contextlib.suppress(Exception):
                self._con.close()
            self._con = None
