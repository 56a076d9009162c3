"""Entry-version rows in and out of their stored form, read in server-sized lists, and
decoded once per exact stored values (a search confirms ~64 candidates: decoding and
re-hashing each row every time cost more than its query; reading them again cost a
round trip of 64 rows, 2.7 ms on OceanBase at 1k entries)."""

from __future__ import annotations

from typing import Any, Sequence

from ..model import MemoryEntryVersion
from .caches import ByteLRU, budget_from_env
from .rules import artifact_refs_from_json, refs_to_json, source_refs_from_json, stored_row, version_content_hash


class VersionRows:
    """Mixin of DatabaseMemoryBackend."""

    def _init_version_rows(self) -> None:
        self.version_cache = ByteLRU(budget_from_env("POWERCONTEXT_VERSION_CACHE_MB", 16))

    def _versions(self, tx: Any, version_ids: Sequence[str]) -> dict[str, MemoryEntryVersion]:
        return {v.entry_version_id: v for v, _ in self._hashed_versions(tx, version_ids).values()}

    def _hashed_versions(self, tx: Any, version_ids: Sequence[str], reread: bool = True,
                         rows: dict[str, tuple[Any, ...]] | None = None) -> dict[str, tuple[MemoryEntryVersion, str]]:
        """Version rows decoded with the hash of their canonical content, cached by id
        with the exact stored values they were computed from. A row read again is
        served from the cache only if its values are those very values.

        ``reread=False`` (search) takes a cached version without reading its row again.
        Version rows are immutable and the caller compares the cached hash with the
        verified head manifest's, exactly as for a fresh read — the same footing as the
        manifest chunks, which are verified once and not re-read per search
        (revision_store.py). A row altered in the database since is what ``verify``
        reports; a search still returns only content that hashes to the manifest.

        ``rows``, if given, receives the exact stored row each version was decoded from
        (``_verify_identities`` reads the same rows again in their chains: an equal row
        need not be decoded a second time — at 20k entries the version cache cannot
        bridge the two reads)."""
        ids = list(dict.fromkeys(version_ids))
        out: dict[str, tuple[MemoryEntryVersion, str]] = {}
        if not reread:
            out = {version_id: cached[1] for version_id, cached in self.version_cache.get_many(ids).items()}
            ids = [i for i in ids if i not in out]
        for part in self._in_lists(ids):
            for row in self._read_versions(tx, part):
                row = tuple(row)
                cached = self.version_cache.get(row[2])
                if cached is not None and cached[0] == row:
                    hit = cached[1]
                else:
                    version = self._version_from_row(row)
                    hit = (version, version_content_hash(version))
                    self.version_cache.put(row[2], (row, hit), 2 * sum(len(str(c)) for c in row) + 600)
                out[row[2]] = hit
                if rows is not None:
                    rows[row[2]] = row
        return out

    def _in_lists(self, values: Sequence[Any]) -> list[list[Any]]:
        """Split the values one statement would bind into lists the server accepts."""
        size = max(1, int(self.in_list_size))
        return [list(values[i:i + size]) for i in range(0, len(values), size)]

    @staticmethod
    def _version_from_row(row: Sequence[Any]) -> MemoryEntryVersion:
        with stored_row("an entry version"):
            return VersionRows._decode_version(row)

    @staticmethod
    def _decode_version(row: Sequence[Any]) -> MemoryEntryVersion:
        (memory_id, entry_id, version_id, version, previous, kind, text, source_refs,
         artifact_refs, content_hash, created) = row
        return MemoryEntryVersion(
            memory_artifact_id=memory_id,
            entry_id=entry_id,
            entry_version_id=version_id,
            version=int(version),
            previous_version_id=previous,
            kind=kind,
            text=text,
            sources=source_refs_from_json(source_refs),
            artifacts=artifact_refs_from_json(artifact_refs),
            entry_content_hash=content_hash,
            created_in_revision=int(created),
        )

    @staticmethod
    def _version_row(v: MemoryEntryVersion) -> tuple[Any, ...]:
        return (
            v.memory_artifact_id, v.entry_id, v.entry_version_id, v.version, v.previous_version_id,
            v.kind, v.text, refs_to_json(v.sources), refs_to_json(v.artifacts),
            v.entry_content_hash, v.created_in_revision,
        )

