"""Candidate pipelines the Runtime tests pass explicitly (the Runtime picks none).

``DefaultCandidatePipeline`` is the project's real model-free pipeline; the others
implement the same protocol to make one behaviour observable: an extraction that fails,
one that blocks until released, one that counts its calls."""

from __future__ import annotations

import asyncio

from powercontext.memory.candidates import DefaultCandidatePipeline
from powercontext.runtime import ContentCapture


def structured(source_id: str, *entries: tuple[str, str], content: str | None = None) -> ContentCapture:
    """A Source whose metadata carries structured entries (kind, text): what the
    model-free StructuredAdapter turns into candidates."""
    return ContentCapture(
        source_id=source_id,
        content=content or " ".join(text for _, text in entries) or source_id,
        metadata={"type": "structured", "entries": [{"kind": k, "text": t} for k, t in entries]},
    )


class FailingPipeline:
    """Raises on every extraction until ``healed`` is set."""

    def __init__(self) -> None:
        self.healed = False
        self.calls = 0
        self._inner = DefaultCandidatePipeline()

    async def extract(self, sources, artifacts, current):
        self.calls += 1
        if not self.healed:
            raise RuntimeError("the extractor is down")
        return await self._inner.extract(sources, artifacts, current)


class BlockingPipeline:
    """Signals ``entered`` and waits for ``release`` before extracting."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()
        self._inner = DefaultCandidatePipeline()

    async def extract(self, sources, artifacts, current):
        self.entered.set()
        await self.release.wait()
        return await self._inner.extract(sources, artifacts, current)


class CountingPipeline(DefaultCandidatePipeline):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def extract(self, sources, artifacts, current):
        self.calls += 1
        return await super().extract(sources, artifacts, current)
