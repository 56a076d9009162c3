"""Validation of a CommitPlan inside the write transaction, against the base
Revision actually read there: manifest order and identity, change/manifest agreement,
version chains, evidence re-resolved from the database, and vector integrity. A plan
built by any caller — the service, a candidate pipeline, a test — passes these or
nothing is written."""

from __future__ import annotations

import functools
import operator

from typing import Any, Callable, Mapping

from .. import canonical
from ..embedding import checked_array
from ..errors import (
    CapabilityNotSupportedError,
    InvalidEmbeddingError,
    InvalidMemoryRequestError,
)
from ..model import (
    MEMORY_SCHEMA,
    MANIFEST_FORMAT,
    EmbeddingProfile,
    MemoryRevision,
    sorted_refs,
)



from .manifest_diff import ManifestDiff
from .plans import CommitPlan
from .rules import normalize_reason, normalize_text, validate_kind, version_content_hash


@functools.lru_cache(maxsize=16)
def _embedding_hasher(profile: EmbeddingProfile) -> Callable[[str], str]:
    """One per profile: a completeness check hashes every head row of a Memory."""
    return canonical.embedding_content_hasher(profile.to_canonical())


@functools.lru_cache(maxsize=16)
def _embedding_template(profile: EmbeddingProfile) -> tuple[bytes, bytes] | None:
    return canonical.embedding_hash_template(profile.to_canonical())


