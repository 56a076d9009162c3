"""The one way this library opens a MySQL-protocol connection, names a database in
DDL, and tells a lost connection from a refused statement (pymysql, OceanBase).

* ``connect`` turns multi-statements OFF on every connection. pymysql does not ask
  for them, but OceanBase executes ``a ; b`` regardless of the client flag; only
  COM_SET_OPTION (MYSQL_OPTION_MULTI_STATEMENTS_OFF) stops it (measured on seekdb
  4.3.5.3: afterwards ``a ; b`` is error 1149).
* ``connect`` builds pymysql's "preferred TLS" context once per process, not once per
  connection: pymysql 1.2 makes one for every connection given no TLS options (try TLS,
  fall back to plain), and loading the system CA bundle into it cost 40-70 ms of CPU per
  connect here, for seekdb, which offers no TLS. The shared context has the same
  settings (no CA given: no verification, as pymysql's own), so behaviour is unchanged.
* ``database_identifier`` validates a database name once, for every DDL path
  (CREATE/DROP DATABASE cannot take bound parameters).

pymysql is imported inside functions: importing powercontext must work without the
``oceanbase`` extra.
"""

from __future__ import annotations

import functools
import re
import struct
from typing import Any

from ..errors import InvalidMemoryRequestError

DATABASE_NAME = re.compile(r"[A-Za-z0-9_]{1,64}")
_MYSQL_OPTION_MULTI_STATEMENTS_OFF = 1

# Client-side codes of a connection that is gone (CR_CONN_HOST_ERROR,
# CR_SERVER_GONE_ERROR, CR_SERVER_LOST, CR_COMMANDS_OUT_OF_SYNC, CR_SERVER_LOST_EXTENDED)
# and server codes a restarting OceanBase answers with (ER_SERVER_SHUTDOWN, ER_CON_COUNT,
# OB_SERVER_IS_INIT / OB_SERVER_IS_STOPPING / OB_NOT_INIT / tenant not in server,
# OB_TIMEOUT at login), and RECOVERING_CODES.
# A restarted server that accepts logins before its transaction service has recovered
# answers BEGIN with 4383 "transaction id is not ready" (seekdb 4.3.5.3, under load).
# Nothing ran, so the call is retried on a new connection like a lost one, after a
# pause (RECOVERY_PAUSE_S) that an immediate retry would not have.
RECOVERING_CODES = {4383}
RECOVERY_PAUSE_S = 1.0
LOST_CODES = {0, 2003, 2006, 2013, 2014, 2055, 1053, 1040, 4013, 4006, 4179, 5150, 4038, 4638, *RECOVERING_CODES}
# OB_TIMEOUT (4012) means "the server is still starting" only while logging in. After
# that it is a statement that ran past ob_query_timeout: the connection is fine and the
# transaction still open (measured on seekdb 4.3.5.3), and running the same work again
# would time out again, so it must not be taken for a lost connection and retried.
OB_TIMEOUT = 4012


def pyformat(sql: str) -> str:
    """A portable statement (``?`` placeholders, as SQLite takes them) in pymysql's
    paramstyle, ``%s``."""
    return sql.replace("?", "%s")


def database_identifier(name: object) -> str:
    """``name`` quoted for DDL, after checking it is letters, digits and _ only."""
    if not isinstance(name, str) or not DATABASE_NAME.fullmatch(name):
        raise InvalidMemoryRequestError(
            f"database name must be 1-64 letters, digits or _, got {name!r:.80}"
        )
    return f"`{name}`"


def connect(*, host: str | None = None, port: int | None = None, user: str = "root", password: str = "",
            database: str | None = None, unix_socket: str | None = None, **kwargs: Any):
    """A pymysql connection with multi-statements switched off."""
    import pymysql
    from pymysql.constants import COMMAND

    kwargs.setdefault("charset", "utf8mb4")
    con = _connection_class()(host=host, port=port or 0, user=user, password=password, database=database,
                          unix_socket=unix_socket, client_flag=0, **kwargs)
    try:
        con._execute_command(COMMAND.COM_SET_OPTION, struct.pack("<H", _MYSQL_OPTION_MULTI_STATEMENTS_OFF))
        con._read_packet()  # OK, or raises the server's error
    except BaseException:
        con.close()
        raise
    return con


@functools.cache
def _connection_class():
    """pymysql's Connection, with the context of an opportunistic TLS attempt (no TLS
    option given) built once and shared; explicit TLS options still get their own."""
    from pymysql.connections import Connection

    class _Connection(Connection):
        preferred_tls = None  # two threads racing to build it build two equal contexts: harmless

        def _create_ssl_ctx(self, sslp):
            if sslp != {}:
                return super()._create_ssl_ctx(sslp)
            if _Connection.preferred_tls is None:
                _Connection.preferred_tls = super()._create_ssl_ctx(sslp)
            return _Connection.preferred_tls

    return _Connection


def is_connection_lost(exc: BaseException, connecting: bool = False) -> bool:
    """True when ``exc`` means the connection (not the statement) failed.
    ``connecting``: ``exc`` was raised while logging in."""
    import pymysql

    if isinstance(exc, (pymysql.err.InterfaceError, ConnectionError, BrokenPipeError)):
        return True
    if isinstance(exc, pymysql.err.OperationalError):
        code = exc.args[0] if exc.args else 0
        return code in LOST_CODES or (connecting and code == OB_TIMEOUT)
    return False


def is_recovering(exc: BaseException) -> bool:
    """True when the server is up but still recovering after a restart."""
    import pymysql

    return isinstance(exc, pymysql.err.OperationalError) and bool(exc.args) and exc.args[0] in RECOVERING_CODES


def stall_bound_s(query_timeout_s: float) -> float:
    """Seconds a client waits for any answer before the server counts as stalled: its
    own statement timeout plus half again (at least 5 s). Without a bound a statement
    on a store wedged by killed runs waited forever (issue 45)."""
    return query_timeout_s + max(5.0, query_timeout_s / 2)


def is_stalled(exc: BaseException) -> bool:
    """True when the client gave up waiting for the server's answer (pymysql's
    read/write timeout: 2013 "... (timed out)"), as opposed to a connection that broke."""
    import pymysql

    return (isinstance(exc, pymysql.err.OperationalError) and len(exc.args) > 1 and exc.args[0] == 2013
            and "timed out" in str(exc.args[1]))


def is_query_timeout(exc: BaseException) -> bool:
    """True when a statement ran past the session's ob_query_timeout."""
    import pymysql

    return isinstance(exc, pymysql.err.OperationalError) and bool(exc.args) and exc.args[0] == OB_TIMEOUT
