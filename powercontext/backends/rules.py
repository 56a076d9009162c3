"""Domain rules that both the service (on input) and the backend (inside the
transaction) apply, written once: text, reason and kind normalization, the entry
hash of a stored version, reference codecs, and L2 → cosine for unit vectors."""

from __future__ import annotations

import json

from .. import analyzer, canonical
from ..errors import BackendUnavailableError, InvalidMemoryRequestError
from ..model import (
    ArtifactRef,
    MemoryEntryVersion,
    SourceRef,
)

MAX_TEXT_BYTES = 8192
MAX_REASON_CODE_POINTS = 512
MAX_KIND_LENGTH = 64



# ------------------------------------------------------------------ shared validators


def normalize_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidMemoryRequestError(f"entry text must be a string, not {type(text).__name__}")
    text = canonical.nfc(text).strip()
    if not text:
        raise InvalidMemoryRequestError("entry text is empty after normalization")
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        raise InvalidMemoryRequestError(
            f"entry text is {size} UTF-8 bytes; the limit is {MAX_TEXT_BYTES}. Split it into entries of one topic each"
        )
    return text


def normalize_reason(reason: object) -> str | None:
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InvalidMemoryRequestError("reason must be a string or None")
    reason = canonical.nfc(reason).strip()
    if not reason:
        return None
    if len(reason) > MAX_REASON_CODE_POINTS:
        raise InvalidMemoryRequestError(
            f"reason has {len(reason)} code points; the limit is {MAX_REASON_CODE_POINTS}"
        )
    return reason


def validate_kind(kind: object) -> str:
    if (
        not isinstance(kind, str)
        or not kind
        or len(kind) > MAX_KIND_LENGTH
        or not all(33 <= ord(c) <= 126 for c in kind)
    ):
        raise InvalidMemoryRequestError(
            f"kind must be a non-empty ASCII word of at most {MAX_KIND_LENGTH} characters "
            f"(fact, preference, decision, constraint, working_note …), got {kind!r}"
        )
    return kind


def version_content_hash(version: MemoryEntryVersion) -> str:
    return canonical.entry_content_hash(version.content())


def refs_to_json(refs) -> str:
    return canonical.canonical_text([r.to_canonical() for r in refs])


def source_refs_from_json(text: str) -> tuple[SourceRef, ...]:
    return tuple(SourceRef(name=r["name"], content_hash=r["content_hash"]) for r in json.loads(text))


def artifact_refs_from_json(text: str) -> tuple[ArtifactRef, ...]:
    return tuple(ArtifactRef(r["artifact_id"], r["revision"]) for r in json.loads(text))


def cosine_from_l2(distance: float) -> float:
    """Unit vectors: ‖a−b‖² = 2 − 2·cos, so cos = 1 − d²/2."""
    return 1.0 - (distance * distance) / 2.0




SCHEMA_VERSION = "1"


def schema_records(stored: dict[str, str], where: str) -> list[tuple[str, str]]:
    """The powercontext_schema rows a new database needs, or none for an existing one.

    A database whose full-text projection was built by another analyzer version is
    refused: its stored tokens would not match today's query terms."""
    if not stored:
        return [("schema_version", SCHEMA_VERSION), ("analyzer", analyzer.ANALYZER_VERSION)]
    if stored.get("analyzer") != analyzer.ANALYZER_VERSION:
        raise BackendUnavailableError(
            f"{where} was indexed with analyzer {stored.get('analyzer')}, this library uses "
            f"{analyzer.ANALYZER_VERSION}: run rebuild_projections() after a migration"
        )
    return []
