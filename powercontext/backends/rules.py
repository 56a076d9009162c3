"""Domain rules that both the service (on input) and the backend (inside the
transaction) apply, written once: text, reason and kind normalization, the entry
hash of a stored version, reference codecs, and L2 → cosine for unit vectors."""

from __future__ import annotations

import contextlib
import difflib
import json
from typing import Iterator

from .. import analyzer, canonical
from ..errors import AnalyzerMismatchError, InvalidCitationError, InvalidMemoryRequestError, SchemaTooNewError, shown
from ..model import (
    KNOWN_KINDS,
    ArtifactRef,
    MemoryEntryVersion,
    SourceRef,
)

MAX_TEXT_BYTES = 8192
MAX_REASON_CODE_POINTS = 512
MAX_KIND_LENGTH = 64



# ------------------------------------------------------------------ shared validators


def require_utf8(text: str, what: str) -> str:
    """Refuse strings that have no UTF-8 form (lone surrogates): they can be neither
    hashed canonically nor stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidMemoryRequestError(
            f"{what} contains a lone surrogate ({exc.object[exc.start:exc.end]!r} at {exc.start}); "
            "it has no UTF-8 form. Decode your input with errors='replace' first"
        ) from None
    return text


def normalize_text(text: object) -> str:
    if not isinstance(text, str):
        raise InvalidMemoryRequestError(f"entry text must be a string, not {type(text).__name__}")
    text = canonical.nfc(require_utf8(text, "entry text")).strip()
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
    reason = canonical.nfc(require_utf8(reason, "reason")).strip()
    if not reason:
        return None
    if len(reason) > MAX_REASON_CODE_POINTS:
        raise InvalidMemoryRequestError(
            f"reason has {len(reason)} code points; the limit is {MAX_REASON_CODE_POINTS}"
        )
    return reason


def validate_kind(kind: object) -> str:
    """One rule for kinds, here and in the corpus validator: one of the RFC's known MVP
    values. (Readers keep any kind a stored row holds; writers make only these, so a
    typo like ``fcat`` is refused instead of becoming a kind of its own.)"""
    if isinstance(kind, str) and kind in KNOWN_KINDS:
        return kind
    close = difflib.get_close_matches(kind, KNOWN_KINDS, n=1) if isinstance(kind, str) and len(kind) < 100 else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise InvalidMemoryRequestError(f"kind must be one of {', '.join(KNOWN_KINDS)}, got {shown(kind)}{hint}")


MAX_METADATA_DEPTH = 32


def source_fields(source: object) -> tuple[str, str, str | None, dict]:
    """The validated (name, content, description, metadata) of a ContentSource: NFC
    name and content, UTF-8-encodable strings, and metadata that is a JSON object of
    bounded depth (canonical JSON recurses; a 5,000-deep object must not)."""
    from ..model import ContentSource

    if not isinstance(source, ContentSource):
        raise InvalidMemoryRequestError("persist() takes a ContentSource(name, content, description=None, metadata={})")
    if not isinstance(source.name, str):
        raise InvalidMemoryRequestError(f"source name must be a string, got {type(source.name).__name__}")
    name = canonical.nfc(require_utf8(source.name, "source name"))
    if not canonical.is_valid_id(name):
        raise InvalidMemoryRequestError(f"source name must be printable ASCII without spaces, ≤128 chars: {source.name!r:.140}")
    if not isinstance(source.content, str):
        raise InvalidMemoryRequestError("source content must be a string")
    content = canonical.nfc(require_utf8(source.content, f"source {name!r} content"))
    description = source.description
    if description is not None:
        if not isinstance(description, str):
            raise InvalidMemoryRequestError("source description must be a string or None")
        description = require_utf8(description, f"source {name!r} description")
    metadata = source.metadata
    if not isinstance(metadata, dict):
        try:
            from collections.abc import Mapping

            if not isinstance(metadata, Mapping):
                raise TypeError
            metadata = dict(metadata)
        except TypeError:
            raise InvalidMemoryRequestError(
                f"source metadata must be a mapping (a JSON object), got {type(source.metadata).__name__}"
            ) from None
    _check_json_depth(metadata, f"source {name!r} metadata")
    return name, content, description, metadata


def _check_json_depth(value: object, what: str) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            raise InvalidMemoryRequestError(f"{what} is nested deeper than {MAX_METADATA_DEPTH} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise InvalidMemoryRequestError(f"{what} has a non-string key {key!r:.40}; JSON keys are strings")
                require_utf8(key, what)
                stack.append((child, depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            require_utf8(item, what)


def version_content_hash(version: MemoryEntryVersion) -> str:
    return canonical.entry_content_hash(version.content())


REVISION_LINEAGE_DOMAIN = b"powercontext:revision-lineage:v1\0"


def lineage_hash(lineage_text: str) -> str:
    """The hash a Revision row stores beside its lineage. The RFC's content hash
    covers MemoryContent only; without this, a Revision's operation evidence could be
    edited unnoticed."""
    return canonical.sha256_hex(REVISION_LINEAGE_DOMAIN, lineage_text.encode("utf-8"))


def refs_to_json(refs) -> str:
    if not refs:  # most versions cite nothing: JCS of [] without the encoder (100k calls a 50k load)
        return "[]"
    return canonical.canonical_text([r.to_canonical() for r in refs])


@contextlib.contextmanager
def stored_row(what: str) -> Iterator[None]:
    """Decode a stored row: a row that no longer parses (edited, truncated) is an
    integrity failure of what it belongs to, never a raw JSONDecodeError/KeyError."""
    try:
        yield
    except (ValueError, KeyError, TypeError, AttributeError, InvalidMemoryRequestError) as exc:
        raise InvalidCitationError(f"{what} is not a valid stored row (altered?): {type(exc).__name__}: {exc}"[:500]) from None


def source_refs_from_json(text: str) -> tuple[SourceRef, ...]:
    if text == "[]":  # most versions cite nothing: no parser, no context manager per row
        return ()
    with stored_row("a source reference list"):
        return tuple(SourceRef(name=r["name"], content_hash=r["content_hash"]) for r in json.loads(text))


def artifact_refs_from_json(text: str) -> tuple[ArtifactRef, ...]:
    if text == "[]":
        return ()
    with stored_row("an artifact reference list"):
        return tuple(ArtifactRef(r["artifact_id"], r["revision"]) for r in json.loads(text))


def cosine_from_l2(distance: float) -> float:
    """Unit vectors: ‖a−b‖² = 2 − 2·cos, so cos = 1 − d²/2."""
    return 1.0 - (distance * distance) / 2.0




#: The powercontext_schema key of a database's layout version. Each backend numbers its
#: own layouts (``LAYOUT_VERSION`` in its module): a layout change that an older
#: library's writes would break bumps it, and an open refuses a number above its own.
SCHEMA_VERSION_KEY = "schema_version"


def check_schema_version(recorded: str | None, where: str, newest: int) -> None:
    """Refuse (SchemaTooNewError) a database whose recorded layout version is newer than
    ``newest``, or is not a version number at all (no release wrote that). A database
    without the record predates it: version 1."""
    if recorded is None:
        return
    known = recorded.isascii() and recorded.isdigit()
    if known and int(recorded) <= newest:
        return
    raise SchemaTooNewError(
        f"{where} has schema version {shown(recorded)}, newer than this library reads (up to {newest}): "
        "it was written by a newer powercontext — upgrade powercontext to open it",
        recorded, newest,
    )


def schema_records(stored: dict[str, str], where: str, requested: str | None = None,
                   layout_version: int = 1) -> tuple[list[tuple[str, str]], str]:
    """The powercontext_schema rows a new database needs (none for an existing one),
    and the analyzer version the database uses. ``layout_version``: the backend's.

    A new database records ``requested`` (default ``analyzer.ANALYZER_VERSION``). An
    existing one keeps the analyzer that built its ``searchable_text``; asking for
    another is refused: its stored tokens would not match the query terms."""
    if not stored:
        version = analyzer.get(requested).version  # validates the name
        return [(SCHEMA_VERSION_KEY, str(layout_version)), ("analyzer", version), ("vector_sums", "1")], version
    recorded = stored.get("analyzer")
    check_analyzer(recorded, where, requested)
    return [], recorded


def check_analyzer(recorded: str | None, where: str, requested: str | None = None) -> None:
    """Refuse (AnalyzerMismatchError) an unknown recorded analyzer, or one other than
    ``requested``."""
    if recorded not in analyzer.ANALYZER_VERSIONS:
        raise AnalyzerMismatchError(
            f"{where} was indexed with analyzer {recorded!r}, which this library does not know "
            f"(it knows {', '.join(analyzer.ANALYZER_VERSIONS)}): open it with the library that created it"
        )
    if requested is not None and requested != recorded:
        analyzer.get(requested)  # an unknown name is a bad argument, not a mismatch
        raise AnalyzerMismatchError(
            f"{where} was indexed with analyzer {recorded}, not {requested}: open it without analyzer= "
            f"(or analyzer={recorded!r}), or migrate it with await svc.rebuild_projections(analyzer={requested!r})"
        )
