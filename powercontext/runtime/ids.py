"""Bound Memory identities: the first Revision of a scope takes the id its binding
reserved (RFC 001: "Binding existence reserves an identity").

``MemoryService.remember(memory=None)`` mints a new Artifact id with its ``ids``
minter. The Runtime wraps that minter once (``BindingIdMinter``); while the Runtime
creates a scope's first Revision it sets the reserved id in a context variable, which
the wrapper hands out instead of minting. Every other id comes from the wrapped minter.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Iterator

from ..canonical import IdMinter

_RESERVED: ContextVar[str | None] = ContextVar("powercontext_reserved_artifact_id", default=None)


class BindingIdMinter(IdMinter):
    def __init__(self, inner: IdMinter) -> None:
        self.inner = inner

    def artifact_id(self) -> str:
        reserved = _RESERVED.get()
        return reserved if reserved is not None else self.inner.artifact_id()

    def entry_id(self) -> str:
        return self.inner.entry_id()

    def entry_version_id(self) -> str:
        return self.inner.entry_version_id()


def bind_minter(service) -> None:
    """Install the wrapper on a MemoryService (idempotent)."""
    if not isinstance(service.ids, BindingIdMinter):
        service.ids = BindingIdMinter(service.ids)


@contextlib.contextmanager
def reserved_artifact_id(artifact_id: str) -> Iterator[None]:
    token = _RESERVED.set(artifact_id)
    try:
        yield
    finally:
        _RESERVED.reset(token)
