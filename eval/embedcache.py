"""A caching ``EmbeddingModel``: every distinct text is embedded once per embedding
profile, kept on disk, and served to every backend and every later run.

The harness opens each database with ``pc.open(target, embedding=CachingEmbedding(…))``
so the service embeds through its ordinary path (``embed_checked`` validates each
vector against the database's profile) while the model itself runs only for texts
the cache has never seen. Vectors are kept exactly as the model returned them
(float64 on disk), so a cached vector is bit-identical to a fresh one.

Cache key: SHA-256 of the profile's canonical JSON and of the exact text (the service
embeds entry texts after NFC + strip, queries as given; ``prefetch`` warms both).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from powercontext.embedding import EmbeddingResult

__all__ = ["CachingEmbedding", "default_cache_dir", "profile_key", "text_key"]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "powercontext" / "embeddings"


def profile_key(profile: Any) -> str:
    """A file-name-safe id of an EmbeddingProfile: its id plus a hash of all fields."""
    blob = json.dumps(profile.to_canonical(), sort_keys=True, separators=(",", ":")).encode()
    return f"{profile.profile_id}-{hashlib.sha256(blob).hexdigest()[:12]}"


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachingEmbedding:
    """Wraps an EmbeddingModel (``profile`` + ``async embed``) with a disk cache."""

    def __init__(self, model: Any, directory: str | os.PathLike[str] | None = None) -> None:
        self.model = model
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.path = self.directory / f"{profile_key(model.profile)}.npz"
        self._vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        self.hits = 0
        self.misses = 0
        self.embed_seconds = 0.0  # wall time spent in the wrapped model
        self.embedded = 0  # texts the wrapped model embedded
        self._read()

    @property
    def profile(self):
        return self.model.profile

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, text: str) -> bool:
        return text_key(text) in self._vectors

    def vector(self, text: str) -> np.ndarray:
        """The cached vector of ``text`` (KeyError if never embedded)."""
        return self._vectors[text_key(text)]

    # ------------------------------------------------------------------ protocol

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        keys = [text_key(t) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self._vectors))
        self.hits += len(texts) - len(missing)
        if missing:
            await self._embed_missing(missing)
        return EmbeddingResult(vectors=tuple(tuple(self._vectors[k].tolist()) for k in keys),
                               usage={"texts": len(texts), "cached": len(texts) - len(missing)})

    async def _embed_missing(self, texts: Sequence[str]) -> None:
        start = time.perf_counter()
        result = await self.model.embed(tuple(texts))
        self.embed_seconds += time.perf_counter() - start
        vectors = result.vectors if isinstance(result, EmbeddingResult) else tuple(result)
        if len(vectors) != len(texts):
            raise ValueError(f"the embedding model returned {len(vectors)} vectors for {len(texts)} texts")
        for text, vector in zip(texts, vectors):
            self._vectors[text_key(text)] = np.asarray(vector, dtype=np.float64)
        self.misses += len(texts)
        self.embedded += len(texts)
        self._dirty = True

    # ------------------------------------------------------------------ warm-up

    async def prefetch(self, texts: Iterable[str], batch: int = 512, progress: Any = None) -> int:
        """Embed every text not cached yet, longest first in large batches (as
        sentence-transformers would order one big ``encode``), then save. Returns the
        number of texts embedded."""
        todo = sorted({t for t in texts if text_key(t) not in self._vectors}, key=len, reverse=True)
        if progress is not None:
            progress.total = len(todo)
            progress.refresh()
        for i in range(0, len(todo), batch):
            chunk = todo[i:i + batch]
            await self._embed_missing(chunk)
            if progress is not None:
                progress.update(len(chunk))
        self.save()
        return len(todo)

    # ------------------------------------------------------------------ storage

    def _read(self) -> None:
        if not self.path.is_file():
            return
        try:
            with np.load(self.path, allow_pickle=False) as data:
                keys, matrix = data["keys"], data["vectors"]
        except (OSError, ValueError, KeyError):
            return  # a damaged cache is rebuilt, never trusted
        if matrix.ndim != 2 or matrix.shape[1] != self.profile.dimension:
            return
        self._vectors = {str(k): matrix[i] for i, k in enumerate(keys)}

    def save(self) -> None:
        if not self._dirty:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        keys = np.array(sorted(self._vectors), dtype="U64")
        matrix = np.stack([self._vectors[k] for k in keys]) if len(keys) else np.zeros((0, self.profile.dimension), np.float64)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, keys=keys, vectors=matrix)
        os.replace(tmp, self.path)
        self._dirty = False
