"""``svc.sources``: the Source half of the service (RFC 000 "Sources")."""

from __future__ import annotations

from ..backends.base import DatabaseMemoryBackend
from ..model import ContentSource, Source
from . import arguments


class SourceStore:
    """``svc.sources``: persist immutable evidence before citing it."""

    def __init__(self, backend: DatabaseMemoryBackend) -> None:
        self._backend = backend

    async def persist(self, source: ContentSource) -> Source:
        """Persist a Source (a ContentSource or a typed one from powercontext.evidence).
        The same payload twice is idempotent; the same name with a different payload
        raises SourceConflictError."""
        if hasattr(source, "to_content_source"):
            source = source.to_content_source()
        return await self._backend.persist_source(source)

    async def get(self, name: str) -> Source:
        """The Source persisted under ``name``, re-hashed on read: an altered payload
        raises InvalidCitationError. (Its hash is anchored where entry versions cite it;
        ``svc.verify`` checks those SourceRefs too.)"""
        return await self._backend.get_source(arguments.text_id(name, "name"))
