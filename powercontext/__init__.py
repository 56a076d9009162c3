"""PowerContext: durable, versioned memory for coding agents.

    import powercontext as pc
    svc = await pc.open("memory.db")
"""

from __future__ import annotations

from .errors import (
    AccessDeniedError,
    AnalyzerMismatchError,
    SchemaTooNewError,
    EmbeddingProfileMismatchError,
    EmbeddingRequiredError,
    MigrationOvertakenError,
    ArtifactNotFoundError,
    BackendUnavailableError,
    CapabilityNotSupportedError,
    CommitOutcomeUnknownError,
    ConnectionLostError,
    DatabaseBusyError,
    InvalidCitationError,
    InvalidMemoryRequestError,
    InvalidRuntimeRequestError,
    MaintenanceNotPermittedError,
    MemoryEntryNotFoundError,
    NotHeadError,
    PatchMatchError,
    PowerContextError,
    QueryTimeoutError,
    ServerStalledError,
    ReadOnlyError,
    RevisionConflictError,
    ServerLimitError,
    ServiceClosedError,
    SourceConflictError,
    SourceNotFoundError,
)
from .evidence import (
    AgentTurnSource,
    GitChangeSource,
    StructuredEntry,
    StructuredSource,
    TaskOutcomeSource,
    Verification,
)
from .memory.admission import AdmissionPolicy
from .memory.migration import EmbeddingMigration
from .memory.service import MemoryService
from .model import (
    ArtifactRef,
    ContentSource,
    EmbeddingProfile,
    MemoryChange,
    MemoryCitation,
    MemoryEntryInput,
    MemoryEntryVersion,
    MemoryHit,
    MemoryRevision,
    MemorySearchResult,
    Source,
)
from .opening import open

__all__ = [
    "AccessDeniedError", "ReadOnlyError", "AdmissionPolicy", "AnalyzerMismatchError", "SchemaTooNewError", "EmbeddingProfileMismatchError", "EmbeddingRequiredError", "MigrationOvertakenError", "EmbeddingMigration", "ArtifactNotFoundError", "ArtifactRef", "BackendUnavailableError",
    "CapabilityNotSupportedError", "CommitOutcomeUnknownError", "ConnectionLostError", "ContentSource",
    "DatabaseBusyError", "EmbeddingProfile", "InvalidCitationError",
    "InvalidMemoryRequestError", "InvalidRuntimeRequestError", "MaintenanceNotPermittedError", "ServerLimitError", "MemoryChange", "MemoryCitation",
    "MemoryEntryInput", "MemoryEntryNotFoundError", "MemoryEntryVersion", "MemoryHit",
    "MemoryRevision", "MemorySearchResult", "MemoryService", "NotHeadError", "PatchMatchError", "PowerContextError",
    "QueryTimeoutError", "RevisionConflictError", "ServerStalledError", "ServiceClosedError", "Source", "SourceConflictError", "SourceNotFoundError", "open",
    "AgentTurnSource", "GitChangeSource", "StructuredEntry", "StructuredSource", "TaskOutcomeSource", "Verification",
]
