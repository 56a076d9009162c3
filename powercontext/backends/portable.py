"""Primitives whose SQL is the same on every supported database.

Written once with ``?`` placeholders; an adapter supplies ``_rows`` and ``_count``,
which run one statement in its driver's parameter style. What differs between the
databases — DDL, transactions, the FTS and vector projections and their queries —
stays in each adapter.
"""

from __future__ import annotations

from typing import Any, Sequence

VERSION_COLUMNS = (
    "memory_artifact_id, entry_id, entry_version_id, version, previous_version_id, kind, text, "
    "source_refs, artifact_refs, entry_content_hash, created_in_revision"
)


def marks(n: int) -> str:
    return ",".join("?" * n)


class PortableSQL:
    def _rows(self, tx: Any, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _count(self, tx: Any, sql: str, params: Sequence[Any] = ()) -> int:
        """Run a write statement and return the number of affected rows."""
        raise NotImplementedError

    # heads and revisions

    def _read_head(self, tx, artifact_id, lock: bool = False):
        sql = "SELECT revision FROM artifact_heads WHERE artifact_id = ?" + (self.ROW_LOCK if lock else "")
        rows = self._rows(tx, sql, (artifact_id,))
        return int(rows[0][0]) if rows else None

    def _heads_and_revisions(self, tx, refs):
        """The heads of the Memories of ``refs`` and the stored rows of exactly those
        Revisions, in one statement: a search's re-check after its channel queries (on
        OceanBase every statement is a round trip). The Revision rows come first, so
        their column types set the result's. Returns ({artifact_id: revision},
        {ref: (content, content_hash, lineage, lineage_hash)})."""
        heads, revisions = {}, {}
        for part in self._in_lists(list(refs)):
            pairs = " OR ".join(["(artifact_id = ? AND revision = ?)"] * len(part))
            sql = (f"SELECT 'r', artifact_id, revision, content, content_hash, lineage, lineage_hash "
                   f"FROM artifact_revisions WHERE {pairs} "
                   f"UNION ALL SELECT 'h', artifact_id, revision, NULL, NULL, NULL, NULL "
                   f"FROM artifact_heads WHERE artifact_id IN ({marks(len(part))})")
            params = tuple(v for ref in part for v in (ref.artifact_id, ref.revision))
            params += tuple(ref.artifact_id for ref in part)
            for kind, artifact_id, revision, *row in self._rows(tx, sql, params):
                if kind == "h":
                    heads[artifact_id] = int(revision)
                else:
                    revisions[(artifact_id, int(revision))] = tuple(row)
        return heads, {ref: revisions.get((ref.artifact_id, ref.revision)) for ref in refs}

    def _search_state(self, tx, artifact_ids):
        """The heads of the searched Memories and the schema values a search checks
        (analyzer, projection generation, embedding profile), read in one statement: on OceanBase every
        statement is a round trip (0.4–0.5 ms at 1k entries, several ms under load).
        Returns ({artifact_id: revision}, {key: value})."""
        heads, schema = {}, {}
        for i, part in enumerate(self._in_lists(list(artifact_ids))):
            sql = f"SELECT 'h', artifact_id, revision FROM artifact_heads WHERE artifact_id IN ({marks(len(part))})"
            params = tuple(part)
            if i == 0:
                sql += " UNION ALL SELECT 's', `key`, value FROM powercontext_schema WHERE `key` IN (?, ?, ?)"
                params += ("analyzer", "projection_generation", "embedding_profile")
            for kind, name, value in self._rows(tx, sql, params):
                if kind == "h":
                    heads[name] = int(value)
                else:
                    schema[name] = value
        return heads, schema

    #: Appended to a read that must hold its rows until the transaction ends. SQLite
    #: has no row locks (BEGIN IMMEDIATE already holds the whole database); a server
    #: with MVCC reads (OceanBase) says " FOR UPDATE".
    ROW_LOCK = ""

    def _read_schema_values(self, tx, keys: Sequence[str], lock: bool = False) -> dict[str, str]:
        """Several powercontext_schema values in one statement (one round trip);
        ``lock``: held until the transaction ends (see ``ROW_LOCK``)."""
        sql = f"SELECT `key`, value FROM powercontext_schema WHERE `key` IN ({marks(len(keys))})"
        return {key: value for key, value in self._rows(tx, sql + (self.ROW_LOCK if lock else ""), tuple(keys))}

    def _list_heads(self, tx, lock: bool = False):
        sql = "SELECT artifact_id, revision FROM artifact_heads" + (self.ROW_LOCK if lock else "")
        return [(a, int(r)) for a, r in self._rows(tx, sql)]

    def _read_revision(self, tx, artifact_id, revision):
        rows = self._rows(
            tx, "SELECT content, content_hash, lineage, lineage_hash FROM artifact_revisions "
            "WHERE artifact_id = ? AND revision = ?",
            (artifact_id, revision),
        )
        return rows[0] if rows else None

    def _revision_numbers(self, tx, artifact_id):
        return [int(r[0]) for r in self._rows(
            tx, "SELECT revision FROM artifact_revisions WHERE artifact_id = ? ORDER BY revision", (artifact_id,)
        )]

    def _read_revision_range(self, tx, artifact_id, lo, hi):
        rows = self._rows(
            tx, "SELECT revision, content, content_hash FROM artifact_revisions "
            "WHERE artifact_id = ? AND revision BETWEEN ? AND ? ORDER BY revision",
            (artifact_id, lo, hi),
        )
        return [(int(r), c, h) for r, c, h in rows]

    def _set_revision_content(self, tx, artifact_id, revision, content):
        self._count(tx, "UPDATE artifact_revisions SET content = ? WHERE artifact_id = ? AND revision = ?",
                    (content, artifact_id, revision))

    def _inline_revision_keys(self, tx):
        """Revisions stored before chunking (the row holds the canonical text)."""
        return [(a, int(r)) for a, r in self._rows(
            tx, "SELECT artifact_id, revision FROM artifact_revisions WHERE content NOT LIKE ? "
            "ORDER BY artifact_id, revision", ("chunks-v1 %",))]

    # manifest chunks (manifest_chunks.py): content-addressed, written once

    def _read_chunks(self, tx, keys):
        out = {}
        for part in self._in_lists(list(dict.fromkeys(keys))):
            out.update(self._rows(
                tx, f"SELECT chunk_key, content FROM artifact_manifest_chunks WHERE chunk_key IN ({marks(len(part))})",
                tuple(part),
            ))
        return out

    def _insert_revision(self, tx, artifact_id, revision, family, content, content_hash, lineage, lineage_hash):
        self._count(
            tx, "INSERT INTO artifact_revisions (artifact_id, revision, family, content, content_hash, lineage, "
            "lineage_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (artifact_id, revision, family, content, content_hash, lineage, lineage_hash),
        )

    def _backfill_lineage_hashes(self, tx, hasher):
        """Databases created before lineage_hash existed: hash their stored lineage
        once (what is stored at migration time is taken as written)."""
        rows = self._rows(tx, "SELECT artifact_id, revision, lineage FROM artifact_revisions WHERE lineage_hash IS NULL")
        for artifact_id, revision, lineage in rows:
            self._count(tx, "UPDATE artifact_revisions SET lineage_hash = ? WHERE artifact_id = ? AND revision = ?",
                        (hasher(lineage), artifact_id, revision))
        return len(rows)

    def _insert_head(self, tx, artifact_id, revision):
        self._count(tx, "INSERT INTO artifact_heads (artifact_id, revision) VALUES (?, ?)", (artifact_id, revision))

    def _cas_head(self, tx, artifact_id, base, next_revision):
        return self._count(
            tx, "UPDATE artifact_heads SET revision = ? WHERE artifact_id = ? AND revision = ?",
            (next_revision, artifact_id, base),
        )

    # entry versions

    def _read_versions(self, tx, version_ids):
        return self._rows(
            tx, f"SELECT {VERSION_COLUMNS} FROM memory_entry_versions WHERE entry_version_id IN ({marks(len(version_ids))})",
            tuple(version_ids),
        )

    def _read_entry_versions(self, tx, artifact_id, entry_id):
        return self._rows(
            tx, f"SELECT {VERSION_COLUMNS} FROM memory_entry_versions WHERE memory_artifact_id = ? AND entry_id = ?",
            (artifact_id, entry_id),
        )

    def _read_entries_versions(self, tx, artifact_id, entry_ids):
        """Every version row of each of ``entry_ids`` (one Memory), one in-list at a time."""
        rows = []
        for part in self._in_lists(list(entry_ids)):
            rows += self._rows(
                tx, f"SELECT {VERSION_COLUMNS} FROM memory_entry_versions WHERE memory_artifact_id = ? "
                f"AND entry_id IN ({marks(len(part))})", (artifact_id, *part),
            )
        return rows

    def _read_memory_versions(self, tx, artifact_id):
        return self._rows(
            tx, f"SELECT {VERSION_COLUMNS} FROM memory_entry_versions WHERE memory_artifact_id = ?", (artifact_id,)
        )

    def _read_projection(self, tx, artifact_id):
        """(entry_id, entry_version_id, entry_content_hash) of the head projection."""
        return self._rows(
            tx, "SELECT entry_id, entry_version_id, entry_content_hash FROM memory_entry_heads "
            "WHERE memory_artifact_id = ?", (artifact_id,)
        )

    def _read_projection_texts(self, tx, artifact_id):
        """(entry_id, searchable_text, the full-text index's copy of it) of each head
        row. Here the index is built over the column itself (OceanBase's FULLTEXT), so
        the copy is the column; SQLite's FTS5 table keeps its own (sqlite/backend.py)."""
        return self._rows(
            tx, "SELECT entry_id, searchable_text, searchable_text FROM memory_entry_heads WHERE memory_artifact_id = ?",
            (artifact_id,)
        )

    def _probe_sample(self, tx, n):
        """(memory_artifact_id, entry_id, searchable_text) of about ``n`` head rows spread
        over the table (maintenance probes)."""
        rows = self._rows(tx, "SELECT MIN(projection_id), MAX(projection_id) FROM memory_entry_heads")
        low, high = rows[0] if rows else (None, None)
        if low is None:
            return []
        step = max(1, (int(high) - int(low)) // max(1, n))
        return self._rows(tx, "SELECT memory_artifact_id, entry_id, searchable_text FROM memory_entry_heads "
                          "WHERE projection_id >= ? AND MOD(projection_id - ?, ?) = 0 ORDER BY projection_id LIMIT ?",
                          (int(low), int(low), step, n))

    def _projection_ids(self, tx, artifact_id, entry_ids):
        """{entry_id: projection_id} of those entries' head rows (one in-list)."""
        return dict(self._rows(
            tx, f"SELECT entry_id, projection_id FROM memory_entry_heads WHERE memory_artifact_id = ? "
            f"AND entry_id IN ({marks(len(entry_ids))})", (artifact_id, *entry_ids)))

    def _existing_version_ids(self, tx, version_ids):
        out = set()
        for part in self._in_lists(list(version_ids)):
            out |= {r[0] for r in self._rows(
                tx, f"SELECT entry_version_id FROM memory_entry_versions WHERE entry_version_id IN ({marks(len(part))})",
                tuple(part),
            )}
        return out

    def _insert_versions(self, tx, rows):
        self._insert_many(tx, f"INSERT INTO memory_entry_versions ({VERSION_COLUMNS}) VALUES ({marks(11)})", rows)

    # sources

    def _read_source(self, tx, name):
        rows = self._rows(tx, "SELECT payload, content_hash FROM sources WHERE name = ?", (name,))
        return rows[0] if rows else None

    def _insert_source(self, tx, name, content_hash, payload):
        self._count(tx, "INSERT INTO sources (name, content_hash, payload) VALUES (?, ?, ?)", (name, content_hash, payload))

    # projections

    def _projection_generation(self, tx):
        """Bumped by every projection rebuild (any process): a search's completeness
        re-check is needed again only when it changed."""
        rows = self._rows(tx, "SELECT value FROM powercontext_schema WHERE `key` = ?", ("projection_generation",))
        return int(rows[0][0]) if rows else 0

    def _bump_projection_generation(self, tx) -> int:
        """The new generation, written in ``tx``."""
        generation = self._projection_generation(tx) + 1
        if generation == 1:
            self._count(tx, "INSERT INTO powercontext_schema (`key`, value) VALUES (?, ?)",
                        ("projection_generation", "1"))
        else:
            self._count(tx, "UPDATE powercontext_schema SET value = ? WHERE `key` = ?",
                        (str(generation), "projection_generation"))
        return generation

    def _set_projection_revision(self, tx, artifact_id, revision):
        self._count(tx, "UPDATE memory_entry_heads SET head_revision = ? WHERE memory_artifact_id = ?", (revision, artifact_id))
