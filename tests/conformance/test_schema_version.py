"""A database records its layout version (powercontext_schema.schema_version), and an
open reads it: a database a newer library wrote is refused (SchemaTooNewError) before
anything is written to it — an older library's writes would not keep a newer layout's
structures in step (SQLite's external-content FTS5 index, say) and would corrupt them."""

from __future__ import annotations

import os

import pytest

import powercontext as pc
from powercontext.backends.oceanbase.backend import LAYOUT_VERSION as OCEANBASE_LAYOUT
from powercontext.backends.rules import check_schema_version
from powercontext.backends.sqlite.backend import LAYOUT_VERSION as SQLITE_LAYOUT

from ..support import sql

E = pc.MemoryEntryInput
NEWEST = {"sqlite": SQLITE_LAYOUT, "oceanbase": OCEANBASE_LAYOUT}


def _file_state(path: str) -> tuple[bytes, int, list[str]]:
    """The file's bytes, its mtime (ns) and its companions (-wal, -shm, -journal)."""
    with open(path, "rb") as f:
        data = f.read()
    folder, name = os.path.split(path)
    return data, os.stat(path).st_mtime_ns, sorted(n for n in os.listdir(folder) if n.startswith(name + "-"))


@pytest.mark.fresh_database  # its schema record is rewritten: no pooled database for others
async def test_a_database_of_a_newer_layout_is_refused_and_left_unwritten(open_service, backend_name):
    svc = await open_service()
    head = await svc.remember(None, entries=(E("fact", "the build cache lives in /var/cache/ci"),))
    newer = str(NEWEST[backend_name] + 1)
    await sql(svc, "UPDATE powercontext_schema SET value = ? WHERE `key` = 'schema_version'", (newer,))
    # a record an open of a current database would write back (its c̄ backfill): a
    # refused open must not
    await sql(svc, "DELETE FROM powercontext_schema WHERE `key` = 'vector_sums'")
    schema_before = sorted(await sql(svc, "SELECT `key`, value FROM powercontext_schema"))
    target = svc.backend.path if backend_name == "sqlite" else svc.backend.url
    await svc.close()
    before = _file_state(target) if backend_name == "sqlite" else None

    with pytest.raises(pc.SchemaTooNewError) as refused:
        await pc.open(target)
    message = str(refused.value)
    assert "\n" not in message and "upgrade powercontext" in message
    assert f"schema version '{newer}'" in message and f"up to {NEWEST[backend_name]}" in message
    where = target if backend_name == "sqlite" else target.rsplit("/", 1)[1].split("?")[0]
    assert repr(where) in message  # names the file (or the database), never the URL's password
    assert isinstance(refused.value, pc.BackendUnavailableError)
    assert (refused.value.version, refused.value.newest) == (newer, NEWEST[backend_name])

    if backend_name == "sqlite":
        assert _file_state(target) == before
    assert sorted(_driver(target, backend_name, "SELECT `key`, value FROM powercontext_schema")) == schema_before
    # the record is the only difference: put the current version back and it opens
    _driver(target, backend_name, "UPDATE powercontext_schema SET value = ? WHERE `key` = 'schema_version'",
            (str(NEWEST[backend_name]),))
    async with await pc.open(target) as again:
        assert [e.text for e in await again.entries(head)] == ["the build cache lives in /var/cache/ci"]


def _driver(target: str, backend_name: str, statement: str, params: tuple = ()) -> list[tuple]:
    """One statement through the database's own driver: the library refuses to open it."""
    if backend_name == "sqlite":
        import apsw

        con = apsw.Connection(target)
        rows = [tuple(r) for r in con.execute(statement, params)]
        con.close()
        return rows
    import pymysql

    from powercontext.backends.oceanbase.backend import parse_url

    p = parse_url(target)
    con = pymysql.connect(host=p["host"], port=p["port"], user=p["user"], password=p["password"],
                          database=p["database"], autocommit=True)
    with con.cursor() as cur:
        cur.execute(statement.replace("?", "%s"), params)
        rows = [tuple(r) for r in cur.fetchall()]
    con.close()
    return rows


async def test_a_new_database_records_its_layout_version(open_service, backend_name):
    svc = await open_service()
    assert await sql(svc, "SELECT value FROM powercontext_schema WHERE `key` = 'schema_version'") == \
        [(str(NEWEST[backend_name]),)]


@pytest.mark.parametrize("recorded", ["3", "10", "2-beta", "", "٣"])
def test_a_version_this_library_cannot_read_is_refused(recorded):
    with pytest.raises(pc.SchemaTooNewError, match="upgrade powercontext"):
        check_schema_version(recorded, "SQLite database 'x.db'", 2)


@pytest.mark.parametrize("recorded", [None, "1", "2"])
def test_a_version_this_library_reads_passes(recorded):
    check_schema_version(recorded, "SQLite database 'x.db'", 2)
