"""A caching ``EmbeddingModel``: every distinct text is embedded once per embedding
profile and role, kept on disk, and served to every backend and every later run.

The harness opens each database with ``pc.open(target, embedding=CachingEmbedding(…))``
so the service embeds through its ordinary path (``embed_checked`` validates each
vector against the database's profile) while the model itself runs only for texts
the cache has never seen. Vectors are kept exactly as the model returned them
(float64 on disk), so a cached vector is bit-identical to a fresh one.

Cache key: the profile (one file per profile, named by its id and a hash of its
canonical JSON) and SHA-256 of the role and the exact text. The role is part of the key
because an asymmetric model (E5) embeds a question and a stored text differently; the
service embeds entry texts as documents after NFC + strip and queries as given, and
``prefetch`` warms both roles.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from powercontext.embedding import EmbeddingResult, check_role, takes_role

from .private import private_dir, private_file

__all__ = ["CachingEmbedding", "default_cache_dir", "profile_key", "text_key"]


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "powercontext" / "embeddings"


def profile_key(profile: Any) -> str:
    """A file-name-safe id of an EmbeddingProfile: its id plus a hash of all fields."""
    blob = json.dumps(profile.to_canonical(), sort_keys=True, separators=(",", ":")).encode()
    return f"{profile.profile_id}-{hashlib.sha256(blob).hexdigest()[:12]}"


def text_key(text: str, role: str = "document") -> str:
    return hashlib.sha256(f"{role}\n{text}".encode("utf-8")).hexdigest()


class CachingEmbedding:
    """Wraps an EmbeddingModel (``profile`` + ``async embed``) with a disk cache."""

    def __init__(self, model: Any, directory: str | os.PathLike[str] | None = None) -> None:
        self.model = model
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        # "-r": keys carry the role (files written before roles existed are left alone)
        self.path = self.directory / f"{profile_key(model.profile)}-r.npz"
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

    @property
    def name(self) -> str:
        return getattr(self.model, "name", self.model.profile.model)

    def __contains__(self, item: str | tuple[str, str]) -> bool:
        """``text in cache`` (as a document) or ``(text, role) in cache``."""
        text, role = item if isinstance(item, tuple) else (item, "document")
        return text_key(text, role) in self._vectors

    def vector(self, text: str, role: str = "document") -> np.ndarray:
        """The cached vector of ``text`` in ``role`` (KeyError if never embedded)."""
        return self._vectors[text_key(text, role)]

    # ------------------------------------------------------------------ protocol

    async def embed(self, texts: tuple[str, ...], role: str = "document") -> EmbeddingResult:
        check_role(role)
        keys = [text_key(t, role) for t in texts]
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in self._vectors))
        self.hits += len(texts) - len(missing)
        if missing:
            await self._embed_missing(missing, role)
        return EmbeddingResult(vectors=tuple(tuple(self._vectors[k].tolist()) for k in keys),
                               usage={"texts": len(texts), "cached": len(texts) - len(missing)})

    async def _embed_missing(self, texts: Sequence[str], role: str) -> None:
        start = time.perf_counter()
        model = self.model
        result = await (model.embed(tuple(texts), role=role) if takes_role(model) else model.embed(tuple(texts)))
        self.embed_seconds += time.perf_counter() - start
        vectors = result.vectors if isinstance(result, EmbeddingResult) else tuple(result)
        if len(vectors) != len(texts):
            raise ValueError(f"the embedding model returned {len(vectors)} vectors for {len(texts)} texts")
        for text, vector in zip(texts, vectors):
            self._vectors[text_key(text, role)] = np.asarray(vector, dtype=np.float64)
        self.misses += len(texts)
        self.embedded += len(texts)
        self._dirty = True

    # ------------------------------------------------------------------ warm-up

    def missing(self, texts: Iterable[str], role: str = "document") -> list[str]:
        """The distinct texts of ``texts`` not cached in ``role`` yet."""
        return sorted({t for t in texts if text_key(t, role) not in self._vectors}, key=len, reverse=True)

    async def prefetch(self, texts: Iterable[str], batch: int = 512, progress: Any = None,
                       queries: Iterable[str] = ()) -> int:
        """Embed every text (as a document) and every query (as a query) not cached
        yet, longest first in large batches (as sentence-transformers would order one
        big ``encode``), then save. Returns the number of texts embedded."""
        todo = [(t, "document") for t in self.missing(texts)] + [(q, "query") for q in self.missing(queries, "query")]
        if progress is not None:
            progress.total = len(todo)
            progress.refresh()
        for role in ("document", "query"):
            mine = [t for t, r in todo if r == role]
            for i in range(0, len(mine), batch):
                chunk = mine[i:i + batch]
                await self._embed_missing(chunk, role)
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
        private_dir(self.directory)
        keys = np.array(sorted(self._vectors), dtype="U64")
        matrix = np.stack([self._vectors[k] for k in keys]) if len(keys) else np.zeros((0, self.profile.dimension), np.float64)
        tmp = self.path.with_suffix(".tmp.npz")
        with private_file(tmp) as fh:  # its vectors are keyed by every memory's text
            np.savez(fh, keys=keys, vectors=matrix)
        os.replace(tmp, self.path)
        self._dirty = False
