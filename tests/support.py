"""Raw database access for tests that must look underneath the public API (row
counts, tampering). Production code never does this."""

from __future__ import annotations

from typing import Any

TABLES = (
    "sources",
    "artifact_revisions",
    "artifact_manifest_chunks",
    "artifact_heads",
    "memory_entry_versions",
    "memory_entry_heads",
)


async def sql(svc, statement: str, params: tuple = ()) -> list[tuple[Any, ...]]:
    """Run one statement in its own transaction on the backend's worker thread."""
    backend = svc.backend

    def run():
        with backend._transaction(write=True) as tx:
            if backend.name == "sqlite":
                return [tuple(r) for r in tx.execute(statement, params)]
            tx.execute(statement.replace("?", "%s"), params)
            return [tuple(r) for r in (tx.fetchall() or ())]

    return await backend._run(run)


async def counts(svc) -> dict[str, int]:
    out = {}
    for table in TABLES:
        out[table] = (await sql(svc, f"SELECT COUNT(*) FROM {table}"))[0][0]
    if svc.backend.name == "sqlite":
        # the rows the index holds (its docsize rows): the FTS table itself reads the head rows
        out["fts"] = (await sql(svc, "SELECT COUNT(*) FROM memory_entry_search_fts_docsize"))[0][0]
    return out


class RecordingCursor:
    """The transaction's real cursor, recording (statement, bound values, rows) of each
    call; ``after(cursor, statement)`` runs after each statement."""

    def __init__(self, cursor, log, after=None):
        object.__setattr__(self, "_cursor", cursor)
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_after", after)

    def execute(self, statement, params=()):
        self._log.append((statement, tuple(params or ()), 1))
        result = self._cursor.execute(statement, params)
        if self._after is not None:
            self._after(self._cursor, statement)
        return result

    def executemany(self, statement, rows):
        rows = list(rows)
        self._log.append((statement, (), len(rows)))
        return self._cursor.executemany(statement, rows)

    def __getattr__(self, name):
        return getattr(self._cursor, name)

    def __setattr__(self, name, value):  # pymysql's max_stmt_length
        setattr(self._cursor, name, value)


def count_head_id_reads(backend) -> list[int]:
    """Counts, in a one-item list, the statements a commit issues to ask which of its
    head rows are there already (wraps the backend's ``_rows``)."""
    asked, rows = [0], backend._rows

    def counted(tx, statement, params=()):
        asked[0] += "SELECT entry_id, projection_id FROM memory_entry_heads" in statement
        return rows(tx, statement, params)
    backend._rows = counted
    return asked
