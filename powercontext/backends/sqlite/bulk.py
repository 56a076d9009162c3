"""A larger SQLite page cache for the length of a large commit (issue 48, item 2).

A 50k-entry first load writes ~190 MB of pages in one transaction. With SQLite's
default cache (2 MB) most of them are spilled to the WAL before the commit and read
back: sqlite-vec rewrites its ~1.5 MB chunk blob (1,024 vectors of 384 float32) once
per inserted vector, and a 2 MB cache cannot hold that blob beside the B-tree pages
of the same insert. Measured on one 50k load (load average ~7): the FTS5 and vec0
inserts 3.7 → 1.3 CPU s, the whole call 13.4 → 10.0 CPU s with 64 MB; 16 MB gave most
of it. The cache is a connection setting, not a stored byte: a file written either way
is the same database. It is raised only for a commit of many versions and put back
after, so a long-lived process holds no more memory between writes than before
(shrinking the cache frees the pages above the limit).
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

# A commit of at least this many new versions gets the larger cache: below it the
# pages it writes fit the default cache anyway.
LARGE_COMMIT_VERSIONS = 1_000
LARGE_COMMIT_CACHE_KIB = 64 * 1024


@contextlib.contextmanager
def page_cache(con: Any, kib: int) -> Iterator[None]:
    """``PRAGMA cache_size`` of ``con`` at least ``kib`` KiB inside the block, then
    the connection's own setting again (on success and on failure)."""
    cur = con.cursor()
    previous = cur.execute("PRAGMA cache_size").fetchone()[0]
    # a negative cache_size is KiB, a positive one pages: compare in KiB either way
    # (pages taken at 4 KiB, SQLite's default page size, for the comparison only)
    if (-previous if previous < 0 else previous * 4) >= kib:
        yield
        return
    cur.execute(f"PRAGMA cache_size = -{int(kib)}")
    try:
        yield
    finally:
        cur.execute(f"PRAGMA cache_size = {int(previous)}")


class LargeCommitCache:
    """Mixin of SQLiteMemoryBackend, before DatabaseMemoryBackend in its bases: a
    commit of many versions runs with the larger page cache; every other commit, and
    every check and statement of any commit, is the shared ``_commit_sync`` as it is."""

    def _commit_sync(self, plan: Any) -> Any:
        if len(plan.new_versions) < LARGE_COMMIT_VERSIONS:
            return super()._commit_sync(plan)  # type: ignore[misc]
        with page_cache(self._con, LARGE_COMMIT_CACHE_KIB):  # type: ignore[attr-defined]
            return super()._commit_sync(plan)  # type: ignore[misc]
