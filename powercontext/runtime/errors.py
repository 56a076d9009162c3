"""Errors the Runtime adds to the library's typed errors (all ``PowerContextError``)."""

from __future__ import annotations

from ..errors import InvalidRuntimeRequestError, PowerContextError

__all__ = [
    "InvalidSourcePayloadError", "RuntimeClosedError", "RuntimeOwnershipError", "RuntimeStateError", "SchedulerStoreError",
]


class RuntimeClosedError(PowerContextError):
    """The Runtime is closing or closed: it admits no new operations. Open a new one."""


class RuntimeOwnershipError(InvalidRuntimeRequestError):
    """Another scheduled Runtime in this process already owns this database. One live
    Runtime owns a database: close the other one first, or share it."""


class SchedulerStoreError(PowerContextError):
    """The scheduler sidecar cannot be used: it is not a file this user's Runtime wrote
    (wrong owner, writable by others, a symlink, the Runtime database itself) or it
    holds job state the Runtime did not write. APScheduler unpickles job state, so an
    untrusted sidecar is never loaded; delete it to recreate the schedule."""


class InvalidSourcePayloadError(PowerContextError):
    """A persisted Source payload or evidence reference does not validate: the stored
    row was altered or written by something else. The window that holds it keeps its
    cursor until the row is repaired."""


class RuntimeStateError(PowerContextError):
    """A Runtime table holds a value this version never writes: text in an integer
    column, or a cursor that disagrees with the journal and the window log (a
    hand-edited or foreign row). Nothing is processed on top of it; the message names
    the row and the value the Runtime expects there."""
