"""GitChangeAdapter: revise an entry when a Git change alters the fact it states
(Memory RFC "Candidate generation", "Source changes and incremental evidence").

Deterministic and deliberately narrow. For a persisted GitChangeSource it reads, from
each change block of Git's patch, the facts whose value changed:

* a ``key = value`` / ``key: value`` / ``"key": value`` / ``KEY=value`` line of a
  configuration file (pyproject.toml included) removed and the same key added with
  another value — a port, the build backend, requires-python …;
* a Makefile target renamed (one target line removed, one added, in one block).

Then, for each active entry whose own evidence includes a Source for that path (a file
Source with ``metadata["path"]``, or an earlier Git change that touched it), it
proposes a revision only if the entry's text states the old value exactly once as a
whole token; the new version replaces just that token and cites the change. Anything
else yields no candidate: a removed target or key with no replacement never
deactivates an entry (the RFC forbids inferring that from disappearance), and a value
the entry mentions twice is left alone rather than guessed at.
"""

from __future__ import annotations

import logging
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..errors import InvalidMemoryRequestError, SourceNotFoundError
from ..evidence.diff import ChangeBlock, FilePatch, parse_patch
from ..evidence.sources import GitChangeSource
from ..model import MemoryEntryInput, MemoryEntryVersion, Source

__all__ = ["FactChange", "GitChangeAdapter", "fact_changes", "rewrite"]

log = logging.getLogger(__name__)

CONFIG_SUFFIXES = (".toml", ".yaml", ".yml", ".ini", ".cfg", ".conf", ".json", ".properties", ".env")
MAKEFILES = ("Makefile", "GNUmakefile", "makefile")
# A build backend module is rarely what prose names: "built with Hatchling".
BUILD_BACKENDS = {
    "hatchling.build": "Hatchling", "setuptools.build_meta": "setuptools", "poetry.core.masonry.api": "Poetry",
    "flit_core.buildapi": "Flit", "pdm.backend": "PDM", "maturin": "maturin", "mesonpy": "meson-python",
    "scikit_build_core.build": "scikit-build-core", "uv_build": "uv",
}
UNINFORMATIVE = {"true", "false", "yes", "no", "on", "off", "null", "none", ""}
MAX_VALUE_CHARS = 200
MAX_REASON_CHARS = 480

_KEY_VALUE = re.compile(r"""^\s*(?:export\s+)?["']?(?P<key>[A-Za-z_][\w.\-]*)["']?\s*[:=]\s*(?P<value>.+?)\s*$""")
_TARGET = re.compile(r"^(?P<target>[A-Za-z0-9_][\w.\-]*)\s*:(?![:=])")


@dataclass(frozen=True, slots=True)
class FactChange:
    """One fact a change block altered, and the forms prose may state it in:
    ``(old form, new form, ignore case)``, tried in order."""

    path: str
    fact: str
    old: str
    new: str
    forms: tuple[tuple[str, str, bool], ...]

    def describe(self) -> str:
        return f"{self.path} {self.fact} {self.old} -> {self.new}"


def _scalar(raw: str) -> str | None:
    """A config value without quotes, trailing comma or comment; None for structure."""
    raw = raw.strip().rstrip(",").strip()
    if raw[:1] in ("'", '"'):
        end = raw.find(raw[0], 1)
        value = raw[1:end] if end > 0 else None
    else:
        value = re.split(r"\s+[#;]", raw, maxsplit=1)[0].strip()
    if value is None or value[:1] in ("{", "[") or value.lower() in UNINFORMATIVE or len(value) > MAX_VALUE_CHARS:
        return None
    return value


def _key_values(lines: Sequence[str]) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    for line in lines:
        if line.lstrip().startswith(("#", ";", "//")):
            continue
        match = _KEY_VALUE.match(line)
        value = _scalar(match["value"]) if match else None
        if value is not None:
            out.setdefault(match["key"], []).append(value)
    return {k: v[0] for k, v in out.items() if len(v) == 1}  # a key set twice in a block is ambiguous


def _config_facts(path: str, block: ChangeBlock) -> list[FactChange]:
    before, after = _key_values(block.removed), _key_values(block.added)
    facts = []
    for key in sorted(before.keys() & after.keys()):
        old, new = before[key], after[key]
        if old == new:
            continue
        forms = [(old, new, False)]
        if key == "build-backend" and old in BUILD_BACKENDS and new in BUILD_BACKENDS:
            forms.append((BUILD_BACKENDS[old], BUILD_BACKENDS[new], True))
        facts.append(FactChange(path, key, old, new, tuple(forms)))
    return facts


