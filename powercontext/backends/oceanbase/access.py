"""What the OceanBase account may do (issue 43, item 7).

An application account on an existing database is often not allowed to CREATE
DATABASE or tables (a DML-only account), or to write at all (a SELECT-only one).
``pc.open`` used to run ``CREATE DATABASE IF NOT EXISTS`` and every table's
``CREATE TABLE IF NOT EXISTS`` regardless, and the server refuses both without the
CREATE privilege even when the object exists (measured on seekdb: 1044, 1142). So:

* the database is created only when ``information_schema`` does not list it;
* only missing tables are created;
* an account without INSERT, UPDATE and DELETE on the database is read-only: the
  backend says so (``read_only``), its write transactions raise ReadOnlyError before
  any statement, and open skips the set-up writes (the full-text probe) a reader
  cannot do;
* a privilege the server refuses anyway surfaces as AccessDeniedError (ReadOnlyError
  on a read-only service), never as a raw ``pymysql`` error.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from ...errors import AccessDeniedError, ReadOnlyError
from ..driver import database_identifier
from .maintenance import ACCESS_DENIED

#: Privileges a writer needs on the database (1045, a wrong password, is not one).
WRITE_PRIVILEGES = frozenset({"INSERT", "UPDATE", "DELETE"})
REFUSED = ACCESS_DENIED - {1045}
_TABLE = re.compile(r"CREATE TABLE IF NOT EXISTS (\w+)")


def refused(exc: BaseException) -> bool:
    """Did the server refuse a statement for lack of a privilege?"""
    args = getattr(exc, "args", ())
    return bool(args) and args[0] in REFUSED


class AccountAccess:
    #: True when the account may only read: every write is refused with ReadOnlyError.
    read_only = False

    def _create_database(self) -> None:
        """CREATE DATABASE only when it is missing: an existing database needs no
        CREATE privilege."""
        name = self._params["database"]
        statement = f"CREATE DATABASE IF NOT EXISTS {database_identifier(name)}"
        con = self._raw_connect(None)
        try:
            with con.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (name,))
                if cur.fetchone()[0]:
                    return
                try:
                    cur.execute(statement)
                except self._pymysql.err.MySQLError as exc:
                    if refused(exc):
                        raise AccessDeniedError(
                            f"database {name!r} does not exist and the account {self._params['user']!r} may not "
                            f"create it ({exc.args[-1]}): create it with an account that may, or name an existing "
                            "database in the URL") from None
                    raise
        finally:
            con.close()

    def _account_may_write(self, cur: Any) -> bool:
        """INSERT, UPDATE and DELETE granted globally, on the database, or on its tables
        (``information_schema``; an account sees its own grants). Unknown counts as
        writable: the server still refuses what it must (AccessDeniedError)."""
        database = self._params["database"]
        try:
            cur.execute("SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES")
            granted = {str(r[0]).upper() for r in cur.fetchall()}
            cur.execute("SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE TABLE_SCHEMA = %s",
                        (database,))
            granted |= {str(r[0]).upper() for r in cur.fetchall()}
            cur.execute("SELECT PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES WHERE TABLE_SCHEMA = %s",
                        (database,))
            granted |= {str(r[0]).upper() for r in cur.fetchall()}
        except self._pymysql.err.MySQLError:
            return True
        return "ALL PRIVILEGES" in granted or WRITE_PRIVILEGES <= granted

    def _missing_tables(self, cur: Any, ddls: Iterable[str]) -> list[str]:
        """The statements of ``ddls`` whose table does not exist yet."""
        cur.execute("SHOW TABLES")
        existing = {str(r[0]).lower() for r in cur.fetchall()}
        missing = [ddl for ddl in ddls if _TABLE.search(ddl).group(1).lower() not in existing]
        if missing and self.read_only:
            raise ReadOnlyError(
                f"database {self._params['database']!r} is not set up for PowerContext (it lacks "
                f"{', '.join(_TABLE.search(d).group(1) for d in missing)}) and the account "
                f"{self._params['user']!r} may only read: open it once with an account that may create tables")
        return missing

    def _refuse_write(self) -> None:
        if self.read_only:
            raise ReadOnlyError(
                f"this service is read-only: the account {self._params['user']!r} may only read database "
                f"{self._params['database']!r}. Nothing was written; open it with an account that may write")

    def _refused_error(self, exc: BaseException) -> AccessDeniedError | None:
        """The typed error for a statement refused for lack of a privilege."""
        if not refused(exc):
            return None
        if self.read_only:
            return ReadOnlyError(
                f"this service is read-only: the account {self._params['user']!r} may only read database "
                f"{self._params['database']!r} ({exc.args[-1]}). Nothing was written")
        return AccessDeniedError(
            f"the account {self._params['user']!r} lacks a privilege this call needs on database "
            f"{self._params['database']!r} ({exc.args[-1]}). The transaction was rolled back: nothing was written")
