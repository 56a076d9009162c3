"""Typed errors. Each message says what happened and what to do next.

Domain refusals of bad arguments are ValueError subclasses so that callers who only
know the standard library still catch them.
"""

from __future__ import annotations


class PowerContextError(Exception):
    """Base class of every error this library raises on purpose."""


class RevisionConflictError(PowerContextError):
    """The Memory moved on: the base Revision is no longer its head.

    Reread the head (``svc.head(ref)``) and rerun the domain operation against it.
    """


class CapabilityNotSupportedError(PowerContextError):
    """An explicitly requested capability (vector search, an extractor, a non-head
    search …) is not available here. Explicit requests never silently fall back."""


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


class InvalidRuntimeRequestError(PowerContextError, ValueError):
    """A Runtime (RFC 001) request is malformed."""


class BackendUnavailableError(PowerContextError):
    """The database could not be opened or does not meet the minimum requirements."""


class EmbeddingUnavailableError(PowerContextError):
    """The embedding model cannot run right now (not installed, failed to load, …).
    Writes still commit with full-text only; vector search waits for a rebuild."""


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
