"""Reciprocal rank fusion of the admitted candidates: pure functions, no I/O.

The second half of the seam (retrieve → admit → fuse): ``admission.fuse`` runs
``admission.admit`` and then ``rrf`` here, online and in the harness's replay alike.
Kept apart from admission because it ranks, it never decides what passes.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..canonical import utf8_key
from ..model import ChannelCandidate, MemoryHit

#: The order channels contribute in (and are listed in ``matched_by``).
CHANNEL_ORDER = ("fts", "vector")


def tie_break_key(key: tuple[str, str, str]) -> tuple[bytes, bytes, bytes]:
    """Equal scores are ordered by memory_artifact_id, entry_id, entry_version_id,
    compared as UTF-8 bytes."""
    return tuple(utf8_key(part) for part in key)  # type: ignore[return-value]


def rrf(
    admitted: Mapping[str, Sequence[ChannelCandidate]], limit: int, k: int = 60
) -> tuple[MemoryHit, ...]:
    """Reciprocal rank fusion: score = Σ 1/(k + rank), rank = 1-based position among a
    channel's ADMITTED candidates. One-channel modes use the same formula."""
    scores: dict[tuple[str, str, str], float] = {}
    matched: dict[tuple[str, str, str], list[str]] = {}
    first: dict[tuple[str, str, str], ChannelCandidate] = {}
    for name in _ordered(admitted):
        for rank, cand in enumerate(admitted[name], start=1):
            key = cand.key
            if name in matched.get(key, ()):
                continue  # one contribution per channel, even if a backend repeated a row
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            matched.setdefault(key, []).append(name)
            first.setdefault(key, cand)
    ordered = sorted(scores, key=lambda key: (-scores[key], tie_break_key(key)))
    return tuple(
        MemoryHit(
            memory_ref=first[key].memory_ref,
            entry_id=key[1],
            entry_version_id=key[2],
            text=first[key].text,
            score=scores[key],
            matched_by=tuple(matched[key]),
            kind=first[key].kind,
        )
        for key in ordered[:limit]
    )


def _ordered(channels: Iterable[str]) -> list[str]:
    names = list(channels)
    return sorted(names, key=lambda n: CHANNEL_ORDER.index(n) if n in CHANNEL_ORDER else len(CHANNEL_ORDER))
