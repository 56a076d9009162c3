"""From an agent's own memory to a judged corpus: pooling questions' candidates, judging them
(blind to channel and rank), agreement between judges, and the export the harness sweeps."""

from .export import export
from .folder import JudgingError, PoolFolder
from .order import judging_order
from .pool import pool, pool_async

__all__ = ["JudgingError", "PoolFolder", "export", "judging_order", "pool", "pool_async"]
