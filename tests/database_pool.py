"""A per-worker pool of OceanBase test databases (issue 47, item 5).

Why: each OceanBase test used to create a database (``pc_<uuid>`` plus the schema pc.open
writes: 0.5-1.2 s measured on 2 loaded cores) and drop it at teardown (0.3-0.7 s). A used
database emptied by DELETE and checked costs ~0.1-0.2 s. TRUNCATE is no cheaper on
seekdb (0.3-0.5 s for the nine tables: each is DDL there), so the reset deletes.

What keeps a reused database as good as a fresh one:

* Pooled databases are keyed by what pc.open writes into a NEW schema: the embedding
  profile (the heads table's VECTOR column, the recorded profile) and the analyzer.
  Options that change nothing in the schema (ids, search_log, caps) share databases. A
  model named by a string or a folder, or an analyzer the library does not know, is not
  keyed: the test gets a fresh database, dropped after it, as before.
* The reference shape of a key is read from a database the pool created itself: its
  tables with their DDL (AUTO_INCREMENT counters aside), its ``powercontext_schema`` rows,
  and a row count of 0 in every other table.
* At release, tables the reference lacks are dropped (the search log and the runtime's
  tables are created lazily), every other table except ``powercontext_schema`` is emptied,
  and the database is read again. A shape that differs from the reference (the test
  migrated the profile, rebuilt to another analyzer, tampered with DDL) or a reset that
  raised means the database is dropped, never reused. A row still there after the
  DELETEs means the reset itself is broken: the database is dropped and LeakedRowsError
  fails the test that released it.
* The library keeps no cache across backend objects keyed by URL (the revision, version
  and chunk caches belong to one backend, closed before release), so a reused name
  shows no stale state.

Tests that need a database no other test has touched (a subprocess or a SIGKILL that
may outlive the test, a test about creating a database) carry
``@pytest.mark.fresh_database``.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlparse

import powercontext as pc
from powercontext import analyzer as analyzer_module
from powercontext.backends.driver import connect, database_identifier
from powercontext.backends.seekdb.urls import database_url, drop_database
from powercontext.model import EmbeddingProfile

#: The one table whose rows are part of the schema (versions, analyzer, profile); kept.
SCHEMA_TABLE = "powercontext_schema"
_AUTO_INCREMENT = re.compile(r"\s*AUTO_INCREMENT\s*=\s*\d+", re.IGNORECASE)

Key = tuple[str | None, str]


class LeakedRowsError(AssertionError):
    """A database still held rows after the pool's reset: reusing it would hand one
    test's rows to the next."""


@dataclass(frozen=True)
class Shape:
    """What a database holds, as far as reuse is concerned."""

    tables: tuple[tuple[str, str], ...]  # (name, DDL without its AUTO_INCREMENT counter or database)
    schema_rows: tuple[tuple[str, str], ...]
    rows: tuple[tuple[str, int], ...]  # row counts of the other tables

    @property
    def leaked(self) -> dict[str, int]:
        return {table: n for table, n in self.rows if n}


def shape_key(embedding: Any, analyzer: str | None) -> Key | None:
    """The pool key of a pc.open call's options, or None when the call needs a fresh
    database (the schema it writes cannot be told before opening)."""
    if analyzer is not None and analyzer not in analyzer_module.ANALYZER_VERSIONS:
        return None
    profile = None
    if embedding is not None:
        profile = getattr(embedding, "profile", None)
        if not isinstance(profile, EmbeddingProfile):
            return None
        profile = json.dumps(profile.to_canonical(), sort_keys=True)
    return profile, analyzer or analyzer_module.ANALYZER_VERSION


