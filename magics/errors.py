"""User mistakes become one readable line; bugs keep their traceback.

The magics raise IPython's ``UsageError`` for anything the user can fix (an unknown
memory, a bad flag, a stale revision, a missing capability …): IPython prints it as a
single ``UsageError: …`` line instead of a traceback. Everything else propagates.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

from IPython.core.error import UsageError

import powercontext as pc

__all__ = ["PcMemUserError", "user_message", "as_usage_errors", "LABELS"]


class PcMemUserError(Exception):
    """A mistake the magics detect themselves (no open database, unknown ref …)."""


# The first matching class names the problem; the library message says what to do.
LABELS: tuple[tuple[type[BaseException], str], ...] = (
    (PcMemUserError, ""),
    (pc.RevisionConflictError, "stale revision"),
    (pc.CapabilityNotSupportedError, "not supported"),
    (pc.ArtifactNotFoundError, "unknown memory"),
    (pc.MemoryEntryNotFoundError, "unknown entry"),
    (pc.InvalidCitationError, "invalid citation"),
    (pc.SourceConflictError, "source conflict"),
    (pc.BackendUnavailableError, "database unavailable"),
    (pc.InvalidMemoryRequestError, "invalid request"),
    (pc.PowerContextError, "error"),
)


def _seekdb_error() -> type[BaseException] | None:
    try:
        from powercontext.backends.seekdb.server import SeekdbStartError
    except ImportError:  # pragma: no cover - the oceanbase extra is optional
        return None
    return SeekdbStartError


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


def user_message(exc: BaseException) -> str | None:
    """The one line to show for a user mistake, or None if ``exc`` is a bug."""
    for cls, label in LABELS:
        if isinstance(exc, cls):
            line = first_line(exc)
            return f"{label}: {line}" if label else line
    seekdb = _seekdb_error()
    if seekdb is not None and isinstance(exc, seekdb):
        return f"seekdb did not start: {first_line(exc)} (see its log in the server directory)"
    return None


@contextlib.contextmanager
def as_usage_errors() -> Iterator[None]:
    """Turn user mistakes raised inside the block into ``UsageError`` (one line)."""
    try:
        yield
    except UsageError:
        raise
    except Exception as exc:  # noqa: BLE001 - classified below, bugs re-raised
        message = user_message(exc)
        if message is None:
            raise
        raise UsageError(message) from None
