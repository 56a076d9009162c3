"""What a driver exception becomes (RFC 000: errors are typed and say what to do).

Mixin of DatabaseMemoryBackend. Every primitive runs through ``_call`` on the worker
thread: a statement the database refused becomes the adapter's typed error
(``_driver_error``), and a lost connection — a server SIGKILLed, restarted or briefly
unreachable — is retried once on a fresh connection, except a commit, whose outcome
is re-read instead of assumed (``_commit_outcome``).
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import (
    CommitOutcomeUnknownError,
    ConnectionLostError,
    PowerContextError,
    RevisionConflictError,
)
from ..model import ArtifactRef, MemoryRevision
from .plans import CommitPlan


class DriverErrors:
    def _call(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """Run one primitive on the worker thread; no raw driver error leaves it.

        A lost connection (server restart) is retried once on a fresh connection:
        every primitive is a read or an idempotent write, except a commit, whose
        outcome is re-read instead (a second attempt could not tell "mine landed"
        from "someone else's did")."""
        for attempt in (1, 2):
            try:
                return fn(*args)
            except PowerContextError:
                raise
            except Exception as exc:
                if not self._is_connection_lost(exc):
                    mapped = self._driver_error(exc)
                    if mapped is None:
                        raise
                    raise mapped from exc
                if getattr(fn, "__name__", None) == "_commit_sync":
                    return self._commit_outcome(args[0], exc)
                if attempt == 2:
                    raise ConnectionLostError(
                        f"lost the connection to the {self.name} server twice in a row ({exc}); "
                        "it is down or restarting: retry once it is back"
                    ) from None
                self._pause_before_retry(exc)
        raise AssertionError("unreachable")

    def _commit_outcome(self, plan: CommitPlan, lost: BaseException) -> MemoryRevision:
        """The connection died during a commit: re-read whether the Revision landed."""
        ref = ArtifactRef(plan.artifact_id, plan.next_revision)
        content_hash = plan.content.canonical()[1]
        self._pause_before_retry(lost)
        try:
            with self._transaction(write=False) as tx:
                row = self._read_revision(tx, plan.artifact_id, plan.next_revision)
                head = self._read_head(tx, plan.artifact_id)
        except Exception as exc:
            if isinstance(exc, PowerContextError):
                why = f"the server cannot be reached to re-read the outcome ({exc}); once it is back,"
            elif self._is_connection_lost(exc):
                why = "again while re-reading the outcome; once the server is back,"
            elif (mapped := self._driver_error(exc)) is not None:
                why = f"re-reading the outcome was refused ({mapped});"
            else:
                raise
            raise CommitOutcomeUnknownError(
                f"the connection was lost while committing {ref} ({lost}) and {why} "
                f"reread svc.head({plan.artifact_id!r}) before retrying"
            ) from None
        # the row stores the content's chunk list (revision_store.py); its content hash
        # (SHA-256 of the canonical bytes) says whether it is this plan's content
        if row is not None and tuple(row)[1] == content_hash:
            self._invalidate_completeness(plan.artifact_id)
            return MemoryRevision(ref=ref, content=plan.content, content_hash=content_hash, lineage=plan.lineage)
        if row is not None:
            raise RevisionConflictError(f"a concurrent writer committed {ref} first; reread the head and retry")
        raise ConnectionLostError(
            f"the connection was lost while committing {ref} ({lost}); re-read: it was NOT committed "
            f"(head is Revision {head}). Nothing was written: retry the operation"
        )

    def _is_connection_lost(self, exc: BaseException) -> bool:
        """Adapter hook: did ``exc`` break the connection rather than one statement?"""
        return False

    def _pause_before_retry(self, lost: BaseException) -> None:
        """Adapter hook: wait before retrying a call whose connection was lost."""

    def _driver_error(self, exc: BaseException) -> PowerContextError | None:
        """Adapter hook: the typed error for a driver exception (None: re-raise as is)."""
        return None