class CommitValidation:
    """Mixin of DatabaseMemoryBackend: the checks of a commit. ``_check_plan`` needs
    only the plan and runs before the write lock is taken (hashing and normalizing a
    large batch is CPU time nobody else should wait for); ``_validate_plan`` needs the
    base Revision and rows read inside the transaction."""

    def _check_plan(self, plan: CommitPlan, diff: ManifestDiff | None = None) -> None:
        """Plan-intrinsic rules: manifest shape, ids, and each new version's own
        content (hash, normalization, identity) — no database reads.

        With ``diff`` (manifest_diff.py: the manifest is a base that passed these very
        rules in this process, changed at the recorded entries only) the per-item rules
        run over the changed items: every other item is equal to one that passed them,
        and the diff proves the order. Without it, over every item."""
        content = plan.content
        if content.schema != MEMORY_SCHEMA or content.manifest.format != MANIFEST_FORMAT:
            raise InvalidMemoryRequestError("unknown MemoryContent schema or manifest format")
        items = content.manifest.entries if diff is None else [p.new for p in diff.placed]
        ids = [i.entry_id for i in items]
        if not canonical.all_valid_ids(ids) or not canonical.all_valid_ids([i.entry_version_id for i in items]):
            for item in items:  # name the first offender
                if not canonical.is_valid_id(item.entry_id) or not canonical.is_valid_id(item.entry_version_id):
                    raise InvalidMemoryRequestError(f"invalid entry id or version id in manifest: {item.entry_id!r}")
        # valid ids are ASCII, whose str order is their UTF-8 order: one linear pass
        # (strictly increasing = sorted and unique) instead of a keyed sort
        if diff is None and not all(map(operator.lt, ids, ids[1:])):
            raise InvalidMemoryRequestError("manifest entries must be unique and sorted by UTF-8 entry_id")
        change_ids = [c.entry_id for c in content.changes]
        if change_ids != sorted(change_ids, key=canonical.utf8_key) or len(set(change_ids)) != len(change_ids):
            raise InvalidMemoryRequestError("a Revision records at most one change per entry, sorted by entry_id")
        if not content.changes:
            raise InvalidMemoryRequestError("a Revision must record at least one change (no empty Revisions)")
        if not canonical.all_sha256_hex([i.entry_content_hash for i in items]) or not all(
                i.state in ("active", "inactive") for i in items):
            for item in items:  # name the first offender
                if item.state not in ("active", "inactive") or not canonical.is_sha256_hex(item.entry_content_hash):
                    raise InvalidMemoryRequestError(f"invalid manifest item for {item.entry_id!r}")
        item_of = content.manifest.by_id().get if diff is None else diff.item
        for v in plan.new_versions:
            item = item_of(v.entry_id)
            if item is None or item.entry_version_id != v.entry_version_id:
                raise InvalidMemoryRequestError(f"new version {v.entry_version_id!r} is not referenced by the manifest")
            self._check_new_version_content(v, plan, item)

    def _validate_plan(self, tx: Any, plan: CommitPlan, base: MemoryRevision | None,
                       diff: ManifestDiff | None = None) -> None:
        """With ``diff`` (against this very ``base``), the per-entry rules run over the
        changed entries only: the diff proves that no entry left and that every other
        entry equals the base's, for which the rules below expect no change and have
        nothing to check."""
        content = plan.content
        if diff is None:
            base_items = {} if base is None else base.manifest.by_id()
            new_items = content.manifest.by_id()
            missing = set(base_items) - set(new_items)
            if missing:
                raise InvalidMemoryRequestError(f"entries cannot leave a manifest (deactivate them instead): {sorted(missing)}")
            pairs = [(item, base_items.get(entry_id)) for entry_id, item in new_items.items()]
            item_of, base_item = new_items.get, base_items.get
        else:
            pairs = [(p.new, p.old) for p in diff.placed]
            item_of, base_item = diff.item, base.manifest.get

        new_versions = {v.entry_version_id: v for v in plan.new_versions}
        if len(new_versions) != len(plan.new_versions):
            raise InvalidMemoryRequestError("duplicate entry_version_id in commit plan")
        clash = self._existing_version_ids(tx, list(new_versions))
        if clash:
            raise InvalidMemoryRequestError(f"entry_version_id already exists: {sorted(clash)}")

        # Evidence: resolve every operation Source and Artifact again, here.
        for ref in plan.lineage.sources:
            row = self._read_source(tx, ref.name)
            if row is None or row[1] != ref.content_hash:
                raise InvalidMemoryRequestError(
                    f"source {ref.name!r} is not persisted with that content hash; persist it with svc.sources.persist()"
                )
        for aref in plan.lineage.artifacts:
            if self._read_revision(tx, aref.artifact_id, aref.revision) is None:
                raise InvalidMemoryRequestError(f"artifact evidence {aref} does not exist")
        op_sources, op_artifacts = set(plan.lineage.sources), set(plan.lineage.artifacts)

        changes = {c.entry_id: c for c in content.changes}
        predecessors = self._versions(tx, [old.entry_version_id for v in plan.new_versions
                                           if (old := base_item(v.entry_id)) is not None])
        for item, old in pairs:
            entry_id = item.entry_id
            if old is item and entry_id not in changes and item.entry_version_id not in new_versions:
                # The base's own (already verified) item, unchanged and unchanged-for:
                # what every entry but the changed few of a commit is (the service builds
                # the new manifest from the base's entry objects). The full rule below
                # reaches the same verdict; this keeps a one-entry commit off O(N) work.
                continue
            change = changes.get(entry_id)
            version = new_versions.get(item.entry_version_id)
            if old is None:
                expect = ("add", None, item.entry_version_id)
            elif old.entry_version_id != item.entry_version_id:
                expect = ("revise", old.entry_version_id, item.entry_version_id)
            elif old.state != item.state:
                expect = ("deactivate", old.entry_version_id, None) if item.state == "inactive" else ("reactivate", None, old.entry_version_id)
            elif old.entry_content_hash != item.entry_content_hash:
                raise InvalidMemoryRequestError(f"entry {entry_id!r} changed its hash without a new version")
            else:
                expect = None
            got = None if change is None else (change.op, change.from_entry_version_id, change.to_entry_version_id)
            if got != expect:
                raise InvalidMemoryRequestError(f"change for entry {entry_id!r} is {got}, the manifests imply {expect}")
            if change is not None:
                if normalize_reason(change.reason) != change.reason:
                    raise InvalidMemoryRequestError(f"reason of {entry_id!r} is not normalized or too long")
            if expect is not None and expect[0] in ("add", "revise"):
                if item.state != "active" or version is None:
                    raise InvalidMemoryRequestError(f"{expect[0]} of {entry_id!r} needs a new active version")
                pred = None if old is None else predecessors.get(old.entry_version_id)
                self._validate_new_version(version, plan, item, pred, op_sources, op_artifacts)
            elif version is not None:
                raise InvalidMemoryRequestError(f"version {version.entry_version_id!r} is not introduced by a change")
        unused = [vid for vid, v in new_versions.items()
                  if (item := item_of(v.entry_id)) is None or item.entry_version_id != vid]
        if unused:
            raise InvalidMemoryRequestError(f"new versions not referenced by the manifest: {sorted(unused)}")
        for entry_id in changes:  # a diff places every change; this names a stray one
            if item_of(entry_id) is None:
                raise InvalidMemoryRequestError(f"change for {entry_id!r}, which is not in the manifest")
        active = None
        if diff is not None:  # vectors are written for changed entries: look there first
            active = {p.new.entry_version_id: p.new for p in diff.placed if p.new.state == "active"}
            if not set(plan.vectors) <= set(active):
                active = None
        if active is None:
            active = {i.entry_version_id: i for i in content.manifest.active}
        self._validate_vectors(plan.vectors, active)

    def _validate_vectors(self, vectors: Mapping[str, tuple[str, tuple[float, ...]]], active: Mapping[str, Any],
                          profile: EmbeddingProfile | None = None) -> None:
        """A vector may enter a projection only for an active head version, with the
        embedding hash of (this deployment's profile — or the one a migration moves to —,
        that version's content hash) and values that pass the profile's checks."""
        profile = profile or self.embedding_profile
        if vectors and profile is None:
            raise CapabilityNotSupportedError("this database has no vector projection; vectors cannot be written")
        if not vectors:
            return
        hasher = _embedding_hasher(profile)
        for version_id, (embedding_hash, _) in vectors.items():
            item = active.get(version_id)
            if item is None:
                raise InvalidMemoryRequestError(f"vector for {version_id!r}, which is not an active head version")
            if embedding_hash != hasher(item.entry_content_hash):
                raise InvalidEmbeddingError(
                    f"vector for {version_id!r} was computed for another profile or other content"
                )
        # the values of every vector at once (numpy): per vector, 384 Python-level steps
        checked_array([values for _, values in vectors.values()], profile)

    def expected_embedding_hash(self, entry_hash: str, profile: EmbeddingProfile | None = None) -> str:
        return _embedding_hasher(profile or self.embedding_profile)(entry_hash)

    def embedding_hash_template(self) -> tuple[bytes, bytes] | None:
        """``canonical.embedding_hash_template`` of this database's profile."""
        return _embedding_template(self.embedding_profile)

    @staticmethod
    def _check_new_version_content(v, plan, item) -> None:
        where = f"entry {v.entry_id!r}"
        if v.memory_artifact_id != plan.artifact_id or v.entry_id != item.entry_id:
            raise InvalidMemoryRequestError(f"{where}: version belongs to another Memory or entry")
        if not canonical.is_valid_id(v.entry_version_id):
            raise InvalidMemoryRequestError(f"{where}: invalid entry_version_id")
        if v.created_in_revision != plan.next_revision:
            raise InvalidMemoryRequestError(f"{where}: created_in_revision must be {plan.next_revision}")
        validate_kind(v.kind)
        if normalize_text(v.text) != v.text:
            raise InvalidMemoryRequestError(f"{where}: text is not NFC-normalized and stripped")
        if version_content_hash(v) != v.entry_content_hash or v.entry_content_hash != item.entry_content_hash:
            raise InvalidMemoryRequestError(f"{where}: entry_content_hash does not match the canonical content")
        if v.sources != sorted_refs(v.sources) or v.artifacts != sorted_refs(v.artifacts):
            raise InvalidMemoryRequestError(f"{where}: references must be sorted and unique")

    def _validate_new_version(self, v, plan, item, pred, op_sources, op_artifacts) -> None:
        """The rules that need the predecessor and the operation's evidence (the
        version's own content was checked by _check_plan before the lock)."""
        where = f"entry {v.entry_id!r}"
        if pred is None:
            if v.version != 1 or v.previous_version_id is not None:
                raise InvalidMemoryRequestError(f"{where}: a new entry starts at version 1 with no predecessor")
            allowed_s, allowed_a = op_sources, op_artifacts
        else:
            if v.previous_version_id != pred.entry_version_id or v.version != pred.version + 1:
                raise InvalidMemoryRequestError(
                    f"{where}: a revision must follow the base manifest's current version directly"
                )
            if not set(pred.sources) <= set(v.sources) or not set(pred.artifacts) <= set(v.artifacts):
                raise InvalidMemoryRequestError(f"{where}: a revision keeps its predecessor's evidence")
            allowed_s, allowed_a = op_sources | set(pred.sources), op_artifacts | set(pred.artifacts)
        outside = [r.name for r in v.sources if r not in allowed_s] + [str(a) for a in v.artifacts if a not in allowed_a]
        if outside:
            raise InvalidMemoryRequestError(
                f"{where}: evidence {outside} is not part of this operation's evidence (or the predecessor's)"
            )

