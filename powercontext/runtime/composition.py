"""The composition root of one scope (RFC 001 "Runtime composition"): a
``PowerContext`` of the scoped Sources, the Memory Artifact Family and the
Source-window Trigger, built on the scope's ``ScopedRuntime``."""

from __future__ import annotations

from dataclasses import dataclass

from .capture import ScopedSourceApplication
from .memory import ScopedMemoryApplication
from .scoped import ScopedRuntime
from .trigger import SourceWindowTrigger


@dataclass(frozen=True, slots=True)
class BuiltinArtifacts:
    memory: ScopedMemoryApplication


@dataclass(frozen=True, slots=True)
class BuiltinTriggers:
    source_window: SourceWindowTrigger


@dataclass(frozen=True, slots=True)
class PowerContext:
    """The composition root of one scope: ``sources``, ``artifacts.memory``,
    ``triggers.source_window``."""

    sources: ScopedSourceApplication
    artifacts: BuiltinArtifacts
    triggers: BuiltinTriggers


def compose(scoped: ScopedRuntime) -> PowerContext:
    return PowerContext(
        sources=ScopedSourceApplication(scoped),
        artifacts=BuiltinArtifacts(memory=ScopedMemoryApplication(scoped)),
        triggers=BuiltinTriggers(source_window=scoped.trigger),
    )
