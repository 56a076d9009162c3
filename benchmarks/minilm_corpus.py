"""Real all-MiniLM-L6-v2 vectors of perf_bench's corpus grown to N (peers_bench's
``--vectors minilm``), every text embedded by the model itself — not derived from its
parts' vectors as model_vectors.py does for 100k.

* **The texts.** perf_bench.synthesize_pairs: the bundled corpora's distinct memories
  (992 today), then seeded recombinations of two of them, "A; also, b (note N)" — real
  sentences, so full-text search sees real words, and every text distinct. The texts
  for a smaller N are the first N of a larger one (same seed), so their vectors are
  shared.
* **The vectors.** powercontext's own embedder (``bundled_model("minilm")``, documents
  as documents, questions as queries, unit-normalized), in chunks of ``CHUNK`` texts.
  Each chunk is saved as soon as it is embedded, named by the SHA-256 of its texts and
  the profile id: a run stopped half-way resumes where it was, a 10k run reuses the
  first 10k of a 50k one, and a changed corpus or model never reads stale vectors.
  Embedding is slow on this 2-core machine (MiniLM made 7-12 texts/s of these ~270
  characters at load 5-6), which is why the vectors are cached at all.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

CACHE = Path.home() / ".cache" / "powercontext" / "bench-vectors" / "peers-minilm"
CHUNK = 1000


def _digest(profile_id: str, role: str, texts: Sequence[str]) -> str:
    return hashlib.sha256("\0".join([profile_id, role, *texts]).encode()).hexdigest()[:20]


class MinilmCorpus:
    """Embeds texts once per cache folder; ``seconds`` and ``embedded`` say what this
    process paid (0 when everything came from the cache)."""

    def __init__(self, cache: Path = CACHE, chunk: int = CHUNK,
                 progress: Callable[[str], None] | None = None) -> None:
        from powercontext.profiles import bundled_model

        self.model = bundled_model("minilm")
        # 128, not the default 32: 1,000 of these texts took 81 s against 144 s (one run
        # each on the loaded machine: a rough figure, the direction is what counts).
        self.model.batch_size = 128
        self.profile_id = self.model.profile.profile_id
        self.cache, self.chunk, self.progress = Path(cache), chunk, progress
        self.seconds, self.embedded = 0.0, 0

    def vectors(self, texts: Sequence[str], role: str = "document") -> np.ndarray:
        """float32 (len(texts), 384), unit rows: each chunk from the cache, else the model."""
        parts = [self._chunk(texts[i:i + self.chunk], role, i, len(texts))
                 for i in range(0, len(texts), self.chunk)]
        return np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)

    def _chunk(self, texts: Sequence[str], role: str, start: int, total: int) -> np.ndarray:
        path = self.cache / f"{role}-{start}-{len(texts)}-{_digest(self.profile_id, role, texts)}.npy"
        if path.exists():
            return np.load(path)
        began = time.perf_counter()
        array = np.asarray(self.model.encode(list(texts), role), dtype=np.float32)
        spent = time.perf_counter() - began
        self.seconds += spent
        self.embedded += len(texts)
        self.cache.mkdir(parents=True, exist_ok=True)
        # Written under a temporary name and renamed: a run killed mid-write leaves no
        # truncated chunk for the next run to trust.
        partial = path.with_suffix(".partial.npy")
        np.save(partial, array)
        partial.replace(path)
        if self.progress is not None:
            self.progress(f"embedded {role}s {start + len(texts):,}/{total:,} "
                          f"({len(texts) / spent:.1f} texts/s this chunk)")
        return array
