"""The optional model-assisted extractor (Memory RFC "Candidate generation and
model-free fallback", item 4). Nothing shipped needs a model or a network: this module
is the protocol an integration implements, and the guard its output passes through.

A model proposes; it never decides. ``ModelAssistedAdapter`` keeps a proposal only as
an untrusted candidate: its evidence is cut to the Sources of the current operation
(a citation of anything else is dropped, and a proposal left with none is dropped), a
``revises`` that does not name an active entry of the Memory becomes a new entry (the
RFC: never overwrite the wrong one), and kind and text must pass the shared rules.
What survives then passes the same evidence, identity, no-op and head-CAS validation
as an explicit entry. The prompt, trace and reasoning of the model are not evidence.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol, Sequence

from ..backends.rules import normalize_reason, normalize_text, validate_kind
from ..errors import InvalidMemoryRequestError
from ..model import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["ModelExtractor", "ModelProposal", "ModelAssistedAdapter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ModelProposal:
    """What a model may propose: a kind and text, the names of the operation Sources
    that state it, and optionally the entry id it revises and a reason."""

    kind: str
    text: str
    evidence: tuple[str, ...]
    revises: str | None = None
    reason: str | None = None


class ModelExtractor(Protocol):
    """Implemented by an integration around its model. Raise
    CapabilityNotSupportedError when the model is unavailable: the pipeline then goes
    on with the deterministic adapters and the working-note fallback."""

    async def propose(
        self, evidence: Sequence[Source], current: Sequence[MemoryEntryVersion]
    ) -> Sequence[ModelProposal]: ...


class ModelAssistedAdapter:
    def __init__(self, extractor: ModelExtractor) -> None:
        self.extractor = extractor

    async def candidates(self, sources: Sequence[Source], current: Sequence[MemoryEntryVersion]) -> list[MemoryEntryInput]:
        proposals = await self.extractor.propose(tuple(sources), tuple(current))
        by_name = {s.name: s for s in sources}
        active = {e.entry_id: e for e in current}
        out = []
        for proposal in proposals:
            if not isinstance(proposal, ModelProposal):
                log.warning("dropping a model proposal of type %s", type(proposal).__name__)
                continue
            cited = tuple(by_name[n] for n in dict.fromkeys(proposal.evidence) if n in by_name)
            if not cited:
                log.warning("dropping a model proposal that cites none of this operation's Sources")
                continue
            try:
                kind, text = validate_kind(proposal.kind), normalize_text(proposal.text)
                reason = normalize_reason(proposal.reason)
            except InvalidMemoryRequestError as exc:
                log.warning("dropping an invalid model proposal: %s", exc)
                continue
            entry = active.get(proposal.revises) if proposal.revises else None
            out.append(MemoryEntryInput(kind=kind, text=text, sources=cited, entry=entry, reason=reason))
        return out
