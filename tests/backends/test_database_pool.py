"""The test suite's pool of OceanBase databases (tests/database_pool.py): a reused
database must be as empty as a fresh one, and a reset that leaves a row must fail
loudly instead of handing the row to the next test. Real seekdb server, real schema."""

from __future__ import annotations

import pytest

import powercontext as pc
from powercontext.backends.seekdb.urls import database_url
from powercontext.canonical import SequentialIds
from tests.database_pool import DatabasePool, LeakedRowsError

TEXTS = ("The build uses uv and pytest", "Releases are tagged by CI", "Migrations run with alembic")


@pytest.fixture
def pool(oceanbase_url):
    """A pool of this test's own: tampering with it leaves the session's pool alone."""
    pool = DatabasePool(oceanbase_url)
    yield pool
    pool.close()


async def _write(pool, name):
    """Entries, a search (a search-log row, in its lazily created table) and a source."""
    svc = await pc.open(database_url(pool.server_url, name), ids=SequentialIds(), search_log=True)
    try:
        rev = await svc.remember(None, entries=tuple(pc.MemoryEntryInput("fact", t) for t in TEXTS), mode="append")
        await svc.search("how is the build run with uv", memories=(rev,), limit=3)
        assert len(await svc.search_log()) == 1
        assert len(await svc.entries(rev)) == 3
    finally:
        await svc.close()


def _databases(pool) -> set[str]:
    con = pool._connect(None)
    try:
        with con.cursor() as cur:
            cur.execute("SHOW DATABASES")
            return {row[0] for row in cur.fetchall()}
    finally:
        con.close()


async def test_a_released_database_comes_back_empty_with_a_fresh_schema(pool):
    name, key = await pool.take()
    fresh = pool.shape(name)
    await _write(pool, name)
    assert pool.shape(name).leaked  # rows, so the emptiness below means something
    pool.release(name, key)

    again, again_key = await pool.take(analyzer="v2")  # the default analyzer: the same key
    assert (again, again_key, pool.created, pool.reused) == (name, key, 1, 1)
    assert pool.shape(again) == fresh and not fresh.leaked
    svc = await pc.open(database_url(pool.server_url, again), search_log=True)
    try:
        assert await svc.memories() == ()
        assert await svc.search_log() == []
    finally:
        await svc.close()
    pool.release(again, again_key)


async def test_a_reset_that_leaves_a_row_is_detected_and_the_database_dropped(pool, monkeypatch):
    name, key = await pool.take()
    await _write(pool, name)
    reset = pool.reset

    def tampered(database, key):  # forgets one table, as a reset missing a new table would
        reset(database, key)
        con = pool._connect(database)
        try:
            with con.cursor() as cur:
                cur.execute("INSERT INTO sources (name, content_hash, payload) VALUES ('left', REPEAT('0', 64), '{}')")
        finally:
            con.close()

    monkeypatch.setattr(pool, "reset", tampered)
    with pytest.raises(LeakedRowsError, match=r"sources.: 1"):
        pool.release(name, key)
    assert name not in _databases(pool) and pool.discarded == 1
    other, _ = await pool.take()
    assert other != name and pool.reused == 0


async def test_a_database_whose_schema_the_test_changed_is_not_reused(pool):
    name, key = await pool.take()
    svc = await pc.open(database_url(pool.server_url, name), ids=SequentialIds())
    try:
        await svc.remember(None, entries=(pc.MemoryEntryInput("fact", TEXTS[0]),), mode="append")
        await svc.rebuild_projections(analyzer="v1")  # records another analyzer
    finally:
        await svc.close()
    pool.release(name, key)  # no error: a changed schema is the test's right, not a leak
    assert name not in _databases(pool) and pool.discarded == 1


async def test_options_that_decide_no_schema_get_a_fresh_database(pool, tmp_path):
    name, key = await pool.take(embedding=str(tmp_path / "model"))
    assert key is None and name not in _databases(pool)
    name, key = await pool.take(analyzer="v9")  # pc.open must refuse it itself
    assert key is None and pool.created == 0
