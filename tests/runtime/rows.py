"""Raw access to the Runtime tables for tests that must look underneath the API
(tampering, row counts). Production code never does this."""

from __future__ import annotations

from typing import Any


async def runtime_sql(runtime, statement: str, params: tuple = ()) -> list[tuple[Any, ...]]:
    """One statement on the Runtime storage's own connection and worker thread."""
    storage = runtime.storage

    def run():
        with storage._transaction(write=True) as tx:
            return storage._rows(tx, statement, params) if statement.lstrip().upper().startswith(("SELECT", "SHOW")) \
                else [(storage._count(tx, statement, params),)]

    return await storage._run(run)