class DatabasePool:
    """Databases on one server, taken by one test at a time (one pool per xdist worker:
    a worker runs its tests one after another)."""

    def __init__(self, server_url: str) -> None:
        self.server_url = server_url
        self._idle: dict[Key, list[str]] = defaultdict(list)
        self._reference: dict[Key, Shape] = {}
        self.created = self.reused = self.discarded = 0

    # ------------------------------------------------------------------ take / release

    async def take(self, embedding: Any = None, analyzer: str | None = None) -> tuple[str, Key | None]:
        """A database name for ``pc.open(url, embedding=…, analyzer=…)``: an idle one of
        the same key, else one created now; with key None, a name nobody has used."""
        key = shape_key(embedding, analyzer)
        name = "pc_" + uuid.uuid4().hex[:16]
        if key is None:
            return name, None
        if self._idle[key]:
            self.reused += 1
            return self._idle[key].pop(), key
        svc = await pc.open(database_url(self.server_url, name), embedding=embedding, analyzer=analyzer)
        await svc.close()
        self.created += 1
        shape = await asyncio.to_thread(self.shape, name)
        reference = self._reference.setdefault(key, shape)
        if shape != reference or shape.leaked:  # pc.open itself would be nondeterministic
            await asyncio.to_thread(drop_database, self.server_url, name)
            raise AssertionError(f"a new database of {key} differs from the first one the pool made")
        return name, key

    def release(self, name: str, key: Key | None) -> None:
        """After the test closed its services: reset and keep ``name``, or drop it."""
        if key is None:
            drop_database(self.server_url, name)
            return
        try:
            self.reset(name, key)
            shape = self.shape(name)
        except Exception:  # a table the test dropped or altered: not worth reusing
            self._discard(name)
            return
        if shape.leaked:
            self._discard(name)
            raise LeakedRowsError(f"database {name} still held rows after its reset: {shape.leaked}")
        if shape != self._reference[key]:  # the test changed the schema (migration, analyzer rebuild)
            self._discard(name)
            return
        self._idle[key].append(name)

    def close(self) -> None:
        """Drop every idle database (the server may outlive the session)."""
        for names in self._idle.values():
            while names:
                drop_database(self.server_url, names.pop())

    def _discard(self, name: str) -> None:
        self.discarded += 1
        drop_database(self.server_url, name)

    # ------------------------------------------------------------------ reset / shape

    def _connect(self, name: str):
        p = urlparse(self.server_url)
        return connect(host=p.hostname, port=p.port or 2881, user=unquote(p.username or "root"),
                       password=unquote(p.password or ""), database=name, autocommit=True,
                       connect_timeout=5, read_timeout=120, write_timeout=120)

    def reset(self, name: str, key: Key) -> None:
        """Drop the tables a fresh database lacks; empty the rest but powercontext_schema.
        Foreign-key checks are off for the session so the order does not matter (the
        versions table references itself)."""
        reference = {table for table, _ in self._reference[key].tables}
        con = self._connect(name)
        try:
            with con.cursor() as cur:
                cur.execute("SET foreign_key_checks = 0")
                # a lock left by a killed client fails the reset (the database is then
                # dropped) instead of waiting without limit, the server's default
                cur.execute("SET ob_trx_lock_timeout = 10000000")
                for table in self._tables(cur):
                    if table not in reference:
                        cur.execute(f"DROP TABLE {database_identifier(table)}")
                    elif table != SCHEMA_TABLE:
                        cur.execute(f"DELETE FROM {database_identifier(table)}")
        finally:
            con.close()

    def shape(self, name: str) -> Shape:
        con = self._connect(name)
        try:
            with con.cursor() as cur:
                tables, rows = [], []
                for table in self._tables(cur):
                    cur.execute(f"SHOW CREATE TABLE {database_identifier(table)}")
                    # the counter moves with every insert; foreign keys name their own database
                    ddl = _AUTO_INCREMENT.sub("", cur.fetchone()[1]).replace(f"`{name}`.", "")
                    tables.append((table, ddl))
                    if table != SCHEMA_TABLE:
                        cur.execute(f"SELECT COUNT(*) FROM {database_identifier(table)}")
                        rows.append((table, int(cur.fetchone()[0])))
                schema_rows: tuple = ()
                if SCHEMA_TABLE in dict(tables):
                    cur.execute(f"SELECT `key`, value FROM {SCHEMA_TABLE} ORDER BY `key`")
                    schema_rows = tuple(tuple(r) for r in cur.fetchall())
                return Shape(tuple(tables), schema_rows, tuple(rows))
        finally:
            con.close()

    @staticmethod
    def _tables(cur) -> list[str]:
        cur.execute("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'")
        return sorted(row[0] for row in cur.fetchall())
