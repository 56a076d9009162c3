"""Scopes and captured-Source identities (RFC 001 "Scope and Memory identity").

A scope is an opaque, integration-owned partition key: a non-empty string of at most
256 characters. The Runtime never parses it and never normalizes it (``"A"`` and
``"a"`` are two scopes). A ``source_id`` names a captured Source within a scope; it
follows the Memory layer's Source-name rule (printable ASCII, no spaces) so that the
Source can be cited as Memory evidence, with room for the scope's Memory id in front.
"""

from __future__ import annotations

from .. import canonical
from ..errors import InvalidRuntimeRequestError, shown

MAX_SCOPE_LENGTH = 256
MAX_SOURCE_ID_LENGTH = 90
SOURCE_TYPE = "content"


def validate_scope(scope: object) -> str:
    if not isinstance(scope, str):
        raise InvalidRuntimeRequestError(f"a scope must be a string, got {type(scope).__name__}")
    if not scope:
        raise InvalidRuntimeRequestError("a scope must be a non-empty string")
    if len(scope) > MAX_SCOPE_LENGTH:
        raise InvalidRuntimeRequestError(f"a scope has at most {MAX_SCOPE_LENGTH} characters, got {len(scope)}")
    try:
        scope.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRuntimeRequestError("a scope must be valid Unicode text (it contains a lone surrogate)") from None
    if "\x00" in scope:
        raise InvalidRuntimeRequestError("a scope must not contain NUL characters")
    return scope


def validate_source_id(source_id: object) -> str:
    if not (canonical.is_valid_id(source_id) and len(source_id) <= MAX_SOURCE_ID_LENGTH):  # type: ignore[arg-type]
        raise InvalidRuntimeRequestError(
            f"source_id must be printable ASCII without spaces, 1..{MAX_SOURCE_ID_LENGTH} characters, got {shown(source_id)}"
        )
    return source_id  # type: ignore[return-value]


def memory_source_name(memory_artifact_id: str, source_id: str) -> str:
    """The name a captured Source has in the Memory layer's Source store: the scope's
    Memory id, ``/``, the source_id. Unique across scopes because bindings are."""
    return f"{memory_artifact_id}/{source_id}"
