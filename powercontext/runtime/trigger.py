"""SourceWindowTrigger: the pure policy that picks the next Source window (RFC 001
"Trigger transition").

    Signal: SourceHighWatermark(sequence, limit)     State: SourceCursor(sequence)

When the high watermark is not past the cursor there is no Action and the State stays;
otherwise ``through = min(high_watermark, cursor + limit)`` and the Action is
``ProcessSourceWindow(after=cursor, through=through)``. The Trigger touches no
database, calls no model and executes nothing: the Runtime saves ``next_state`` only
after the Action succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InvalidRuntimeRequestError, shown

TRIGGER_NAME = "source_window"
MAX_WINDOW_LIMIT = 10_000


MAX_POSITION = 2**63 - 1  # journal sequences are signed 64-bit integers on both databases


def position(value: object, what: str) -> int:
    """A journal position: an integer in 0..MAX_POSITION."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_POSITION:
        raise InvalidRuntimeRequestError(f"{what} must be an integer in 0..2**63-1, got {shown(value)}")
    return value


def window_limit(value: object) -> int:
    """A Source window limit: an integer in 1..MAX_WINDOW_LIMIT."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_WINDOW_LIMIT:
        raise InvalidRuntimeRequestError(f"source window limit must be an integer in 1..{MAX_WINDOW_LIMIT}, got {shown(value)}")
    return value


@dataclass(frozen=True, slots=True)
class SourceHighWatermark:
    """Signal: the highest journal sequence of a scope, and the window limit."""

    sequence: int
    limit: int

    def __post_init__(self) -> None:
        position(self.sequence, "high watermark")
        window_limit(self.limit)


@dataclass(frozen=True, slots=True)
class SourceCursor:
    """State: the last journal sequence whose window was processed."""

    sequence: int = 0

    def __post_init__(self) -> None:
        position(self.sequence, "cursor")


@dataclass(frozen=True, slots=True)
class ProcessSourceWindow:
    """Action: process the journal records with ``after < sequence <= through``."""

    after: int
    through: int

    def __post_init__(self) -> None:
        if position(self.after, "window start") >= position(self.through, "window end"):
            raise InvalidRuntimeRequestError(f"an empty window ({self.after}, {self.through}] is not an Action")

    @property
    def size(self) -> int:
        return self.through - self.after

    def __str__(self) -> str:
        return f"({self.after}, {self.through}]"


@dataclass(frozen=True, slots=True)
class TriggerTransition:
    action: ProcessSourceWindow | None
    next_state: SourceCursor


class SourceWindowTrigger:
    """The Trigger component of a scope's PowerContext (``triggers.source_window``)."""

    name = TRIGGER_NAME

    def activate(self, signal: SourceHighWatermark, state: SourceCursor) -> TriggerTransition:
        if signal.sequence <= state.sequence:
            return TriggerTransition(action=None, next_state=state)
        through = min(signal.sequence, state.sequence + signal.limit)
        return TriggerTransition(ProcessSourceWindow(after=state.sequence, through=through), SourceCursor(through))
