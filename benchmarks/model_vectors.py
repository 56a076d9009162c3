"""Vectors of a bundled embedding profile for perf_bench's corpus, without embedding 100k
texts (MiniLM managed 7-14 texts/s of this length on the loaded 2-core machine, E5 less).

* Every distinct text of the bundled corpora, and every question, is embedded by the
  profile's real model (documents as documents, questions as queries), once, and
  cached in ``~/.cache/powercontext/bench-vectors/<profile>-<digest>.npz``.
* A seeded recombination "A; also, b (note N)" (perf_bench.synthesize_pairs) gets the
  normalized sum of its two parts' vectors plus the mean offset the real model puts
  between such a sum and the real embedding of the recombined text (measured on 300
  recombinations embedded for real, cached with the rest). On 21k recombinations
  embedded by MiniLM for real, these vectors had cosine 0.92 to the real ones on
  average, and their nearest neighbours are somewhat farther apart than the real ones
  (mean top-1 cosine 0.71 against 0.80): a spread-out corpus, the harder case for an
  HNSW index.

``CorpusVectors.embed`` serves documents from the table and embeds questions with the
real model at call time, so a search through it pays the query's real embedding: the
end-to-end latency a user sees.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from powercontext.embedding import EmbeddingResult
from powercontext.profiles import bundled_model

CACHE = Path.home() / ".cache" / "powercontext" / "bench-vectors"
CALIBRATION = 300


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


class CorpusVectors:
    def __init__(self, profile_name: str, base: Sequence[str], texts: Sequence[str],
                 parts: Sequence[tuple[int, int] | None], questions: Sequence[str]) -> None:
        self.model = bundled_model(profile_name)
        self.profile = self.model.profile
        self.name = profile_name
        distinct = list(dict.fromkeys(base))
        recombined = [i for i, p in enumerate(parts) if p is not None]
        sample = [texts[i] for i in recombined[:CALIBRATION]]
        base_vectors, sample_vectors, question_vectors, self.embed_seconds = self._embedded(distinct, sample, questions)
        sums = np.array([base_vectors[a] + base_vectors[b] for a, b in (parts[i] for i in recombined[:CALIBRATION])])
        offset = (sample_vectors - _unit(sums)).mean(axis=0) if len(sums) else 0.0
        table = np.empty((len(texts), base_vectors.shape[1]), dtype=np.float32)
        for i, p in enumerate(parts):
            table[i] = base_vectors[i] if p is None else base_vectors[p[0]] + base_vectors[p[1]]
        mixed = np.array([p is not None for p in parts])
        table[mixed] = _unit(_unit(table[mixed].astype(np.float64)) + offset)
        self._rows = {t: i for i, t in enumerate(texts)}
        self.table = table
        self.questions = dict(zip(questions, question_vectors))

    def _embedded(self, base, sample, questions):
        """(base, calibration sample, question) vectors: from the cache, else the model."""
        digest = hashlib.sha256("\0".join([self.profile.profile_id, *base, "\1", *sample, "\1", *questions])
                                .encode()).hexdigest()[:16]
        path = CACHE / f"{self.profile.profile_id}-{digest}.npz"
        if path.exists():
            data = np.load(path)
            return data["base"], data["sample"], data["questions"], float(data["seconds"])
        start = time.perf_counter()
        vectors = [np.asarray(self.model.encode(list(texts), role), dtype=np.float64) if texts else
                   np.zeros((0, self.profile.dimension))
                   for texts, role in ((base, "document"), (sample, "document"), (questions, "query"))]
        seconds = time.perf_counter() - start
        CACHE.mkdir(parents=True, exist_ok=True)
        np.savez(path, base=vectors[0], sample=vectors[1], questions=vectors[2], seconds=seconds)
        return (*vectors, seconds)

    def vector(self, text: str) -> tuple[float, ...]:
        """A document's vector (or a question's, embedded as a query, when it is one)."""
        row = self._rows.get(text)
        if row is None:
            return tuple(map(float, self.questions[text]))
        return tuple(map(float, self.table[row]))

    def matrix(self, texts: Sequence[str]) -> np.ndarray:
        return self.table[[self._rows[t] for t in texts]]

    async def embed(self, texts: tuple[str, ...], role: str = "document") -> EmbeddingResult:
        if role == "query":  # what a user's search pays: the real model, every time
            return await self.model.embed(texts, role="query")
        return EmbeddingResult(tuple(self.vector(t) for t in texts))
