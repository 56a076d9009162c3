"""Frozen value objects of the Memory layer (RFC 000 "Data model").

Objects that have a canonical JSON form say so with ``to_canonical()``; the hashes in
``canonical.py`` are always computed over that form, never over ad-hoc dicts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

from . import canonical
from .errors import InvalidMemoryRequestError
# The manifest lives in its own module; it is part of the data model's public names.
from .manifest import MANIFEST_FORMAT, EntryState, MemoryManifest, MemoryManifestEntry  # noqa: F401

ChangeOp = Literal["add", "revise", "deactivate", "reactivate"]
Channel = Literal["fts", "vector"]
SearchMode = Literal["fts", "vector", "hybrid", "auto"]

KNOWN_KINDS = ("fact", "preference", "decision", "constraint", "working_note")
MEMORY_SCHEMA = "powercontext.memory.v1"
MEMORY_FAMILY = "memory"
#: Revisions are stored as signed 64-bit integers on both databases.
MAX_REVISION = 2**63 - 1


@dataclass(frozen=True, slots=True, order=True)
class ArtifactRef:
    """An exact Artifact Revision: the Artifact id and the Revision number."""

    artifact_id: str
    revision: int

    def __post_init__(self) -> None:
        # The public boundary: a ref is hashed into entries and bound into SQL, so a
        # float, a string number or an out-of-range integer is refused here, once.
        if not isinstance(self.artifact_id, str) or not canonical.is_valid_id(self.artifact_id):
            raise InvalidMemoryRequestError(
                f"ArtifactRef.artifact_id must be an id string (printable ASCII, ≤128 chars), got {self.artifact_id!r:.80}"
            )
        if type(self.revision) is not int or not 0 <= self.revision <= MAX_REVISION:
            raise InvalidMemoryRequestError(
                f"ArtifactRef.revision must be an integer in 0..2**63-1, got {self.revision!r:.80}"
            )

    def to_canonical(self) -> dict[str, Any]:
        return {"artifact_id": self.artifact_id, "revision": self.revision}

    def __str__(self) -> str:
        return f"{self.artifact_id}@{self.revision}"


# ---------------------------------------------------------------------------- Sources


@dataclass(frozen=True, slots=True)
class ContentSource:
    """Evidence to persist: a named, immutable payload (a file read, a user note …)."""

    name: str
    content: str
    description: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, order=True)
class SourceRef:
    """How an entry version refers to a persisted Source: name + content hash."""

    name: str
    content_hash: str

    def to_canonical(self) -> dict[str, Any]:
        return {"content_hash": self.content_hash, "name": self.name}


@dataclass(frozen=True, slots=True)
class Source:
    """A persisted Source, as returned by ``svc.sources.persist``."""

    name: str
    content: str
    description: str | None
    metadata: Mapping[str, Any]
    content_hash: str

    @property
    def ref(self) -> SourceRef:
        return SourceRef(self.name, self.content_hash)

    def payload(self) -> dict[str, Any]:
        return source_payload(self.name, self.content, self.description, self.metadata)

    def __repr__(self) -> str:  # lean: never dump the whole payload
        return f"Source(name={self.name!r}, content_hash={self.content_hash[:12]}…, {len(self.content)} chars)"


def source_payload(name: str, content: str, description: str | None, metadata: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "content": content,
        "description": description,
        "metadata": dict(metadata),
    }


def sorted_refs(refs) -> tuple:
    """Deduplicate and sort references by their canonical key: (name, content_hash)
    for Sources, (artifact_id, revision) for Artifacts. Python compares strings by code
    point, which is the same order as their UTF-8 bytes."""
    if refs == ():  # most entries cite nothing, and a commit asks ~10 times per entry
        return ()
    return tuple(sorted(set(refs)))


@dataclass(frozen=True, slots=True)
class MemoryChange:
    op: ChangeOp
    entry_id: str
    from_entry_version_id: str | None
    to_entry_version_id: str | None
    reason: str | None = None

    def to_canonical(self) -> dict[str, Any]:
        return {
            "entry_id": self.entry_id,
            "from_entry_version_id": self.from_entry_version_id,
            "op": self.op,
            "reason": self.reason,
            "to_entry_version_id": self.to_entry_version_id,
        }


@dataclass(frozen=True, slots=True)
class MemoryContent:
    manifest: MemoryManifest
    changes: tuple[MemoryChange, ...]
    schema: str = MEMORY_SCHEMA

    def to_canonical(self) -> dict[str, Any]:
        return {
            "changes": [c.to_canonical() for c in self.changes],
            "manifest": self.manifest.to_canonical(),
            "schema": self.schema,
        }

    def canonical(self) -> tuple[str, str]:
        """(canonical JSON text, artifact content hash) from one canonicalization: a
        flat-v1 manifest can hold thousands of entries, so never encode it twice."""
        data = canonical.canonical_bytes(self.to_canonical())
        return data.decode("utf-8"), canonical.sha256_hex(canonical.ARTIFACT_CONTENT_DOMAIN, data)

    def canonical_text(self) -> str:
        return self.canonical()[0]

    @property
    def content_hash(self) -> str:
        return self.canonical()[1]

    @classmethod
    def from_json(cls, text: str) -> "MemoryContent":
        data = json.loads(text)
        manifest = data["manifest"]
        return cls(
            schema=data["schema"],
            manifest=MemoryManifest(
                format=manifest["format"],
                entries=tuple(MemoryManifestEntry(**e) for e in manifest["entries"]),
            ),
            changes=tuple(MemoryChange(**c) for c in data["changes"]),
        )


@dataclass(frozen=True, slots=True)
class RevisionLineage:
    """Generic Revision lineage: the operation evidence only (RFC "Revision and entry
    lineage"); entry versions carry the evidence that supports their own content."""

    sources: tuple[SourceRef, ...] = ()
    artifacts: tuple[ArtifactRef, ...] = ()

    def to_canonical(self) -> dict[str, Any]:
        return {
            "artifacts": [a.to_canonical() for a in self.artifacts],
            "sources": [s.to_canonical() for s in self.sources],
        }

    @classmethod
    def from_json(cls, text: str) -> "RevisionLineage":
        data = json.loads(text)
        return cls(
            sources=tuple(SourceRef(**s) for s in data["sources"]),
            artifacts=tuple(ArtifactRef(**a) for a in data["artifacts"]),
        )


@dataclass(frozen=True, slots=True)
class MemoryRevision:
    """An exact, immutable Memory Artifact Revision (what remember/forget/… return).

    It can be passed wherever an ``ArtifactRef`` is expected."""

    ref: ArtifactRef
    content: MemoryContent
    content_hash: str
    lineage: RevisionLineage

    @property
    def artifact_id(self) -> str:
        return self.ref.artifact_id

    @property
    def revision(self) -> int:
        return self.ref.revision

    @property
    def manifest(self) -> MemoryManifest:
        return self.content.manifest

    @property
    def changes(self) -> tuple[MemoryChange, ...]:
        return self.content.changes

    def __repr__(self) -> str:
        m = self.content.manifest
        return (
            f"MemoryRevision({self.ref}, {len(m.active)} active, {len(m.inactive)} inactive, "
            f"{len(self.changes)} changes, hash {self.content_hash[:12]}…)"
        )


# ------------------------------------------------------------------------ Entries


@dataclass(frozen=True, slots=True)
class MemoryEntryVersion:
    memory_artifact_id: str
    entry_id: str
    entry_version_id: str
    version: int
    previous_version_id: str | None
    kind: str
    text: str
    sources: tuple[SourceRef, ...]
    artifacts: tuple[ArtifactRef, ...]
    entry_content_hash: str
    created_in_revision: int

    def content(self) -> dict[str, Any]:
        return entry_content(self.kind, self.text, self.sources, self.artifacts)


def entry_content(kind: str, text: str, sources, artifacts) -> dict[str, Any]:
    """The canonical content an entry hash commits to: kind, text and the sorted,
    deduplicated references. Identity, version and projections are excluded."""
    return {
        "artifacts": [a.to_canonical() for a in sorted_refs(artifacts)],
        "kind": kind,
        "sources": [s.to_canonical() for s in sorted_refs(sources)],
        "text": text,
    }


@dataclass(frozen=True, slots=True)
class MemoryEntryInput:
    """One candidate for remember(): ``entry=None`` adds a new entry, an exact current
    active ``MemoryEntryVersion`` revises it."""

    kind: str
    text: str
    sources: tuple[Source, ...] = ()
    artifacts: tuple[ArtifactRef, ...] = ()
    entry: MemoryEntryVersion | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryRevisionChanges:
    memory_ref: ArtifactRef
    changes: tuple[MemoryChange, ...]


@dataclass(frozen=True, slots=True)
class MemoryCitation:
    """A Handoff's exact citation of one entry version in one Revision."""

    memory_ref: ArtifactRef
    entry_id: str
    entry_version_id: str
    entry_content_hash: str


# ------------------------------------------------------------------------- Search


@dataclass(frozen=True, slots=True)
class EmbeddingProfile:
    """A deployment's fixed embedding profile. ``scripts`` declares the writing systems
    (``analyzer.SCRIPTS``) the model understands; None declares nothing, i.e. every
    script is taken as covered. It describes the model, not the stored vectors, so it
    is neither part of the canonical form a database records nor of equality."""

    profile_id: str
    model: str
    dimension: int
    distance: Literal["l2"] = "l2"
    normalization: str = "unit"
    scripts: tuple[str, ...] | None = field(default=None, compare=False)

    def covers(self, script: str | None) -> bool:
        """Does the model read text of this script? Undeclared coverage, unknown and
        letterless (``none``) texts count as covered."""
        return self.scripts is None or script in (None, "none") or script in self.scripts

    def to_canonical(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "distance": self.distance,
            "model": self.model,
            "normalization": self.normalization,
            "profile_id": self.profile_id,
        }


@dataclass(frozen=True, slots=True)
class MemoryCapabilities:
    fts: bool
    vector: bool
    hybrid: bool
    embedding_profile: EmbeddingProfile | None


# Not frozen, unlike the other values here: a search builds ~64 of these, and a frozen
# dataclass's __init__ (object.__setattr__ per field) took 2.7 µs each against 0.65 µs,
# 0.14 ms of the 1.5 ms a SQLite search may add to its SQL at 1k entries (issue 37's
# guard). Read-only by convention: nothing writes one after it is built, and it hashes
# by value like a frozen one.
@dataclass(slots=True, unsafe_hash=True)
class ChannelCandidate:
    """One candidate a channel retrieved, with the raw signals admission decides on.

    Already filtered by the authoritative head manifest (active, exact version, hash of
    the canonical bytes). ``rank`` is the backend's 1-based order within the channel."""

    channel: Channel
    rank: int
    memory_ref: ArtifactRef
    entry_id: str
    entry_version_id: str
    entry_content_hash: str
    kind: str
    text: str
    matched_terms: tuple[str, ...] = ()
    query_term_count: int = 0
    cosine: float | None = None
    # Signals of the admission families beyond the RFC's floors (None = not measured):
    # the centred cosine cos − q·c̄ (c̄: mean vector of the searched Memories' active
    # entries), the scripts of the candidate text and of the query (analyzer.script),
    # and whether the embedding profile covers both (vector channel).
    centred: float | None = None
    script: str | None = None
    query_script: str | None = None
    covered: bool | None = None
    # Full-text only: the candidate's place in the pool order (most distinct query terms
    # matched, then fewest stored terms, then memory and entry id; 0 = first), which both
    # databases compute alike. A search with a smaller pool holds the candidates whose
    # pool_rank is below it (``admission.within_pool``), whatever their rank.
    pool_rank: int | None = None
    # Both channels, when the search read full-text rows: the IDF-weighted share of the
    # query's terms the candidate's stored text holds (backends/specificity.py). A near
    # miss holds the topic's words and not the question's specific ones.
    support: float | None = None
    # The calibrated probability that the candidate answers the question and the
    # calibration cell it was read from (memory/calibration.py; None = no calibration
    # for the profile): a signal like the others, so the harness caches and replays it.
    probability: float | None = None
    calibration_cell: str | None = None

    def __repr__(self) -> str:  # lean: no token strings, no text dump
        signal = (f"{len(self.matched_terms)}/{self.query_term_count} terms" if self.channel == "fts"
                  else "no cosine" if self.cosine is None else f"cosine {self.cosine:.3f}")
        return f"ChannelCandidate({self.channel} #{self.rank}, {self.entry_id}, {signal})"

    @property
    def coverage(self) -> float:
        return len(self.matched_terms) / self.query_term_count if self.query_term_count else 0.0

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.memory_ref.artifact_id, self.entry_id, self.entry_version_id)


@dataclass(frozen=True, slots=True)
class MemoryHit:
    memory_ref: ArtifactRef
    entry_id: str
    entry_version_id: str
    text: str
    score: float
    matched_by: tuple[Channel, ...]
    kind: str = ""


@dataclass(frozen=True, slots=True)
class AdmissionDecision:
    """Why a candidate was admitted to or rejected from its channel (for --explain)."""

    candidate: ChannelCandidate
    admitted: bool
    reason: str


@dataclass(frozen=True)
class MemorySearchResult:
    """Search hits plus the mode actually used. Iterates over the hits."""

    query: str
    hits: tuple[MemoryHit, ...]
    mode: SearchMode
    requested_mode: SearchMode
    policy: Any
    decisions: tuple[AdmissionDecision, ...] = ()
    fallback_reason: str | None = None

    def __repr__(self) -> str:  # lean: decisions carry analyzer tokens; never dump them
        extra = f", {len(self.decisions)} decisions" if self.decisions else ""
        return f"MemorySearchResult({self.query!r}, mode={self.mode}, {len(self.hits)} hits{extra})"

    def __iter__(self):
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)

    def __getitem__(self, index):
        return self.hits[index]
