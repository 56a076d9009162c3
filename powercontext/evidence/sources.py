"""Typed evidence Sources for task events (Memory RFC "Task events and extraction
boundaries", "Source changes and incremental evidence").

A coding-agent integration observes a turn stop, a task outcome, a Git change or an
explicit decision, and persists it as an immutable Source before any candidate is
generated. These classes are that boundary: pydantic validates what the provider
supplied, and ``to_content_source()`` gives the one canonical payload that is persisted
and hashed like any other Source (``metadata["type"]`` names the kind, so the model-free
adapters recognise it after a round trip through either database).

    change = pc.GitChangeSource(name="src_git_ab12", base_commit=…, head_commit=…,
                                paths=("pyproject.toml",), patch=unified_diff)
    src = await svc.sources.persist(change)      # a persisted Source
    pc.GitChangeSource.from_source(src)          # the typed view again
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..errors import InvalidMemoryRequestError
from ..model import ContentSource, Source

__all__ = [
    "AgentTurnSource", "GitChangeSource", "StructuredEntry", "StructuredSource", "TaskOutcomeSource",
    "Verification", "typed_source",
]

_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # SHA-1 or SHA-256 object names, full length


class _Evidence(BaseModel):
    """Frozen, strict models whose validation failures are the library's typed error."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)
    TYPE: ClassVar[str] = ""

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or type(self).__name__}: {e['msg']}" for e in exc.errors()
            )
            raise InvalidMemoryRequestError(f"invalid {type(self).__name__}: {problems}") from None

    def _content_source(self, content: str, metadata: dict[str, Any]) -> ContentSource:
        return ContentSource(
            name=self.name, content=content, description=self.description,  # type: ignore[attr-defined]
            metadata={"type": self.TYPE, **{k: v for k, v in metadata.items() if v not in (None, [], ())}},
        )

    @classmethod
    def _metadata(cls, source: Source) -> dict[str, Any]:
        if not isinstance(source, Source):
            raise InvalidMemoryRequestError(f"expected a persisted Source, got {type(source).__name__}")
        meta = dict(source.metadata)
        if meta.pop("type", None) != cls.TYPE:
            raise InvalidMemoryRequestError(f"source {source.name!r} is not a {cls.TYPE} Source")
        return meta


def _paths(value: Any) -> tuple[str, ...]:
    """Repository-relative POSIX paths, sorted and unique: the canonical form."""
    paths = []
    for p in value or ():
        if not isinstance(p, str) or not p.strip() or "\0" in p:
            raise ValueError(f"a path must be a non-empty string, got {p!r}")
        p = p.strip().removeprefix("./")
        if p.startswith("/") or ".." in p.split("/"):
            raise ValueError(f"paths are relative to the repository root, got {p!r}")
        paths.append(p)
    return tuple(sorted(set(paths)))


class Verification(_Evidence):
    """One verification the provider ran, e.g. ``Verification(command="make test",
    outcome="passed")``. Recorded as supplied; never inferred from a report."""

    command: str
    outcome: Literal["passed", "failed", "error", "skipped"]
    detail: str | None = None

    def describe(self) -> str:
        return f"{self.command} {self.outcome}" + (f" ({self.detail})" if self.detail else "")


class GitChangeSource(_Evidence):
    """An immutable Git change: base and head commits, the touched paths, and git's
    unified patch (content). Memory Core never computes it; Git does
    (``powercontext.evidence.git.git_change``)."""

    TYPE: ClassVar[str] = "git_change"
    name: str
    base_commit: str
    head_commit: str
    paths: tuple[str, ...]
    patch: str
    repository: str | None = None  # a label such as "repo:powercontext", not a local path
    description: str | None = None

    @field_validator("base_commit", "head_commit")
    @classmethod
    def _full_commit(cls, value: str) -> str:
        if not _COMMIT.fullmatch(value):
            raise ValueError("must be a full lowercase hexadecimal commit id (git rev-parse)")
        return value

    @field_validator("paths", mode="before")
    @classmethod
    def _canonical_paths(cls, value: Any) -> tuple[str, ...]:
        return _paths(value)

    def to_content_source(self) -> ContentSource:
        return self._content_source(self.patch, {
            "base": self.base_commit, "head": self.head_commit, "paths": list(self.paths), "repository": self.repository,
        })

    @classmethod
    def from_source(cls, source: Source) -> "GitChangeSource":
        meta = cls._metadata(source)
        return cls(name=source.name, base_commit=meta.get("base"), head_commit=meta.get("head"),
                   paths=meta.get("paths", ()), patch=source.content, repository=meta.get("repository"),
                   description=source.description)


