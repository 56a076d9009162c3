"""Candidate generation without a model (RFC 000 "Candidate generation and model-free
fallback").

Every candidate is untrusted: it goes through the same evidence, identity, no-op and
head-CAS validation as an explicit entry. Adapters read only the persisted Sources of
the current operation. They recognise Sources by ``metadata["type"]``:

* ``"structured"`` — the caller's structured decision/constraint/fact/preference/
  working_note: ``metadata["entries"] = [{"kind": …, "text": …}, …]``;
* ``"pyproject"`` (or a ``pyproject.toml`` path) — build backend and Python support,
  revising the entry it wrote before (found by its fixed prefix and its evidence);
* ``"task_outcome"`` / ``"git_change"`` — only the working-note fallback uses them: it
  assembles what the provider supplied (final report, head commit, changed paths,
  verification) into ONE working_note, and never invents a fact, decision or constraint.
"""

from __future__ import annotations

import tomllib
from typing import Protocol, Sequence

from ..model import ArtifactRef, MemoryEntryInput, MemoryEntryVersion, Source

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
        return [
            MemoryEntryInput(kind=str(item["kind"]), text=str(item["text"]), sources=(source,), reason=item.get("reason"))
            for item in source.metadata.get("entries", [])
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


class WorkingNoteFallback:
    def note(self, sources: Sequence[Source]) -> MemoryEntryInput | None:
        parts: list[str] = []
        evidence = []
        for source in sources:
            kind, meta = _type(source), source.metadata
            if kind == "task_outcome":
                report = " ".join(source.content.split())[:MAX_REPORT_CHARS]
                if report:
                    parts.append(f"Task outcome: {report}")
                if meta.get("verification"):
                    parts.append(f"Verification: {meta['verification']}.")
                evidence.append(source)
            elif kind == "git_change":
                paths = list(meta.get("paths", []))
                shown = ", ".join(paths[:MAX_NOTE_PATHS]) + (f" and {len(paths) - MAX_NOTE_PATHS} more" if len(paths) > MAX_NOTE_PATHS else "")
                head = meta.get("head")
                parts.append(f"Changed at {head}: {shown}." if head else f"Changed: {shown}.")
                evidence.append(source)
        if not parts:
            return None
        return MemoryEntryInput(kind="working_note", text=" ".join(parts), sources=tuple(evidence))


class DefaultCandidatePipeline:
    """Deterministic adapters first; when they yield nothing, one working_note from
    the task outcome; when even that has nothing, no candidates (a no-op)."""

    def __init__(self, adapters=None, fallback: WorkingNoteFallback | None = None) -> None:
        self.adapters = tuple(adapters) if adapters is not None else (StructuredAdapter(), PyprojectAdapter())
        self.fallback = fallback or WorkingNoteFallback()

    async def extract(self, sources, artifacts, current) -> tuple[MemoryEntryInput, ...]:
        found = [c for source in sources for adapter in self.adapters for c in adapter.candidates(source, current)]
        if found:
            return tuple(found)
        note = self.fallback.note(sources)
        return (note,) if note is not None else ()
