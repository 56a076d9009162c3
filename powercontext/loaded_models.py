"""Loaded sentence-transformers models shared by every handle in one process.

Loading all-MiniLM-L6-v2 costs seconds and ~90 MB per copy; a notebook that opens
several handles (or a test run opening many databases) paid that once per handle. A
model is shared only while its folder's bytes are the same: the key holds the
folder's content digest (``model_files.folder_digest``, cached by file stamp), so a
folder whose files changed loads afresh instead of serving the old weights.

Bounded (``MAX_MODELS``, least recently used dropped first: a handle still holding a
dropped model keeps it). Each entry carries a lock held around ``encode``: handles on
different threads share one tokenizer, and Hugging Face's fast tokenizers refuse
concurrent use ("Already borrowed").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable

from .model_files import folder_digest

__all__ = ["MAX_MODELS", "SharedModel", "clear", "shared_model"]

MAX_MODELS = 4


class SharedModel:
    """One loaded model and the lock its callers take around each use."""

    __slots__ = ("model", "lock")

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()


_models: OrderedDict[tuple[str, str, str], SharedModel] = OrderedDict()
_guard = threading.Lock()


def shared_model(folder: str, device: str, load: Callable[[], Any]) -> SharedModel:
    """The process's model for ``folder`` on ``device``, calling ``load`` only when no
    model of the same folder content is held. Loading runs under the guard so two
    threads opening at once load once."""
    key = (str(Path(folder).resolve()), device, folder_digest(Path(folder)))
    with _guard:
        held = _models.get(key)
        if held is None:
            held = SharedModel(load())
            _models[key] = held
            while len(_models) > MAX_MODELS:
                _models.popitem(last=False)
        _models.move_to_end(key)
        return held


def clear() -> None:
    """Forget every held model (the next open loads again)."""
    with _guard:
        _models.clear()
