"""The local Runtime (RFC 001): scoped Sources, a per-scope journal, the scope → Memory
binding, SourceWindowTrigger, and optional scheduled processing with APScheduler.

    from powercontext.runtime import PowerContextRuntime, ContentCapture, RememberMemoryRequest
    runtime = await PowerContextRuntime.open("powercontext.db", candidate_pipeline=pipeline,
                                             source_window_limit=100, schedule_seconds=30)
    receipt = await runtime.sources.for_scope("project:x").capture(ContentCapture(source_id="…", content="…"))
    flush = await runtime.memory.for_scope("project:x").flush(limit=100)
"""

from ..errors import InvalidRuntimeRequestError, SourceConflictError
from ..memory.candidates import CandidatePipeline
from ..model import ArtifactRef, MemoryEntryInput, MemoryRevision
from .capture import ScopedSourceApplication
from .composition import PowerContext
from .errors import (
    InvalidSourcePayloadError,
    RuntimeClosedError,
    RuntimeOwnershipError,
    RuntimeStateError,
    SchedulerStoreError,
)
from .memory import ScopedMemoryApplication
from .oceanbase_storage import OceanBaseRuntimeStorage
from .processor import ProcessorRun, ScheduledSourceProcessor
from .requests import EntryAnchor, MemoryFlushResult, RememberMemoryRequest
from .runtime import PowerContextRuntime, SchedulerConfig
from .scheduling import DISPATCHER, JOB_ID, dispatch_source_window
from .sources import CapturedSource, CaptureReceipt, ContentCapture, ContentSource, ContentSourceAdapter
from .sqlite_storage import SQLiteRuntimeStorage
from .storage import JournalRecord, MemoryBinding, RuntimeScopeStorage, RuntimeStorage, ScopeProgress, WindowRecord
from .trigger import ProcessSourceWindow, SourceCursor, SourceHighWatermark, SourceWindowTrigger, TriggerTransition

__all__ = [
    "ArtifactRef", "CandidatePipeline", "CaptureReceipt", "CapturedSource", "ContentCapture", "ContentSource",
    "ContentSourceAdapter", "DISPATCHER", "EntryAnchor", "InvalidRuntimeRequestError", "InvalidSourcePayloadError",
    "JOB_ID", "JournalRecord", "MemoryBinding", "MemoryEntryInput", "MemoryFlushResult", "MemoryRevision",
    "OceanBaseRuntimeStorage", "PowerContext", "PowerContextRuntime", "ProcessSourceWindow", "ProcessorRun",
    "RememberMemoryRequest", "RuntimeClosedError", "RuntimeOwnershipError", "RuntimeStateError", "RuntimeScopeStorage", "RuntimeStorage",
    "SQLiteRuntimeStorage", "ScheduledSourceProcessor", "SchedulerConfig", "SchedulerStoreError", "ScopeProgress",
    "ScopedMemoryApplication", "ScopedSourceApplication", "SourceConflictError", "SourceCursor", "SourceHighWatermark",
    "SourceWindowTrigger", "TriggerTransition", "WindowRecord", "dispatch_source_window",
]
