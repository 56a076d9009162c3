"""Search and its first step (RFC 000 "Search and reads"): retrieve → admit → fuse.
Only ``retrieve`` touches the database; admission and fusion are the pure functions of
``admission``, which the evaluation harness replays offline. Mixin of MemoryService
(it reads ``backend``, ``embedding`` and ``policy`` from the service)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import analyzer
from ..backends.plans import Retrieval, RetrievalRequest
from ..bundled import open_with
from ..embedding import embed_checked
from ..errors import (
    CapabilityNotSupportedError,
    EmbeddingUnavailableError,
    InvalidMemoryRequestError,
    shown,
)
from ..model import ArtifactRef, MemoryRevision, MemorySearchResult
from . import admission, arguments
from .admission import AdmissionPolicy
from .calibration import Calibration, InvalidCalibrationError, annotate, calibration_for
from .search_log import SearchLogRecord

MODES = ("fts", "vector", "hybrid", "auto")
MAX_LIMIT = 1000


class MemorySearch:
    """search / retrieve of MemoryService."""

    @property
    def calibration(self) -> Calibration | None:
        """The calibration every retrieved candidate's ``probability`` is read from (what
        ``AdmissionPolicy(min_probability=…)`` admits by): the package's artefact for
        the database's embedding profile unless set; None = raw thresholds only."""
        if "_calibration" not in self.__dict__:
            self.__dict__["_calibration"] = calibration_for(self.backend.embedding_profile)
        return self.__dict__["_calibration"]

    @calibration.setter
    def calibration(self, value: Calibration | None) -> None:
        """Use another artefact (e.g. ``Calibration.load`` of one fitted on your labels by
        ``harness.calibrate``); refused when it was fitted for another profile."""
        if value is not None:
            if not isinstance(value, Calibration):
                raise InvalidCalibrationError(f"calibration must be a Calibration or None, got {shown(value)}")
            value.check_profile(self.backend.embedding_profile)
        self.__dict__["_calibration"] = value

    def _policy(self, policy: Any) -> AdmissionPolicy:
        """The policy to admit by: the caller's, or the service's when None."""
        if policy is None:
            return self.policy
        if not isinstance(policy, AdmissionPolicy):
            raise InvalidMemoryRequestError(f"policy must be an AdmissionPolicy or None, got {shown(policy)}")
        return policy

    async def _search_refs(self, memories: Any) -> tuple[ArtifactRef, ...]:
        if isinstance(memories, (MemoryRevision, ArtifactRef)):
            memories = (memories,)
        refs = tuple(dict.fromkeys(arguments.as_ref(m) for m in arguments.sequence(memories, "memories")))
        if not refs:
            raise InvalidMemoryRequestError("search needs at least one explicit Memory")
        # Each ref must be its Memory's head: checked by the backend inside the search's
        # read transaction (NotHeadError / ArtifactNotFoundError), not by a round trip here.
        return refs

    async def _plan_mode(self, mode: str, refs: tuple[ArtifactRef, ...]) -> tuple[str, str | None]:
        """The mode actually used and, for auto falling back, why."""
        if mode not in MODES:
            raise InvalidMemoryRequestError(f"mode must be one of {MODES}, got {shown(mode)}")
        if mode == "fts":
            return "fts", None
        reason = await self._vector_unavailable(refs)
        if mode == "auto":
            return ("fts", reason) if reason else ("hybrid", None)
        if reason:
            raise CapabilityNotSupportedError(f"{mode} search is unavailable: {reason}")
        return mode, None

    async def _vector_unavailable(self, refs) -> str | None:
        if self.embedding is None:
            held = self.backend.embedding_profile
            if held is None:
                return "no embedding model is configured (open with embedding='minilm')"
            return f"no embedding model is configured (the database holds {held.profile_id!r} vectors: open with {open_with(held)})"
        db = await self.backend.capabilities()
        if not db.vector:
            return "the database has no vector projection"
        if self.embedding.profile != db.embedding_profile:
            return (f"the model's profile {self.embedding.profile.profile_id!r} does not match the database's "
                    f"{db.embedding_profile.profile_id!r}")
        if not await self.backend.vector_complete(refs):
            return "a selected Memory has missing or stale vectors; run svc.rebuild_projections()"
        return None

    async def _query_vector(self, query: str) -> tuple[float, ...]:
        (vector,) = await embed_checked(self.embedding, [query], self.backend.embedding_profile, role="query")
        return vector

    async def retrieve(
        self, query: str, memories: Any, limit: int = 8, mode: str = "auto", policy: AdmissionPolicy | None = None
    ) -> tuple[Retrieval, str, str | None]:
        """Step one of search: the per-channel candidates with raw signals."""
        terms = arguments.query_terms(query, getattr(self.backend, "analyzer", None))
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidMemoryRequestError(f"limit must be an integer in 1..{MAX_LIMIT}")
        policy = self._policy(policy)
        refs = await self._search_refs(memories)
        used, fallback = await self._plan_mode(mode, refs)
        vector = None
        if used in ("vector", "hybrid"):
            policy.check_profile(self.backend.embedding_profile)
            try:
                vector = await self._query_vector(query)
            except EmbeddingUnavailableError as exc:
                if mode != "auto":
                    raise CapabilityNotSupportedError(f"{mode} search is unavailable: {exc}") from exc
                used, fallback = "fts", f"the embedding model is unavailable: {exc}"
        channels = {"fts": ("fts",), "vector": ("vector",), "hybrid": ("fts", "vector")}[used]
        request = RetrievalRequest(
            memories=refs,
            terms=terms,
            channels=channels,
            pool=policy.pool_size(limit),
            query_vector=vector,
            query_script=analyzer.script(query),
        )
        retrieval = await self.backend.retrieve(request)
        # the calibrated probability is a signal like the others: annotated here, so the
        # harness caches it with the pool and replays min_probability exactly
        retrieval = replace(retrieval, channels=annotate(retrieval.channels, self.calibration))
        return retrieval, used, fallback

    async def search(
        self,
        query: str,
        memories: Any,
        limit: int = 8,
        mode: str = "auto",
        policy: AdmissionPolicy | None = None,
        explain: bool = False,
    ) -> MemorySearchResult:
        """Retrieve, admit each channel by ``policy``, fuse with RRF. Returns hits and
        the mode actually used; ``explain=True`` also returns every decision."""
        policy = self._policy(policy)
        retrieval, used, fallback = await self.retrieve(query, memories, limit, mode, policy)
        hits = admission.fuse(retrieval.channels, policy, limit)
        decisions = admission.explain(retrieval.channels, policy) if explain else ()
        if self._search_log.enabled:  # background, best effort: never fails this search
            profile = self.backend.embedding_profile
            self._search_log.record(
                question=query, memories=retrieval.memories, requested_mode=mode, mode=used,
                fallback_reason=fallback, embedding_profile=None if profile is None else profile.profile_id,
                policy=policy, limit=limit, channels=retrieval.channels, hits=hits, decisions=decisions,
            )
        return MemorySearchResult(
            query=query, hits=hits, mode=used, requested_mode=mode, policy=policy,
            decisions=decisions, fallback_reason=fallback,
        )

    # ------------------------------------------------------------------ search log

    async def search_log(self, since: Any = None, limit: int | None = None) -> list[SearchLogRecord]:
        """The logged searches (``pc.open(..., search_log=True)``), oldest first: those
        logged at or after ``since`` (an aware datetime), at most the newest ``limit``
        (default: all kept, at most the cap). Each record has the question, the admitted
        ``hits`` and every ``rejected`` candidate with its signals and ``reason``."""
        return await self._search_log.read(since, limit)

    async def search_log_frame(self, since: Any = None, limit: int | None = None):
        """``search_log(...)`` as a pandas DataFrame, one row per search."""
        return await self._search_log.frame(since, limit)

    async def clear_search_log(self, before: Any = None) -> int:
        """Empty the search log (or drop the records logged before ``before``, an aware
        datetime); returns how many were deleted. The Memories are untouched."""
        return await self._search_log.clear(before)

    @property
    def search_log_failures(self) -> int:
        """Appends to the search log that failed since open (each was dropped; the
        searches they logged returned normally)."""
        return self._search_log.failures
