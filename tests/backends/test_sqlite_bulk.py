"""A large commit on SQLite runs with a larger page cache (backends/sqlite/bulk.py): the
file it writes is the one the default cache writes, row for row, it verifies, and the
connection's own cache setting is back afterwards — after a failed commit too."""

from __future__ import annotations

import apsw
import pytest

import powercontext as pc
from powercontext.backends.sqlite import bulk
from powercontext.canonical import SequentialIds

from ..support import sql

E = pc.MemoryEntryInput
TEXTS = ["the build cache lives in /var/cache/ci and is wiped nightly",
         "deploys run on fridays only after the freeze is lifted",
         "部署前先运行 make check，它会检查 migrations 目录",
         "use ruff for linting; black is not used any more",
         "Release builds are signed with the team's hardware key."]


async def _every_row(svc) -> dict[str, list[tuple]]:
    tables = [name for (name,) in await sql(
        svc, "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' "
             "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
    return {name: sorted(await sql(svc, f'SELECT * FROM "{name}"'), key=repr) for name in tables}


async def _load(path, minilm, threshold, monkeypatch):
    monkeypatch.setattr(bulk, "LARGE_COMMIT_VERSIONS", threshold)
    svc = await pc.open(str(path), embedding=minilm, ids=SequentialIds())
    default = (await sql(svc, "PRAGMA cache_size"))[0][0]
    rev = await svc.remember(None, entries=tuple(E("fact", t) for t in TEXTS))
    rev = await svc.remember(rev, entries=(E("fact", "one more entry, a small commit after the large one"),))
    assert (await sql(svc, "PRAGMA cache_size"))[0][0] == default  # the connection's own setting again
    assert (await svc.verify(rev)).ok
    rows = await _every_row(svc)
    hits = [h.entry_id for h in await svc.search("hardware key", memories=(rev,), mode="hybrid", limit=3)]
    await svc.close()
    return rows, hits


async def test_a_large_commit_writes_the_rows_the_default_cache_writes(tmp_path, minilm, monkeypatch):
    with_cache = await _load(tmp_path / "large.db", minilm, 2, monkeypatch)  # the first commit is "large"
    without = await _load(tmp_path / "default.db", minilm, 10**9, monkeypatch)
    assert with_cache == without
    assert with_cache[0]["memory_entry_versions"] and with_cache[1]


def test_the_cache_setting_is_put_back_on_success_and_on_failure(tmp_path):
    con = apsw.Connection(str(tmp_path / "c.db"))
    size = lambda: con.cursor().execute("PRAGMA cache_size").fetchone()[0]  # noqa: E731
    default = size()
    with bulk.page_cache(con, 65536):
        assert size() == -65536
    assert size() == default
    with pytest.raises(RuntimeError), bulk.page_cache(con, 65536):
        assert size() == -65536
        raise RuntimeError("a commit that fails")
    assert size() == default
    con.cursor().execute("PRAGMA cache_size = -131072")  # already larger: left as it is
    with bulk.page_cache(con, 65536):
        assert size() == -131072
    assert size() == -131072
