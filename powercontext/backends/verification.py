"""Verified reads: nothing authoritative leaves the backend unless the hashes that
commit to it agree (RFC 000 "Reading a Revision, running expand(), and performing
offline validation must all compare the ID, hash, and canonical bytes").

What commits to what:

* a Revision row: its content hash covers the MemoryContent (manifest + changes);
  its lineage hash covers the operation evidence (``_revision`` in base.py);
* an entry version's content (kind, text, references) is covered by the
  ``entry_content_hash`` that the manifests of the Revisions pointing at it store;
* its identity fields — ``previous_version_id``, ``created_in_revision`` and the
  ``version`` number — are NOT in any hash. They are checked against the change record
  of the Revision that created the version (op, from, to: covered by that Revision's
  content hash), and the number against the verified chain down to version 1.
  Verified versions are remembered by their exact stored values, so a later read
  re-verifies only rows that changed;
* a Source read by name is re-hashed; its hash is anchored by the SourceRefs of the
  entry versions citing it (a Source nobody cites has only its own row).

``_verify_memory_sync`` walks a whole Memory's history offline and lists every
mismatch instead of stopping at the first.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from .. import canonical
from ..errors import ArtifactNotFoundError, InvalidCitationError, PowerContextError
from ..model import ArtifactRef, EmbeddingProfile, MemoryEntryVersion, MemoryRevision, Source
from .rules import stored_row, version_content_hash

IDENTITY_CACHE_SIZE = 100_000


@dataclass(frozen=True)
class MemoryVerification:
    """The result of ``svc.verify(memory)``: what was checked and every mismatch."""

    memory: ArtifactRef
    revisions: int = 0
    versions: int = 0
    sources: int = 0
    issues: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.issues

    def __repr__(self) -> str:
        state = "ok" if self.ok else f"{len(self.issues)} issues"
        return (f"MemoryVerification({self.memory}, {self.revisions} revisions, {self.versions} versions, "
                f"{self.sources} sources: {state})")


@dataclass(frozen=True)
class _Created:
    """A Revision that created versions being verified, read once for a batch."""

    revision: MemoryRevision
    entry_ids: frozenset[str]  # the entries whose chunks that read re-checked
    items: dict[str, Any]
    changes: dict[str, Any]

    @classmethod
    def of(cls, revision: MemoryRevision, entry_ids) -> "_Created":
        return cls(revision, frozenset(entry_ids), revision.manifest.by_id(), {c.entry_id: c for c in revision.changes})


class VerifiedReads:
    """Mixin of DatabaseMemoryBackend: checks of entry versions and Sources on read,
    and the offline verification of a whole Memory."""

    def _init_verified_reads(self) -> None:
        self._identity_cache: dict[str, MemoryEntryVersion] = {}
        self._identity_lock = threading.Lock()

    # ---------------------------------------------------------------- content

    @staticmethod
    def _check_version(version: MemoryEntryVersion | None, ref: ArtifactRef, item, actual: str | None = None) -> None:
        """A manifest item and the version row it points at must agree on identity and
        on the hash of the row's canonical bytes (``actual``: that hash, if the caller
        computed it from this very version already)."""
        where = f"entry {item.entry_id!r} version {item.entry_version_id!r} of {ref}"
        if version is None:
            raise InvalidCitationError(f"{where}: the version row is missing")
        if version.memory_artifact_id != ref.artifact_id or version.entry_id != item.entry_id:
            raise InvalidCitationError(f"{where}: the version row belongs to another Memory or entry")
        if actual is None:
            actual = version_content_hash(version)
        if actual != item.entry_content_hash or version.entry_content_hash != item.entry_content_hash:
            raise InvalidCitationError(f"{where}: content does not hash to the manifest's entry_content_hash (altered row)")

    # ---------------------------------------------------------------- identity

    def _verify_identities(self, tx: Any, versions: Iterable[MemoryEntryVersion],
                           hashes: "Mapping[str, tuple[MemoryEntryVersion, str]] | None" = None,
                           rows: "Mapping[str, tuple[Any, ...]] | None" = None) -> None:
        """Check version number, predecessor and creating Revision of each version
        (and, on the way, the content of every version in its chain). ``hashes``: the
        content hashes the caller computed for these versions (``_hashed_versions``),
        so that checking each against its creating Revision does not hash it again
        (rfc8785 of 20k versions, twice, was a third of a cold ``entries()``). ``rows``:
        the stored rows those versions were decoded from; a chain row equal to one is
        that version (decoding is a function of the row's values), not decoded again."""
        with self._identity_lock:
            todo = [v for v in versions if self._identity_cache.get(v.entry_version_id) != v]
        by_entry: dict[tuple[str, str], list[MemoryEntryVersion]] = {}
        for v in todo:
            by_entry.setdefault((v.memory_artifact_id, v.entry_id), []).append(v)
        created = self._creating_revisions(tx, todo)
        # the chains of these entries, one statement per in-list (not one per entry:
        # the first entries() of a 100k-entry Memory made 100k round trips), checked
        # slice by slice so that only one slice's chains are held at a time
        by_memory: dict[str, list[str]] = {}
        for artifact_id, entry_id in by_entry:
            by_memory.setdefault(artifact_id, []).append(entry_id)
        for artifact_id, entry_ids in by_memory.items():
            for part in self._in_lists(entry_ids):
                chains: dict[str, dict[str, MemoryEntryVersion]] = {}
                for row in self._read_entries_versions(tx, artifact_id, part):
                    row = tuple(row)
                    v = hashes[row[2]][0] if rows and hashes and rows.get(row[2]) == row else self._version_from_row(row)
                    chains.setdefault(v.entry_id, {})[v.entry_version_id] = v
                for entry_id in part:
                    chain = chains.get(entry_id, {})
                    for v in by_entry[(artifact_id, entry_id)]:
                        if chain.get(v.entry_version_id) != v:
                            raise InvalidCitationError(
                                f"entry {entry_id!r} version {v.entry_version_id!r} changed while it was read; "
                                "read it again"
                            )
                        self._verify_link(tx, v, chain, created, hashes)

    def _creating_revisions(self, tx: Any, versions: Sequence[MemoryEntryVersion]) -> dict[tuple[str, Any], "_Created"]:
        """Each Revision that created some of ``versions``, read (and its chunks for those
        entries checked) once, with its manifest and changes indexed: the 100k versions
        of one big remember() all name the same Revision, which was otherwise re-read —
        and, past the revision cache's budget, re-verified — once per version."""
        wanted: dict[ArtifactRef, set[str]] = {}
        for v in versions:
            try:
                ref = ArtifactRef(v.memory_artifact_id, v.created_in_revision)
            except PowerContextError:
                continue  # an impossible number: the per-version check words the error
            wanted.setdefault(ref, set()).add(v.entry_id)
        out = {}
        for ref, entry_ids in wanted.items():
            if len(entry_ids) < 2:
                continue  # nothing to share
            try:
                revision = self._revision(tx, ref, tuple(sorted(entry_ids)))
            except ArtifactNotFoundError:
                continue  # the per-version check reports it as an altered row
            out[(ref.artifact_id, ref.revision)] = _Created.of(revision, entry_ids)
        return out

    def _entry_rows(self, tx: Any, artifact_id: str, entry_id: str) -> list[MemoryEntryVersion]:
        return [self._version_from_row(r) for r in self._read_entry_versions(tx, artifact_id, entry_id)]

    def _verify_link(self, tx: Any, v: MemoryEntryVersion, chain: dict[str, MemoryEntryVersion],
                     created: "dict[tuple[str, Any], _Created] | None" = None,
                     hashes: "Mapping[str, tuple[MemoryEntryVersion, str]] | None" = None) -> None:
        """``v`` was created by the change its Revision records, and its number is its
        predecessor's + 1, down to version 1 (iteratively: chains can be long)."""
        pending: list[MemoryEntryVersion] = []
        cursor: MemoryEntryVersion | None = v
        while cursor is not None:
            with self._identity_lock:
                if self._identity_cache.get(cursor.entry_version_id) == cursor:
                    break
            pending.append(cursor)
            if cursor.previous_version_id is None:
                cursor = None
                continue
            previous = chain.get(cursor.previous_version_id)
            if previous is None:
                raise InvalidCitationError(
                    f"entry {v.entry_id!r} version {cursor.entry_version_id!r} names predecessor "
                    f"{cursor.previous_version_id!r}, which is not a version of this entry (altered row)"
                )
            if len(pending) > len(chain):
                raise InvalidCitationError(f"entry {v.entry_id!r}: its version chain loops (altered rows)")
            cursor = previous
        for link in reversed(pending):  # oldest first: each predecessor is verified before its successor
            self._verify_one_link(tx, link, chain, created, hashes)
            with self._identity_lock:
                if len(self._identity_cache) >= IDENTITY_CACHE_SIZE:
                    self._identity_cache.pop(next(iter(self._identity_cache)))
                self._identity_cache[link.entry_version_id] = link

    def _verify_one_link(self, tx: Any, v: MemoryEntryVersion, chain: dict[str, MemoryEntryVersion],
                         prefetched: "dict[tuple[str, Any], _Created] | None" = None,
                         hashes: "Mapping[str, tuple[MemoryEntryVersion, str]] | None" = None) -> None:
        where = f"entry {v.entry_id!r} version {v.entry_version_id!r} of {v.memory_artifact_id!r}"
        known = None
        if prefetched:
            known = prefetched.get((v.memory_artifact_id, v.created_in_revision))
            if known is not None and v.entry_id not in known.entry_ids:
                known = None  # read for other entries: this entry's chunks were not re-checked
        if known is not None:
            created, change, item = known.revision, known.changes.get(v.entry_id), known.items.get(v.entry_id)
        else:
            try:
                created = self._revision(tx, ArtifactRef(v.memory_artifact_id, v.created_in_revision), (v.entry_id,))
            except ArtifactNotFoundError:
                raise InvalidCitationError(
                    f"{where}: created_in_revision {v.created_in_revision} is not a Revision of this Memory (altered row)"
                ) from None
            change = next((c for c in created.changes if c.entry_id == v.entry_id), None)
            item = created.manifest.get(v.entry_id)
        expected_op = "add" if v.previous_version_id is None else "revise"
        if (change is None or change.op != expected_op or change.to_entry_version_id != v.entry_version_id
                or change.from_entry_version_id != v.previous_version_id):
            raise InvalidCitationError(
                f"{where}: Revision {v.created_in_revision} does not record creating it from "
                f"{v.previous_version_id!r} (altered previous_version_id or created_in_revision)"
            )
        if item is None or item.entry_version_id != v.entry_version_id:
            raise InvalidCitationError(f"{where}: not in the manifest of the Revision that created it (altered row)")
        known = hashes.get(v.entry_version_id) if hashes else None
        # equal field values hash alike: the hash is a function of the fields alone
        self._check_version(v, created.ref, item, known[1] if known is not None and known[0] == v else None)
        expected_number = 1 if v.previous_version_id is None else chain[v.previous_version_id].version + 1
        if v.version != expected_number:
            raise InvalidCitationError(f"{where}: stored version number {v.version}, its chain says {expected_number} (altered row)")

    # ---------------------------------------------------------------- reads

    def _entry_history_sync(self, artifact_id: str, entry_id: str) -> tuple[MemoryEntryVersion, ...]:
        """Every version of one entry, oldest first, each verified against the
        Revision that created it (content hash, predecessor, number)."""
        with self._transaction(write=False) as tx:
            versions = self._entry_rows(tx, artifact_id, entry_id)
            if not versions:
                return ()
            chain = {v.entry_version_id: v for v in versions}
            for v in versions:
                self._verify_link(tx, v, chain)
            ordered = sorted(versions, key=lambda v: v.version)
            if [v.version for v in ordered] != list(range(1, len(ordered) + 1)):
                raise InvalidCitationError(f"entry {entry_id!r} has a broken version chain (altered or extra rows)")
            return tuple(ordered)

    @staticmethod
    def _source_from_payload(payload_text: str, content_hash: str) -> Source:
        """Sources are read by name: the stored payload must still be canonical and
        hash to the stored content hash."""
        with stored_row("a Source payload"):
            data = json.loads(payload_text)
            source = Source(data["name"], data["content"], data["description"], data["metadata"], content_hash)
            text = canonical.canonical_text(source.payload())
        if text != payload_text or canonical.source_content_hash(source.payload()) != content_hash:
            raise InvalidCitationError(
                f"Source {data['name']!r} does not hash to its stored content hash: the row was altered"
            )
        return source

    # ---------------------------------------------------------------- offline

    def _verify_memory_sync(self, artifact_id: str) -> MemoryVerification:
        """Check a whole Memory's history; collect every mismatch."""
        issues: list[str] = []
        with self._transaction(write=False) as tx:
            head = self._read_head(tx, artifact_id)
            if head is None:
                raise ArtifactNotFoundError(f"no Memory {artifact_id!r} in this database")
            numbers = self._revision_numbers(tx, artifact_id)
            if numbers != list(range(1, head + 1)):
                issues.append(f"Revisions on record are {_ranges(numbers)}, the head is {head}: some are missing or extra")
            revisions: dict[int, MemoryRevision] = {}
            for number in numbers:
                ref = ArtifactRef(artifact_id, number)
                try:
                    revisions[number] = self._revision(tx, ref)
                except PowerContextError as exc:
                    issues.append(str(exc))
            rows = self._read_memory_versions(tx, artifact_id)
            versions: dict[str, MemoryEntryVersion] = {}
            for row in rows:
                try:
                    v = self._version_from_row(row)
                except PowerContextError as exc:
                    issues.append(f"version row {row[2]!r}: {exc}")
                    continue
                versions[v.entry_version_id] = v
            chains: dict[str, dict[str, MemoryEntryVersion]] = {}
            for v in versions.values():
                chains.setdefault(v.entry_id, {})[v.entry_version_id] = v
            # Every Revision that verified whole above serves the links of the versions it
            # created, indexed once: re-reading it and scanning its change list per version
            # made verify() of a 100k-entry remember() quadratic. A Revision that did not
            # verify is left out, so each of its versions reports the failure itself.
            creators = {v.created_in_revision for v in versions.values()}
            created = {(artifact_id, n): _Created.of(r, (i.entry_id for i in r.manifest.entries))
                       for n, r in revisions.items() if n in creators}
            for v in versions.values():  # link by link, so one bad row does not hide the next
                chain = chains[v.entry_id]
                try:
                    if v.previous_version_id is not None and v.previous_version_id not in chain:
                        raise InvalidCitationError(
                            f"entry {v.entry_id!r} version {v.entry_version_id!r} names predecessor "
                            f"{v.previous_version_id!r}, which is not a version of this entry (altered row)"
                        )
                    self._verify_one_link(tx, v, chain, created)
                except PowerContextError as exc:
                    issues.append(str(exc))
            del created
            # An unchanged item recurs in every later manifest: the same item against the
            # same version row is hashed once (the check depends on nothing else).
            matched: set[Any] = set()
            for number, revision in revisions.items():
                for item in revision.manifest.entries:
                    key = (item.entry_id, item.entry_version_id, item.entry_content_hash)
                    if key in matched:
                        continue
                    try:
                        self._check_version(versions.get(item.entry_version_id), revision.ref, item)
                        matched.add(key)
                    except PowerContextError as exc:
                        issues.append(str(exc))
            sources = {ref for v in versions.values() for ref in v.sources}
            sources |= {ref for r in revisions.values() for ref in r.lineage.sources}
            for ref in sorted(sources):
                row = self._read_source(tx, ref.name)
                if row is None:
                    issues.append(f"Source {ref.name!r} is cited but not persisted")
                    continue
                try:
                    self._source_from_payload(row[0], row[1])
                except PowerContextError as exc:
                    issues.append(str(exc))
                    continue
                if row[1] != ref.content_hash:
                    issues.append(f"Source {ref.name!r} has content hash {row[1][:12]}…, cited as {ref.content_hash[:12]}…")
            artifacts = {a for v in versions.values() for a in v.artifacts}
            artifacts |= {a for r in revisions.values() for a in r.lineage.artifacts}
            for aref in sorted(artifacts):
                if self._read_revision(tx, aref.artifact_id, aref.revision) is None:
                    issues.append(f"artifact evidence {aref} does not exist")
            issues += self._projection_issues(tx, artifact_id, revisions.get(head), versions, matched)
            issues += self._vector_profile_issues(tx, artifact_id)
        return MemoryVerification(
            memory=ArtifactRef(artifact_id, head), revisions=len(revisions), versions=len(versions),
            sources=len(sources), issues=tuple(dict.fromkeys(issues)),
        )

    def _projection_issues(self, tx: Any, artifact_id: str, head: MemoryRevision | None,
                           versions: Mapping[str, MemoryEntryVersion], verified: set) -> list[str]:
        """The search projection must mirror the head's active entries (it can be
        rebuilt from them: svc.rebuild_projections()): one row per active entry, at its
        version, holding the analyzer's text of that version — in the row and in the
        full-text index. Edited search text would let a search for a word the entry never
        says return it, or hide the entry from searches, while every hash still holds.
        ``verified``: the (entry, version, hash) items whose version row hashed right;
        the search text of any other is not judged (its row is reported already)."""
        if head is None:
            return []
        rebuild = "run svc.rebuild_projections()"
        expected = {(i.entry_id, i.entry_version_id, i.entry_content_hash) for i in head.manifest.active}
        actual = {tuple(r) for r in self._read_projection(tx, artifact_id)}
        out = []
        for entry_id, version_id, _ in sorted(actual - expected):
            out.append(f"projection: search row for entry {entry_id!r} ({version_id!r}) is not an active head "
                       f"version; {rebuild}")
        for entry_id, version_id, _ in sorted(expected - actual):
            out.append(f"projection: active head entry {entry_id!r} ({version_id!r}) has no search row; {rebuild}")
        items = {i.entry_id: i for i in head.manifest.active}
        for entry_id, stored, indexed in sorted(self._read_projection_texts(tx, artifact_id)):
            item = items.get(entry_id)
            if item is None or (item.entry_id, item.entry_version_id, item.entry_content_hash) not in verified:
                continue  # reported above, or as an altered or missing version row
            version = versions[item.entry_version_id]
            searchable = self.analyzer.searchable_text(version.text)
            if stored != searchable:
                out.append(f"projection: the search text of entry {entry_id!r} is not its text's (analyzer "
                           f"{self.analyzer.version}); {rebuild}")
            elif indexed != stored:
                out.append(f"projection: the full-text index row of entry {entry_id!r} differs from its search text; "
                           f"{rebuild}")
        return out + self._full_text_index_issues(tx)

    def _full_text_index_issues(self, tx: Any) -> list[str]:
        """Issues of a full-text index that reads its text from the head rows but keeps
        its own tokens (SQLite's external-content FTS5): tokens that are not the head
        rows' text match words the entries never say. None where the index is built on
        the column by the engine itself (OceanBase's FULLTEXT)."""
        return []


    def _vector_profile_issues(self, tx: Any, artifact_id: str) -> list[str]:
        """Every stored head vector must carry the embedding hash of the profile the
        database records (read here, not this handle's: another process may have
        migrated). A vector embedded by another model — a commit that raced a
        migration, a row restored from an old backup — passes every content hash, yet
        vector search refuses the Memory ("missing or stale vectors"); verify() said
        the database was fine (issue 43). A row without a vector is not reported: a
        commit during a model outage leaves one on purpose, until a rebuild."""
        if not self._vector_supported_sync():
            return []
        recorded = self._read_schema_values(tx, ("embedding_profile",)).get("embedding_profile")
        if recorded is None:
            return []
        profile = EmbeddingProfile(**json.loads(recorded))
        stale = sum(1 for content_hash, embedding_hash, has_vector in self._vector_rows(tx, artifact_id)
                    if has_vector and embedding_hash != self.expected_embedding_hash(content_hash, profile))
        if not stale:
            return []
        return [f"projection: {stale} head vector(s) were not embedded for the recorded profile "
                f"{profile.profile_id!r} (another model's or another entry's); run svc.rebuild_projections() "
                "with that embedding"]


def _ranges(numbers: Sequence[int]) -> str:
    if not numbers:
        return "none"
    return f"{numbers[0]}..{numbers[-1]} ({len(numbers)} rows)"
