"""Candidate generation without a model (RFC 000 "Candidate generation and model-free
fallback").

Every candidate is untrusted: it goes through the same evidence, identity, no-op and
head-CAS validation as an explicit entry. Adapters read only the persisted Sources of
the current operation (and, for the Git adapter, the evidence the current entries
already cite). They recognise Sources by ``metadata["type"]`` — the typed Sources of
``powercontext.evidence`` write it:

* ``"structured"`` — the caller's structured decision/constraint/fact/preference/
  working_note (``StructuredSource``), optionally revising a named active entry;
* ``"pyproject"`` (or a ``pyproject.toml`` path) — build backend and Python support,
  revising the entry it wrote before (found by its fixed prefix and its evidence);
* ``"git_change"`` — ``GitChangeAdapter``: a revision only where the patch changes a
  fact an entry states and cites;
* ``"task_outcome"`` / ``"agent_turn"`` — only the working-note fallback uses them: it
  assembles what the provider supplied (final report, head commit, changed paths,
  verification) into ONE working_note, and never invents a fact, decision or
  constraint. A Git change alone is not a note: a list of paths is a file inventory.

An optional model (``extractor``, see ``extractor.py``) runs after the deterministic
adapters; if it is unavailable the pipeline goes on without it.
"""

from __future__ import annotations

import inspect
import logging
import tomllib
from typing import Any, Protocol, Sequence

from ..errors import CapabilityNotSupportedError
from ..evidence.sources import StructuredSource, Verification
from ..model import ArtifactRef, MemoryEntryInput, MemoryEntryVersion, Source
from .extractor import ModelAssistedAdapter, ModelExtractor
from .git_adapter import GitChangeAdapter

log = logging.getLogger(__name__)

MAX_NOTE_PATHS = 8
MAX_REPORT_CHARS = 600


class CandidatePipeline(Protocol):
    async def extract(
        self, sources: Sequence[Source], artifacts: Sequence[ArtifactRef], current: Sequence[MemoryEntryVersion]
    ) -> Sequence[MemoryEntryInput]: ...


def _type(source: Source) -> str:
    kind = str(source.metadata.get("type", ""))
    if not kind and str(source.metadata.get("path", "")).endswith("pyproject.toml"):
        return "pyproject"
    return kind


class StructuredAdapter:
    def candidates(self, source: Source, current) -> list[MemoryEntryInput]:
        if _type(source) != "structured":
            return []
        active = {e.entry_id: e for e in current}
        return [
            MemoryEntryInput(kind=item.kind, text=item.text, sources=(source,), reason=item.reason,
                             entry=active.get(item.revises) if item.revises else None)
            for item in StructuredSource.from_source(source).entries
        ]


class PyprojectAdapter:
    """Facts an agent needs before running anything and cannot cheaply re-derive from
    one glance: the build backend and the supported Python range."""

    PREFIXES = ("Build backend:", "Supported Python:")

    def candidates(self, source: Source, current) -> list[MemoryEntryInput]:
        if _type(source) != "pyproject":
            return []
        try:
            data = tomllib.loads(source.content)
        except tomllib.TOMLDecodeError:
            return []
        texts = []
        backend = data.get("build-system", {}).get("build-backend")
        if backend:
            texts.append(("fact", f"Build backend: {backend} (from pyproject.toml)."))
        python = data.get("project", {}).get("requires-python")
        if python:
            texts.append(("constraint", f"Supported Python: {python} (requires-python in pyproject.toml)."))
        out = []
        for kind, text in texts:
            prefix = next(p for p in self.PREFIXES if text.startswith(p))
            # Revise the entry this adapter wrote before: same fixed prefix, supported
            # by a pyproject Source (a direct-evidence relationship, not a guess).
            previous = next((e for e in current if e.text.startswith(prefix)
                             and any("pyproject" in r.name for r in e.sources)), None)
            if previous is not None and previous.text == text:
                continue  # unchanged fact: new evidence alone is not worth a version
            out.append(MemoryEntryInput(kind=kind, text=text, sources=(source,), entry=previous))
        return out


def _verification(value: Any) -> str:
    """Verification as the provider supplied it: a sentence, or Verification records."""
    if isinstance(value, str):
        return value.strip()
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, dict) for v in value):
        return ""  # not what a provider supplied in either form: nothing to assemble
    return "; ".join(Verification(**v).describe() for v in value)


class WorkingNoteFallback:
    def note(self, sources: Sequence[Source]) -> MemoryEntryInput | None:
        parts: list[str] = []
        evidence, paths, heads = [], set(), []
        for source in sources:
            kind, meta = _type(source), source.metadata
            if kind in ("task_outcome", "agent_turn"):
                report = " ".join(source.content.split())[:MAX_REPORT_CHARS]
                # a turn's end is a boundary, not proof that the task is complete
                label = "Task outcome" if kind == "task_outcome" else "Agent turn report"
                if report:
                    parts.append(f"{label}: {report}")
                verification = _verification(meta.get("verification"))
                if verification:
                    parts.append(f"Verification: {verification}.")
                evidence.append(source)
            elif kind != "git_change":
                continue
            paths.update(p for p in meta.get("paths", ()) if isinstance(p, str))
            if meta.get("head") and meta["head"] not in heads:
                heads.append(meta["head"])
            if kind == "git_change":
                evidence.append(source)
        if not parts:
            return None  # no report: changed paths alone would be a file inventory
        if paths:
            ordered = sorted(paths)
            shown = ", ".join(ordered[:MAX_NOTE_PATHS])
            if len(ordered) > MAX_NOTE_PATHS:
                shown += f" and {len(ordered) - MAX_NOTE_PATHS} more"
            where = " ".join(h[:12] for h in heads)
            parts.append(f"Changed at {where}: {shown}." if heads else f"Changed: {shown}.")
        return MemoryEntryInput(kind="working_note", text=" ".join(parts), sources=tuple(evidence))


class DefaultCandidatePipeline:
    """Deterministic adapters first (structured input, pyproject, Git change), then the
    optional model; when all of them yield nothing, one working_note from the task
    outcome; when even that has nothing, no candidates (a no-op). An entry is revised
    by at most one candidate per operation: the first adapter's wins.

    ``sources`` is the SourceStore the Git adapter reads the current entries' evidence
    from (the service passes its own)."""

    def __init__(self, adapters=None, fallback: WorkingNoteFallback | None = None, *,
                 sources: Any = None, extractor: ModelExtractor | None = None) -> None:
        self.adapters = tuple(adapters) if adapters is not None else (
            StructuredAdapter(), PyprojectAdapter(), GitChangeAdapter(sources))
        self.fallback = fallback or WorkingNoteFallback()
        self.model = ModelAssistedAdapter(extractor) if extractor is not None else None

    async def extract(self, sources, artifacts, current) -> tuple[MemoryEntryInput, ...]:
        found: list[MemoryEntryInput] = []
        for source in sources:
            for adapter in self.adapters:
                result = adapter.candidates(source, current)
                found += await result if inspect.isawaitable(result) else result
        if self.model is not None:
            try:
                found += await self.model.candidates(sources, current)
            except CapabilityNotSupportedError as exc:
                log.warning("model extractor unavailable, continuing without it: %s", exc)
        revised: set[str] = set()
        kept = []
        for candidate in found:
            if candidate.entry is not None:
                if candidate.entry.entry_id in revised:
                    continue
                revised.add(candidate.entry.entry_id)
            kept.append(candidate)
        if kept:
            return tuple(kept)
        note = self.fallback.note(sources)
        return (note,) if note is not None else ()
