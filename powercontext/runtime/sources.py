"""Captured Sources (RFC 001 "Capturing a Source", "Pydantic persistence boundary").

``ContentCapture`` is integration input: it validates its metadata as JSON and
snapshots it when constructed. ``ContentSourceAdapter.resolve`` turns it into the
canonical ``ContentSource`` (a Core ``powercontext.ContentSource`` whose name is the
caller's stable ``source_id``; Source type ``content``) through the same pydantic
``TypeAdapter`` that encodes and decodes the journal payload, so there is no
hand-written JSON parser anywhere on this path. Source evidence references (scope,
Source type, Source identity) have a private strict schema; decoding one yields only a
reference, and the Runtime then loads the canonical Source from storage, so a caller
cannot inject a Source that was never captured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError, with_config

from .. import canonical, model
from ..errors import InvalidRuntimeRequestError
from .errors import InvalidSourcePayloadError
from .scopes import MAX_SCOPE_LENGTH, MAX_SOURCE_ID_LENGTH, SOURCE_TYPE, validate_scope, validate_source_id

__all__ = [
    "CaptureReceipt", "CapturedSource", "ContentCapture", "ContentSource", "ContentSourceAdapter",
    "decode_evidence", "decode_source", "encode_source", "evidence_payload",
]


def _readable(exc: ValidationError, what: str) -> str:
    problems = "; ".join(
        f"{'.'.join(str(p) for p in err['loc'][:6]) or 'value'}: {err['msg']}" for err in exc.errors()[:3]
    )
    more = f" (+{exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
    return f"invalid {what}: {problems}{more}"


@with_config(ConfigDict(strict=True, extra="forbid", allow_inf_nan=False))
@dataclass(frozen=True, slots=True)
class ContentSource(model.ContentSource):
    """The canonical captured Source: ``name`` is the caller's ``source_id``; content,
    description and metadata are its canonical payload (NFC text, JSON metadata)."""

    source_type: ClassVar[str] = SOURCE_TYPE
    metadata: Mapping[str, JsonValue] = field(default_factory=dict)

    @property
    def source_id(self) -> str:
        return self.name

    def payload(self) -> dict[str, Any]:
        return model.source_payload(self.name, self.content, self.description, self.metadata)

    @property
    def payload_hash(self) -> str:
        return canonical.source_content_hash(self.payload())


_SOURCE_CODEC = TypeAdapter(ContentSource)


def encode_source(source: ContentSource) -> str:
    """The journal payload: ``TypeAdapter(ContentSource).dump_json``."""
    return _SOURCE_CODEC.dump_json(source).decode("utf-8")


def decode_source(payload: str | bytes, expected_hash: str | None = None) -> ContentSource:
    """``TypeAdapter(ContentSource).validate_json`` (strict, no extra fields), then the
    canonical-payload hash check: an altered row never decodes as truth."""
    try:
        source = _SOURCE_CODEC.validate_json(payload)
    except ValidationError as exc:
        raise InvalidSourcePayloadError(_readable(exc, "persisted Source payload")) from None
    try:
        validate_source_id(source.name)
        actual = source.payload_hash
    except (InvalidRuntimeRequestError, TypeError, ValueError) as exc:
        raise InvalidSourcePayloadError(f"invalid persisted Source payload: {exc}") from None
    if expected_hash is not None and actual != expected_hash:
        raise InvalidSourcePayloadError(
            f"persisted Source {source.name!r} does not hash to its recorded payload hash: the row was altered"
        )
    return source


class ContentCapture(BaseModel):
    """``ContentCapture(source_id=…, content=…, description=None, metadata={})``.

    Validated and snapshotted when constructed: metadata must be a JSON object (string
    keys; strings, finite numbers, booleans, null, lists and objects), and later
    changes to the caller's containers do not reach the capture. Invalid input raises
    ``InvalidRuntimeRequestError``."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, frozen=True)

    source_id: str = Field(min_length=1, max_length=MAX_SOURCE_ID_LENGTH)
    content: str
    description: str | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise InvalidRuntimeRequestError(_readable(exc, "ContentCapture")) from None
        validate_source_id(self.source_id)
        try:
            canonical.canonical_bytes(model.source_payload(self.source_id, self.content, self.description, self.metadata))
        except (TypeError, ValueError, UnicodeEncodeError) as exc:
            raise InvalidRuntimeRequestError(f"invalid ContentCapture: no canonical JSON form ({exc})") from None


class ContentSourceAdapter:
    """Resolves integration input to the canonical ContentSource and reads it. It owns
    no persisted identity: persistence and ``get``/``list`` belong to the journal."""

    source_type = SOURCE_TYPE

    def resolve(self, capture: ContentCapture) -> ContentSource:
        if not isinstance(capture, ContentCapture):
            raise InvalidRuntimeRequestError(
                f"capture() takes a ContentCapture(source_id=…, content=…, metadata=…), got {type(capture).__name__}"
            )
        payload = model.source_payload(capture.source_id, capture.content, capture.description, capture.metadata)
        # Canonical JSON (NFC, RFC 8785) through the codec: the result shares no container
        # with the caller and equals what decode_source() will read back.
        return _SOURCE_CODEC.validate_json(canonical.canonical_bytes(payload))

    def read(self, source: ContentSource) -> str:
        return source.content


@dataclass(frozen=True, slots=True)
class CapturedSource:
    """A canonical Source as the journal holds it: where, which position, when."""

    scope: str
    sequence: int
    source: ContentSource
    memory_source_name: str
    captured_at: str

    @property
    def source_id(self) -> str:
        return self.source.name

    def evidence(self) -> dict[str, str]:
        """The evidence reference payload that names this Source."""
        return evidence_payload(self.scope, self.source.name)


@dataclass(frozen=True, slots=True)
class CaptureReceipt:
    """What ``capture()`` returns: the canonical Source and its journal sequence.
    ``created`` is False when the same payload was captured before (idempotent)."""

    scope: str
    source: ContentSource
    sequence: int
    created: bool

    def evidence(self) -> dict[str, str]:
        return evidence_payload(self.scope, self.source.name)


class _SourceEvidenceRef(BaseModel):
    """Private strict schema of a Source evidence reference."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    scope: str = Field(min_length=1, max_length=MAX_SCOPE_LENGTH)
    source_type: Literal["content"]
    source_id: str = Field(min_length=1, max_length=MAX_SOURCE_ID_LENGTH)


_EVIDENCE_CODEC = TypeAdapter(_SourceEvidenceRef)


def evidence_payload(scope: str, source_id: str) -> dict[str, str]:
    return {"scope": scope, "source_type": SOURCE_TYPE, "source_id": source_id}


def decode_evidence(value: str | bytes | Mapping[str, Any]) -> tuple[str, str]:
    """(scope, source_id) of an evidence reference given as JSON text or a mapping.
    Anything else — extra fields, another Source type, wrong types — is refused."""
    try:
        if isinstance(value, (str, bytes)):
            ref = _EVIDENCE_CODEC.validate_json(value)
        elif isinstance(value, Mapping):
            ref = _EVIDENCE_CODEC.validate_python(dict(value))
        else:
            raise InvalidRuntimeRequestError(
                f"a Source evidence reference is JSON text or a mapping, got {type(value).__name__}"
            )
    except ValidationError as exc:
        raise InvalidRuntimeRequestError(_readable(exc, "Source evidence reference")) from None
    return validate_scope(ref.scope), validate_source_id(ref.source_id)
