"""``pc.open`` on OceanBase with an application account (issue 43, item 7): real accounts
on the test server, one allowed only SELECT on an existing database, one only DML.
Neither may CREATE DATABASE or tables; both used to get a raw ``pymysql`` 1044 from
open. Now the database is created only when missing, a SELECT-only account gets a
read-only service whose writes raise ReadOnlyError (nothing written), and a DML-only
account reads and writes. SQLite has no accounts: OceanBase only."""

from __future__ import annotations

import uuid
from urllib.parse import quote, urlparse

import pymysql
import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url, drop_database


def _root(url):
    p = urlparse(url)
    return pymysql.connect(host=p.hostname, port=p.port, user=p.username or "root", password=p.password or "",
                           autocommit=True)


def _account_url(url, user, password, database):
    p = urlparse(url)
    return f"oceanbase://{user}:{quote(password, safe='')}@{p.hostname}:{p.port}/{database}"


@pytest.fixture
async def setup(oceanbase_url):
    """A database with one Memory (written as root), and two accounts on it."""
    tag = uuid.uuid4().hex[:10]
    database = f"pc_acct_{tag}"
    svc = await pc.open(database_url(oceanbase_url, database))
    src = await svc.sources.persist(pc.ContentSource(name="src_notes", content="notes"))
    rev = await svc.remember(None, sources=(src,), entries=(
        pc.MemoryEntryInput("fact", "the build cache lives in ~/.cache/atlas", sources=(src,)),))
    await svc.close()
    accounts = {"reader": ("SELECT", f"Rd{tag}pw"), "writer": ("SELECT, INSERT, UPDATE, DELETE", f"Wr{tag}pw")}
    con = _root(oceanbase_url)
    with con.cursor() as cur:
        for role, (grants, password) in accounts.items():
            cur.execute(f"CREATE USER {role}_{tag} IDENTIFIED BY %s", (password,))
            cur.execute(f"GRANT {grants} ON {database}.* TO {role}_{tag}")
    urls = {role: _account_url(oceanbase_url, f"{role}_{tag}", pw, database) for role, (_, pw) in accounts.items()}
    yield dict(database=database, rev=rev, src=src, urls=urls, tag=tag, passwords={r: a[1] for r, a in accounts.items()})
    with con.cursor() as cur:
        for role in accounts:
            cur.execute(f"DROP USER IF EXISTS {role}_{tag}")
    con.close()
    drop_database(oceanbase_url, database)


async def test_a_select_only_account_gets_a_read_only_service(setup, oceanbase_url):
    rev, src = setup["rev"], setup["src"]
    svc = await pc.open(setup["urls"]["reader"])
    try:
        assert svc.read_only
        result = await svc.search("build cache", memories=(rev.ref,), limit=8)
        assert [h.entry_id for h in result.hits] == [rev.content.manifest.entries[0].entry_id]
        assert (await svc.head(rev.artifact_id)).ref == rev.ref
        active = await svc.entries(rev.ref)
        writes = {
            "remember": svc.remember(rev.ref, entries=(pc.MemoryEntryInput("fact", "a second fact"),)),
            "persist": svc.sources.persist(pc.ContentSource(name="src_more", content="more")),
            "forget": svc.forget(rev.ref, active),
            "new memory": svc.remember(None, entries=(pc.MemoryEntryInput("fact", "another memory"),)),
        }
        for what, call in writes.items():
            with pytest.raises(pc.ReadOnlyError) as info:
                await call
            message = str(info.value)
            assert "read-only" in message and len(message.splitlines()) == 1, what
            assert setup["passwords"]["reader"] not in message
            assert isinstance(info.value, pc.PowerContextError)
    finally:
        await svc.close()
    root = await pc.open(database_url(oceanbase_url, setup["database"]))
    try:  # nothing was written
        assert (await root.head(rev.artifact_id)).ref == rev.ref
        assert (await root.memories()) == (rev.ref,)
        with pytest.raises(pc.SourceNotFoundError):
            await root.sources.get("src_more")
        assert not root.read_only
    finally:
        await root.close()


async def test_a_dml_only_account_opens_an_existing_database_and_writes(setup):
    rev = setup["rev"]
    svc = await pc.open(setup["urls"]["writer"])
    try:
        assert not svc.read_only
        new = await svc.remember(rev.ref, entries=(pc.MemoryEntryInput("fact", "the cache is pruned weekly"),))
        assert new.ref.revision == rev.ref.revision + 1
        result = await svc.search("cache pruned weekly", memories=(new.ref,), limit=8)
        assert len(result.hits) >= 1
    finally:
        await svc.close()


async def test_an_account_that_may_not_create_the_missing_database_gets_a_typed_error(setup, oceanbase_url):
    missing = f"pc_missing_{setup['tag']}"
    url = _account_url(oceanbase_url, f"writer_{setup['tag']}", setup["passwords"]["writer"], missing)
    with pytest.raises(pc.AccessDeniedError) as info:
        await pc.open(url)
    message = str(info.value)
    assert missing in message and "may not create it" in message and len(message.splitlines()) == 1
    assert setup["passwords"]["writer"] not in message
    con = _root(oceanbase_url)
    with con.cursor() as cur:
        cur.execute("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (missing,))
        assert cur.fetchone()[0] == 0
    con.close()


async def test_a_select_only_account_on_an_empty_database_is_told_to_set_it_up(setup, oceanbase_url):
    empty = f"pc_empty_{setup['tag']}"
    con = _root(oceanbase_url)
    with con.cursor() as cur:
        cur.execute(f"CREATE DATABASE {empty}")
        cur.execute(f"GRANT SELECT ON {empty}.* TO reader_{setup['tag']}")
    try:
        url = _account_url(oceanbase_url, f"reader_{setup['tag']}", setup["passwords"]["reader"], empty)
        with pytest.raises(pc.ReadOnlyError) as info:
            await pc.open(url)
        assert "not set up" in str(info.value) and len(str(info.value).splitlines()) == 1
    finally:
        with con.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {empty}")
        con.close()