def _targets(lines: Sequence[str]) -> list[str]:
    return [m["target"] for m in map(_TARGET.match, lines) if m and not m["target"].startswith(".")]


def _makefile_facts(path: str, block: ChangeBlock, added_anywhere: set[str]) -> list[FactChange]:
    removed, added = _targets(block.removed), _targets(block.added)
    if len(removed) != 1 or len(added) != 1 or removed == added or removed[0] in added_anywhere:
        return []  # not a rename (a target deleted or moved is not evidence of a new name)
    old, new = removed[0], added[0]
    return [FactChange(path, "Makefile target", old, new, ((f"make {old}", f"make {new}", False),))]


def fact_changes(file: FilePatch) -> list[FactChange]:
    """The facts one file's change blocks altered (deleted files alter none)."""
    if file.deleted:
        return []
    name = posixpath.basename(file.path)
    if name in MAKEFILES or name.endswith(".mk"):
        added = {t for b in file.blocks for t in _targets(b.added)}
        return [f for b in file.blocks for f in _makefile_facts(file.path, b, added)]
    if name.endswith(CONFIG_SUFFIXES) or name.startswith(".env"):
        return [f for b in file.blocks for f in _config_facts(file.path, b)]
    return []


def _token(form: str, ignore_case: bool) -> re.Pattern:
    """``form`` as a whole token: not glued to a word, path or version around it."""
    return re.compile(r"(?<![\w\-/.])" + re.escape(form) + r"(?![\w\-/]|\.\w)", re.I if ignore_case else 0)


def rewrite(text: str, change: FactChange) -> str | None:
    """``text`` with the fact's old value replaced, if it states it exactly once."""
    for old, new, ignore_case in change.forms:
        found = list(_token(old, ignore_case).finditer(text))
        if len(found) == 1:
            start, end = found[0].span()
            return text[:start] + new + text[end:]
    return None


def _paths_of(source: Source) -> set[str]:
    """The repository paths a persisted Source is evidence for."""
    meta = source.metadata
    paths = set()
    if isinstance(meta.get("path"), str):
        paths.add(meta["path"].removeprefix("./"))
    if meta.get("type") == "git_change":
        paths.update(p for p in meta.get("paths", ()) if isinstance(p, str))
    return paths


class GitChangeAdapter:
    """``sources``: the SourceStore (``svc.sources``) the entries' evidence is read
    from; without it no entry can be linked to a path, so nothing is proposed."""

    def __init__(self, sources: Any = None) -> None:
        self.sources = sources

    async def candidates(self, source: Source, current: Sequence[MemoryEntryVersion]) -> list[MemoryEntryInput]:
        if source.metadata.get("type") != "git_change":
            return []
        try:
            change = GitChangeSource.from_source(source)
        except InvalidMemoryRequestError as exc:
            log.warning("ignoring malformed git_change Source %s: %s", source.name, exc)
            return []
        touched = set(change.paths)
        facts = [f for file in parse_patch(change.patch) if file.path in touched for f in fact_changes(file)]
        if not facts or self.sources is None:
            return []
        resolved: dict[Any, set[str]] = {}
        out = []
        for entry in current:
            linked = set()
            for ref in entry.sources:
                if ref not in resolved:
                    resolved[ref] = await self._paths(ref)
                linked |= resolved[ref]
            text, applied = entry.text, []
            for fact in facts:
                if fact.path in linked:
                    revised = rewrite(text, fact)
                    if revised is not None:
                        text, applied = revised, applied + [fact]
            if applied:
                out.append(MemoryEntryInput(kind=entry.kind, text=text, sources=(source,), entry=entry,
                                            reason=self._reason(change, applied)))
        return out

    async def _paths(self, ref) -> set[str]:
        try:
            evidence = await self.sources.get(ref.name)
        except SourceNotFoundError:
            return set()
        return _paths_of(evidence) if evidence.content_hash == ref.content_hash else set()

    @staticmethod
    def _reason(change: GitChangeSource, applied: list[FactChange]) -> str:
        """A mechanical reason: which commit changed which fact (never invented)."""
        reason = f"git {change.head_commit[:12]}: " + "; ".join(f.describe() for f in applied)
        return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"
