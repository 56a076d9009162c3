""""Did you mean …" for a mistyped name: one rule for the magics and the harness CLI."""

from __future__ import annotations

import difflib
from typing import Iterable

__all__ = ["closest", "did_you_mean", "unknown_keyword", "unknown_name"]


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice ``word`` most likely meant (difflib's ratio ≥ 0.6), or None."""
    found = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=0.6)
    return found[0] if found else None


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``" — did you mean 'search'?"`` or ``""`` when nothing is close."""
    match = closest(word, choices)
    return f" — did you mean {match!r}?" if match else ""


def unknown_name(what: str, word: str, choices: Iterable[str]) -> str:
    """``unknown subcommand 'serch' — did you mean 'search'? (one of: …)``."""
    choices = sorted(str(c) for c in choices)
    return f"unknown {what} {word!r}{did_you_mean(word, choices)} (one of: {', '.join(choices)})"


def unknown_keyword(call: str, word: str, choices: Iterable[str]) -> str:
    """``pc.open() takes no keyword 'embeding' — did you mean 'embedding'? (it takes: …)``:
    a mistyped keyword argument of a public entry point, told the way the magics tell
    a mistyped option (a bare ``TypeError`` names neither the near miss nor the rest)."""
    choices = sorted(str(c) for c in choices)
    return (f"{call} takes no keyword {str(word)[:80]!r}{did_you_mean(str(word), choices)} "
            f"(it takes: {', '.join(c + '=' for c in choices)})")
