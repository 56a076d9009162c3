"""Evidence for task events: typed Sources a coding-agent integration persists
(``sources``), Git as the producer of change Sources (``git``), and the reading of a
persisted patch that the Git-change adapter needs (``diff``)."""

from .git import git_change
from .sources import (
    AgentTurnSource,
    GitChangeSource,
    StructuredEntry,
    StructuredSource,
    TaskOutcomeSource,
    Verification,
    typed_source,
)

__all__ = [
    "AgentTurnSource", "GitChangeSource", "StructuredEntry", "StructuredSource", "TaskOutcomeSource",
    "Verification", "git_change", "typed_source",
]
