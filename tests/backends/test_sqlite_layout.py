"""What a SQLite file stores (issue 48, item 4): the search text once — FTS5 indexes the
head rows' own column (external content) instead of keeping a copy — with the index
exact after every kind of write, and a file of the first layout (FTS5 with its own
copy) opened, migrated and searched like a new one."""

from __future__ import annotations

import apsw
import pytest

import powercontext as pc

from ..support import sql

E = pc.MemoryEntryInput
TEXTS = ["the build cache lives in /var/cache/ci and is wiped nightly",
         "deploys run on fridays only after the freeze is lifted",
         "部署前先运行 make check，它会检查 migrations 目录",
         "use ruff for linting; black is not used any more"]
# The full-text table as the first layout created it: FTS5 kept its own copy of text.
FIRST_LAYOUT_FTS = ("CREATE VIRTUAL TABLE memory_entry_search_fts USING fts5(searchable_text, "
                    "tokenize=\"unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '_'\")")


async def _ids(svc, query, rev):
    res = await svc.search(query, memories=(rev,), limit=8, mode="fts",
                           policy=pc.AdmissionPolicy(fts_min_terms=1, fts_min_coverage=0.0))
    return sorted(h.entry_id for h in res)


async def _index_exact(svc) -> bool:
    try:
        await sql(svc, "INSERT INTO memory_entry_search_fts (memory_entry_search_fts, rank) VALUES ('integrity-check', 1)")
    except apsw.CorruptError:
        return False
    return True


async def _history(svc):
    """Every kind of write that touches head rows: add, revise, forget, reactivate."""
    r1 = await svc.remember(None, entries=tuple(E("fact", t) for t in TEXTS))
    entries = {e.text: e for e in await svc.entries(r1)}
    cache, deploys, lint = entries[TEXTS[0]], entries[TEXTS[1]], entries[TEXTS[3]]
    r2 = await svc.patch(r1, cache.entry_id, "/var/cache/ci and is wiped nightly", "/srv/cache and is kept a week")
    r3 = await svc.forget(r2, entries=(deploys,), reason="user_requested")
    r4 = await svc.forget(r3, entries=(lint,), reason="user_requested")
    r5 = await svc.reactivate(r4, entries=(lint,), reason="user_requested")
    return r5, cache, deploys, lint


async def test_the_search_text_is_stored_once_and_the_index_stays_exact(tmp_path):
    svc = await pc.open(str(tmp_path / "memory.db"))
    head, cache, deploys, lint = await _history(svc)
    (ddl,) = (await sql(svc, "SELECT sql FROM sqlite_schema WHERE name = 'memory_entry_search_fts'"))[0]
    assert "content='memory_entry_heads'" in ddl and "content_rowid='projection_id'" in ddl
    assert await sql(svc, "SELECT name FROM sqlite_schema WHERE name = 'memory_entry_search_fts_content'") == []
    assert await _index_exact(svc)
    assert await _ids(svc, "wiped nightly", head) == []  # the revised text's old words left the index
    assert await _ids(svc, "kept week", head) == [cache.entry_id]
    assert await _ids(svc, "fridays", head) == []  # forgotten
    assert await _ids(svc, "ruff linting", head) == [lint.entry_id]  # reactivated
    await svc.rebuild_projections((head,))
    assert await _index_exact(svc) and (await svc.verify(head)).ok
    await svc.close()


async def test_a_file_of_the_first_layout_is_migrated_when_opened(tmp_path):
    path = str(tmp_path / "memory.db")
    svc = await pc.open(path)
    head, cache, deploys, lint = await _history(svc)
    await svc.close()
    con = apsw.Connection(path)  # the first layout: FTS5 holding its own copy, and no record of the layout
    con.execute("DROP TABLE memory_entry_search_fts")
    con.execute(FIRST_LAYOUT_FTS)
    con.execute("INSERT INTO memory_entry_search_fts (rowid, searchable_text) "
                "SELECT projection_id, searchable_text FROM memory_entry_heads")
    con.execute("DELETE FROM powercontext_schema WHERE key = 'fts_content'")
    con.execute("UPDATE powercontext_schema SET value = '1' WHERE key = 'schema_version'")  # as it recorded
    assert con.execute("SELECT COUNT(*) FROM memory_entry_search_fts_content").fetchone()[0] == 3
    con.close()
    async with await pc.open(path) as reopened:
        (ddl,) = (await sql(reopened, "SELECT sql FROM sqlite_schema WHERE name = 'memory_entry_search_fts'"))[0]
        assert "content='memory_entry_heads'" in ddl
        assert await sql(reopened, "SELECT value FROM powercontext_schema WHERE key = 'fts_content'") == [("external",)]
        # version 2 from now on: a library that reads only 1 refuses the file (test_schema_version.py)
        assert await sql(reopened, "SELECT value FROM powercontext_schema WHERE key = 'schema_version'") == [("2",)]
        assert await _index_exact(reopened) and (await reopened.verify(head)).ok
        assert await _ids(reopened, "kept week", head) == [cache.entry_id]
        assert await _ids(reopened, "u_90e8", head) != []  # the CJK entry, by its analyzer token
        later = await reopened.forget(head, entries=(await reopened.entry(head, cache.entry_id),),
                                      reason="user_requested")
        assert await _ids(reopened, "kept week", later) == []
        assert await _index_exact(reopened) and (await reopened.verify(later)).ok
    async with await pc.open(path) as again:  # migrated once: opening again changes nothing
        assert await _ids(again, "ruff", later) == [lint.entry_id]


async def test_a_file_converted_by_the_release_before_the_version_check_gets_version_2(tmp_path):
    """That release converted the index and wrote ``fts_content`` but left version 1."""
    path = str(tmp_path / "memory.db")
    async with await pc.open(path) as svc:
        head, cache, deploys, lint = await _history(svc)
    con = apsw.Connection(path)
    con.execute("UPDATE powercontext_schema SET value = '1' WHERE key = 'schema_version'")
    con.close()
    async with await pc.open(path) as reopened:
        assert await sql(reopened, "SELECT value FROM powercontext_schema WHERE key = 'schema_version'") == [("2",)]
        assert await _index_exact(reopened) and (await reopened.verify(head)).ok
        assert await _ids(reopened, "kept week", head) == [cache.entry_id]


@pytest.mark.parametrize("table", ["memory_entry_search_fts_docsize"])
async def test_a_head_row_the_index_lacks_is_reindexed_by_a_rebuild(tmp_path, table):
    svc = await pc.open(str(tmp_path / "memory.db"))
    head, cache, deploys, lint = await _history(svc)
    (pid,) = (await sql(svc, "SELECT projection_id FROM memory_entry_heads WHERE entry_id = ?", (lint.entry_id,)))[0]
    # a crash repair that lost the row's index entry: FTS5's own delete, given the text
    await sql(svc, "INSERT INTO memory_entry_search_fts (memory_entry_search_fts, rowid, searchable_text) "
                   "SELECT 'delete', projection_id, searchable_text FROM memory_entry_heads WHERE projection_id = ?",
              (pid,))
    assert await _ids(svc, "ruff linting", head) == []
    assert not (await svc.verify(head)).ok
    await svc.rebuild_projections((head,))
    assert await _ids(svc, "ruff linting", head) == [lint.entry_id]
    assert await _index_exact(svc) and (await svc.verify(head)).ok
    assert (await sql(svc, f"SELECT COUNT(*) FROM {table}"))[0][0] == 3
    await svc.close()
