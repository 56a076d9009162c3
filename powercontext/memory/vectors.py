"""The vectors a commit or a rebuild writes: which head rows need one, embedding them
outside the transaction, and the refusal of a handle that cannot embed for a database
that holds vectors.

A database records one embedding profile; a handle opened on it with ``embedding=None``
still knows that profile (the backend adopts it) but has no model. Writing through
such a handle used to commit head rows without vectors: every handle's vector and
hybrid search on that Memory then refused ("missing or stale vectors") until
``rebuild_projections()`` (issue 43, item 10). So it is refused before anything is
written, and the message says how to open the database with its model.
"""

from __future__ import annotations

import logging
from typing import Any

from ..canonical import utf8_key
from ..embedding import embed_checked
from ..errors import EmbeddingRequiredError, EmbeddingUnavailableError

log = logging.getLogger(__name__)


def require_model(svc: Any, doing: str) -> None:
    """Refuse ``doing`` when the database holds vectors and ``svc`` has no model."""
    profile = svc.backend.embedding_profile
    if svc.embedding is None and profile is not None:
        raise EmbeddingRequiredError(
            f"this database keeps {profile.profile_id!r} vectors and this handle was opened with embedding=None: "
            f"it cannot {doing} without leaving entries unsearchable by vector. Reopen it with "
            f"pc.open(..., embedding={profile.profile_id!r}) (or that model's EmbeddingModel)")


async def for_commit(svc: Any, items: dict, versions: Any, base: Any) -> dict:
    """Embed every entry whose head projection this commit (re)writes — added,
    revised and reactivated entries — outside the transaction. A model that is
    unavailable yields no vectors: the commit stays FTS-only and the projection
    incomplete until rebuild_projections(). Invalid vectors refuse the write."""
    backend = svc.backend
    if backend.embedding_profile is None:
        return {}
    # Only the changed items can enter the head (every other item is the base's own).
    entering = [
        item for entry_id, item in sorted(items.items(), key=lambda kv: utf8_key(kv[0]))
        if item.state == "active"
        and ((old := None if base is None else base.manifest.get(entry_id)) is None
             or old.state != "active" or old.entry_version_id != item.entry_version_id)
    ]
    if not entering:
        return {}  # a forget or a regroup writes no vector: a model-less handle may do it
    require_model(svc, "write entries")
    texts = {v.entry_version_id: v.text for v in versions}
    reactivated = [i.entry_id for i in entering if i.entry_version_id not in texts]
    if reactivated:
        loaded = await backend.load_versions(base.ref, reactivated)
        texts.update({v.entry_version_id: v.text for v in loaded.values()})
    try:
        # an array: the commit's checks and writes take its rows without 384 Python
        # floats a vector (issue 48)
        vectors = await embed_checked(svc.embedding, [texts[i.entry_version_id] for i in entering],
                                      backend.embedding_profile, role="document", as_array=True)
    except EmbeddingUnavailableError as exc:
        log.warning("embedding model unavailable; committing full-text only (%s)", exc)
        return {}
    return {
        item.entry_version_id: (backend.expected_embedding_hash(item.entry_content_hash), vector)
        for item, vector in zip(entering, vectors)
    }
