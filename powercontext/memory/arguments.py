"""Checks of the public MemoryService arguments, before any work is done.

Every value a caller passes is refused here with an InvalidMemoryRequestError that
names the argument, instead of surfacing later as a TypeError from ``tuple(None)``,
a UnicodeEncodeError from the driver, or seconds of analyzer CPU on a megabyte query.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .. import analyzer, canonical
from ..backends.rules import require_utf8
from ..errors import InvalidMemoryRequestError, shown
from ..model import ArtifactRef, MemoryRevision

#: A search query is analyzed on every call: bound the work (documented in the README).
MAX_QUERY_BYTES = 8192
MAX_QUERY_TERMS = 256


def as_ref(memory: Any) -> ArtifactRef:
    """Accept a MemoryRevision or an ArtifactRef wherever a Memory is named."""
    if isinstance(memory, MemoryRevision):
        return memory.ref
    if isinstance(memory, ArtifactRef):
        return memory
    raise InvalidMemoryRequestError(
        f"expected a MemoryRevision or ArtifactRef, got {type(memory).__name__}; "
        "use the value remember() returned or svc.head(artifact_id)"
    )


def sequence(value: Any, name: str) -> tuple[Any, ...]:
    """A tuple of the items of a list/tuple/iterable argument (not a string, not None)."""
    if value is None or isinstance(value, (str, bytes, bytearray)) or not isinstance(value, Iterable):
        raise InvalidMemoryRequestError(
            f"{name} must be a list or tuple, got {type(value).__name__}" + (" (pass () for none)" if value is None else "")
        )
    return tuple(value)


def text_id(value: Any, name: str) -> str:
    """An id-like string argument (entry_id, entry_version_id, artifact id, Source
    name): no stored row can have any other, so anything else is refused here, quoted
    short, instead of travelling to the database and back into a long message."""
    if not isinstance(value, str) or not value:
        raise InvalidMemoryRequestError(f"{name} must be a non-empty string, got {type(value).__name__}")
    require_utf8(value, name)
    if not canonical.is_valid_id(value):
        raise InvalidMemoryRequestError(
            f"{name} must be printable ASCII without spaces, at most {canonical.MAX_ID_LENGTH} characters; "
            f"got {shown(value)}"
        )
    return value


def query_terms(query: Any, using: Any = None) -> tuple[str, ...]:
    """The analyzer terms of a search query, within the query caps. ``using``: the
    database's ``analyzer.Analyzer`` (default: Analyzer v1's module functions)."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidMemoryRequestError("query must be a non-empty string")
    require_utf8(query, "query")
    size = len(query.encode("utf-8"))
    if size > MAX_QUERY_BYTES:
        raise InvalidMemoryRequestError(
            f"query is {size} UTF-8 bytes; the limit is {MAX_QUERY_BYTES}. Search with the key phrase, not a document"
        )
    terms = (using or analyzer).query_terms(query)
    if len(terms) > MAX_QUERY_TERMS:
        raise InvalidMemoryRequestError(
            f"query has {len(terms)} distinct terms; the limit is {MAX_QUERY_TERMS}. Shorten it to its key words"
        )
    return terms
