"""OceanBase URLs: how a server's URL is spelt, pointed at a database, read from the
environment, and how a test or harness run drops the database it made. Split from
``seekdb`` (which re-exports every name); none of this starts a server."""

from __future__ import annotations

import os

#: Set this to an ``oceanbase://user@host:port/`` URL to use an existing server
#: instead of starting one (CI with a shared server, a developer's long-lived server).
ENV_URL = "POWERCONTEXT_OCEANBASE_URL"
#: Seconds a DROP may take before the stall margin starts (the adapter's sessions' own
#: ob_query_timeout): it waits this plus the margin at most.
DROP_TIMEOUT_S = 60.0


def oceanbase_url(host: str, port: int, database: str = "", password: str = "") -> str:
    """``oceanbase://root[:PASSWORD]@HOST:PORT/DATABASE`` (database may be empty)."""
    from urllib.parse import quote

    secret = f":{quote(password, safe='')}" if password else ""
    return f"oceanbase://root{secret}@{host}:{port}/{database}"


def database_url(server_url: str, database: str) -> str:
    """``server_url`` (any path) pointed at ``database``."""
    from urllib.parse import urlparse, urlunparse

    return urlunparse(urlparse(server_url)._replace(path="/" + database))


def drop_database(server_url: str, database: str) -> None:
    """``DROP DATABASE IF EXISTS`` on the server of ``server_url`` (tests and the
    harness create one database per run and clean up after themselves)."""
    from urllib.parse import unquote, urlparse

    from ...errors import ServerStalledError
    from ..driver import connect, database_identifier, is_stalled, stall_bound_s
    from .store import stalled_message

    statement = f"DROP DATABASE IF EXISTS {database_identifier(database)}"  # validated before connecting
    p = urlparse(server_url)
    # bounded: a DROP on a store wedged by killed runs waited forever (issue 45)
    bound = stall_bound_s(DROP_TIMEOUT_S)
    con = connect(host=p.hostname, port=p.port or 2881, user=unquote(p.username or "root"),
                  password=unquote(p.password or ""), autocommit=True, connect_timeout=5,
                  read_timeout=bound, write_timeout=bound)
    try:
        with con.cursor() as cur:
            cur.execute(statement)
    except Exception as exc:
        if is_stalled(exc):
            raise ServerStalledError(*stalled_message(p.hostname, p.port or 2881, bound)) from None
        raise
    finally:
        con.close()


def oceanbase_url_from_env() -> str | None:
    """The URL in ``POWERCONTEXT_OCEANBASE_URL``, or None when it is unset or empty."""
    value = os.environ.get(ENV_URL, "").strip()
    return value or None
