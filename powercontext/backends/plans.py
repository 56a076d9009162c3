"""What the service hands a backend: a commit plan, a retrieval request, and what
retrieval returns (per-channel candidates with raw signals, admission not yet run)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..model import (
    ArtifactRef,
    ChannelCandidate,
    MemoryContent,
    MemoryEntryVersion,
    RevisionLineage,
)




# ------------------------------------------------------------------ plan and request


@dataclass(frozen=True)
class CommitPlan:
    """Everything one Memory commit writes, built by the service outside the
    transaction and re-validated by the backend inside it."""

    artifact_id: str
    base_revision: int | None  # None creates the Memory
    content: MemoryContent
    lineage: RevisionLineage
    new_versions: tuple[MemoryEntryVersion, ...] = ()
    # entry_version_id -> (embedding_content_hash, vector); absent = no vector written
    vectors: Mapping[str, tuple[str, tuple[float, ...]]] = field(default_factory=dict)

    @property
    def next_revision(self) -> int:
        return 1 if self.base_revision is None else self.base_revision + 1


@dataclass(frozen=True)
class RetrievalRequest:
    memories: tuple[ArtifactRef, ...]  # each must still be its Memory's head
    terms: tuple[str, ...]
    channels: tuple[str, ...]
    pool: int
    query_vector: tuple[float, ...] | None = None
    # analyzer.script of the query: candidates carry it beside their own script
    # (cross-script FTS, language-aware vector admission). None = not measured.
    query_script: str | None = None


@dataclass(frozen=True)
class Retrieval:
    """Per-channel candidates in backend order, with raw signals, already filtered
    through the authoritative head manifests. Admission has not run yet."""

    memories: tuple[ArtifactRef, ...]
    terms: tuple[str, ...]
    channels: Mapping[str, tuple[ChannelCandidate, ...]]


