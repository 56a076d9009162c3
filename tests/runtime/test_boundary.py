"""The pydantic boundary rejects invalid Source payloads and evidence references
(RFC 001 "Pydantic persistence boundary"). Tampered journal rows: test_windows.py."""

from __future__ import annotations

import json

import pytest

from powercontext.errors import InvalidRuntimeRequestError, SourceConflictError, SourceNotFoundError
from powercontext.runtime import ContentCapture, ContentSource, InvalidSourcePayloadError, MemoryEntryInput, RememberMemoryRequest
from powercontext.runtime.sources import ContentSourceAdapter, decode_evidence, decode_source, encode_source

NESTED = {}
_cursor = NESTED
for _ in range(3000):
    _cursor["a"] = {}
    _cursor = _cursor["a"]


@pytest.mark.parametrize("fields", [
    {"source_id": "x", "content": 1},
    {"source_id": "x", "content": "c", "metadata": [1, 2]},
    {"source_id": "x", "content": "c", "metadata": {1: "int key"}},
    {"source_id": "x", "content": "c", "metadata": {"nan": float("nan")}},
    {"source_id": "x", "content": "c", "metadata": {"set": {1, 2}}},
    {"source_id": "x", "content": "c", "metadata": {"bytes": b"raw"}},
    {"source_id": "x", "content": "c", "metadata": NESTED},
    {"source_id": "x", "content": "c", "extra": "field"},
    {"source_id": "has space", "content": "c"},
    {"source_id": "", "content": "c"},
    {"source_id": "x" * 91, "content": "c"},
    {"source_id": "x", "content": "lone \ud800 surrogate"},
    {"source_id": "x", "content": "c", "description": 3},
    {"content": "c"},
])
def test_invalid_captures_are_typed_errors(fields):
    with pytest.raises(InvalidRuntimeRequestError):
        ContentCapture(**fields)


def test_the_codec_round_trips_and_refuses_altered_payloads():
    source = ContentSourceAdapter().resolve(ContentCapture(source_id="s1", content="Cafe\u0301", metadata={"k": [1, None]}))
    payload = encode_source(source)
    assert decode_source(payload, source.payload_hash) == source and source.content == "Café"
    for forged in ("[]", "{}", payload.replace("Caf", "Cav"), payload[:-1] + ',"x":1}',
                   json.dumps({**json.loads(payload), "content": 5}), json.dumps({**json.loads(payload), "name": "a b"})):
        with pytest.raises(InvalidSourcePayloadError):
            decode_source(forged, source.payload_hash)
    with pytest.raises(InvalidRuntimeRequestError):
        ContentSourceAdapter().resolve({"source_id": "s1", "content": "dict is not a capture"})


@pytest.mark.parametrize("reference", [
    {"scope": "s", "source_type": "content"},
    {"scope": "s", "source_type": "task_outcome", "source_id": "x"},
    {"scope": "s", "source_type": "content", "source_id": "x", "name": "extra"},
    {"scope": "", "source_type": "content", "source_id": "x"},
    {"scope": "s", "source_type": "content", "source_id": 7},
    '{"scope": "s", "source_type": "content", "source_id": "x"',
    42,
])
def test_invalid_evidence_references_are_refused(reference):
    with pytest.raises(InvalidRuntimeRequestError):
        decode_evidence(reference)


async def test_evidence_resolves_only_sources_captured_in_the_scope(target, open_runtime, scope):
    runtime = await open_runtime(target)
    sources, memory = runtime.sources.for_scope(scope), runtime.memory.for_scope(scope)
    receipt = await sources.capture(ContentCapture(source_id="note", content="Use ruff for linting."))
    resolved = await sources.resolve_evidence(json.dumps(receipt.evidence()))
    assert resolved.source == receipt.source and resolved.sequence == 1

    def write(evidence):
        return memory.remember(RememberMemoryRequest(entries=(MemoryEntryInput(
            kind="preference", text="Use ruff for linting.", sources=(evidence,)),)))

    with pytest.raises(SourceNotFoundError):  # never captured: cannot be injected as evidence
        await write({"scope": scope, "source_type": "content", "source_id": "forged"})
    with pytest.raises(SourceConflictError):  # a look-alike payload under a captured identity
        await write(ContentSource("note", "Use black for linting."))
    with pytest.raises(InvalidRuntimeRequestError):
        await write({"scope": scope, "source_type": "content", "source_id": "note", "sequence": 1})
    with pytest.raises(InvalidRuntimeRequestError):
        await write(runtime.memory_service)  # not evidence at all
    assert await memory.head() is None, "refused writes left nothing behind"
    revision = await write(receipt.evidence())
    assert revision.revision == 1 and revision.lineage.sources[0].name.endswith("/note")
