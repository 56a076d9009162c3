"""The harness's own error, a leaf every stage may import: corpora, running, scoring and
presenting each raise it, so it belongs to none of them."""

from __future__ import annotations

__all__ = ["EvalError"]


class EvalError(RuntimeError):
    """The harness cannot run as asked; the message says what to do instead."""
