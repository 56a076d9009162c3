"""The harness's own error, a leaf every stage may import: corpora, running, scoring and
presenting each raise it, so it belongs to none of them."""

from __future__ import annotations

from powercontext.errors import PowerContextError

__all__ = ["EvalError"]


class EvalError(PowerContextError, RuntimeError):
    """The harness cannot run as asked; the message says what to do instead.

    A ``PowerContextError`` like every refusal of the library (so one ``except`` serves a
    notebook that runs the harness and the memory both, and a URL in the message is
    redacted), and still a RuntimeError for callers written against the first version."""

    max_message_chars = None  # some list every problem of a corpus or run folder