class _TurnReport(_Evidence):
    """What a provider reports when work stops: its final text, the paths it changed,
    the Git head, and the verifications it ran."""

    name: str
    changed_paths: tuple[str, ...] = ()
    head_commit: str | None = None
    verification: tuple[Verification, ...] = ()
    description: str | None = None

    @field_validator("changed_paths", mode="before")
    @classmethod
    def _canonical_paths(cls, value: Any) -> tuple[str, ...]:
        return _paths(value)

    def _report_metadata(self) -> dict[str, Any]:
        return {
            "paths": list(self.changed_paths), "head": self.head_commit,
            "verification": [v.model_dump(exclude_none=True) for v in self.verification],
        }

    @classmethod
    def _report_fields(cls, source: Source, meta: dict[str, Any]) -> dict[str, Any]:
        return dict(name=source.name, changed_paths=meta.get("paths", ()), head_commit=meta.get("head"),
                    verification=tuple(meta.get("verification", ())), description=source.description)


class TaskOutcomeSource(_TurnReport):
    """A task the provider says is finished, with its final report (content)."""

    TYPE: ClassVar[str] = "task_outcome"
    report: str
    task: str | None = None

    def to_content_source(self) -> ContentSource:
        return self._content_source(self.report, {**self._report_metadata(), "task": self.task})

    @classmethod
    def from_source(cls, source: Source) -> "TaskOutcomeSource":
        meta = cls._metadata(source)
        return cls(report=source.content, task=meta.get("task"), **cls._report_fields(source, meta))


class AgentTurnSource(_TurnReport):
    """The end of one agent turn: an observable boundary, not proof that a task is
    complete (RFC), so nothing built from it may claim completion."""

    TYPE: ClassVar[str] = "agent_turn"
    final_message: str
    session: str | None = None
    turn: int | None = None

    def to_content_source(self) -> ContentSource:
        return self._content_source(self.final_message, {**self._report_metadata(), "session": self.session, "turn": self.turn})

    @classmethod
    def from_source(cls, source: Source) -> "AgentTurnSource":
        meta = cls._metadata(source)
        return cls(final_message=source.content, session=meta.get("session"), turn=meta.get("turn"),
                   **cls._report_fields(source, meta))


class StructuredEntry(_Evidence):
    """One explicit decision, constraint, preference, fact or working_note. ``revises``
    names the entry it replaces; if that entry is not active in the Memory the
    candidate is built against, a new entry is created instead (RFC: when unsure which
    entry new content belongs to, never overwrite the wrong one)."""

    kind: str
    text: str
    reason: str | None = None
    revises: str | None = None


class StructuredSource(_Evidence):
    """The caller's structured input: the original statement (content, e.g. the user's
    words or an ADR) and the entries it states."""

    TYPE: ClassVar[str] = "structured"
    name: str
    statement: str
    entries: tuple[StructuredEntry, ...]
    description: str | None = None

    def to_content_source(self) -> ContentSource:
        return self._content_source(self.statement, {"entries": [e.model_dump(exclude_none=True) for e in self.entries]})

    @classmethod
    def from_source(cls, source: Source) -> "StructuredSource":
        meta = cls._metadata(source)
        return cls(name=source.name, statement=source.content, entries=tuple(meta.get("entries", ())),
                   description=source.description)


TYPES = {cls.TYPE: cls for cls in (GitChangeSource, TaskOutcomeSource, AgentTurnSource, StructuredSource)}


def typed_source(source: Source) -> _Evidence | None:
    """The typed view of a persisted Source, or None for an untyped one."""
    cls = TYPES.get(str(source.metadata.get("type", "")))
    return None if cls is None else cls.from_source(source)
