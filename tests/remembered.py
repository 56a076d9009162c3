"""A test-only wrapper around a real embedding model that answers a repeated call from
memory: the same texts in the same role get the vectors the model gave the first time.

Tests that replay one question hundreds of times (the online-equivalence seam: every
policy × limit × mode searches the same sampled questions) paid one model call per
search, about 20 ms of CPU each. Every vector still comes from the real model; only an
exact repeat of an earlier call (same texts, same role, same order) is not recomputed,
and the model is deterministic for an identical call, so the service sees the vectors
it would have computed."""

from __future__ import annotations

from powercontext.embedding import EmbeddingResult


class RememberedCalls:
    """``.profile`` and ``async .embed(texts, role)`` of ``model``, each distinct call once."""

    def __init__(self, model) -> None:
        self._model = model
        self._calls: dict[tuple[tuple[str, ...], str], EmbeddingResult] = {}
        self.computed = self.repeated = 0  # so a test can show the memory really served

    @property
    def profile(self):
        return self._model.profile

    async def embed(self, texts: tuple[str, ...], role: str = "document") -> EmbeddingResult:
        key = (tuple(texts), role)
        if key in self._calls:
            self.repeated += 1
        else:
            self.computed += 1
            self._calls[key] = await self._model.embed(tuple(texts), role)
        return self._calls[key]
