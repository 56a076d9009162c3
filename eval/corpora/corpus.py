"""The corpus data model: the records a labelled corpus holds once it validated, its
vocabulary and file names, how the language of a text is told, and the one error that
lists a corpus's problems.

``datasets`` reads and validates folders into these records; ``splits`` deals queries
into dev/test or folds; ``counts`` counts them for datasheets. All three build on this
module, none on each other's internals.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from powercontext.errors import PowerContextError
from powercontext.model import KNOWN_KINDS

__all__ = [
    "Corpus", "DatasetError", "EMPTY_ANSWER_TAGS", "GRADES", "KINDS", "LANGS", "LANGUAGE_NAMES", "MEMORIES",
    "MEMORIES_FILE", "MemoryRecord", "QRELS_FILE", "QUERIES_FILE", "QueryRecord", "SPLITS", "STATES", "STYLES", "TAGS",
    "is_chinese", "language",
]

# The measurable vocabulary: what the service and the harness give a meaning to.
KINDS = KNOWN_KINDS  # the service refuses any other kind (backends/rules.py): one rule for both
STATES = ("active", "inactive")
SPLITS = ("dev", "test")
DEFAULT_KIND, DEFAULT_STATE, UNKNOWN_LANG = "fact", "active", "und"  # "und": BCP 47 for undetermined

# The bundled corpora's house vocabulary (style="bundled"). ``team`` (a team's shared
# memory), ``ja``/``ru`` and ``near-miss`` came with the multilingual corpus lantern-relay.
MEMORIES = ("repo", "user", "team")
LANGS = ("en", "zh", "ja", "ru")
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese", "ja": "Japanese", "ru": "Russian"}
TAGS = (
    "lexical",
    "paraphrase",
    "cjk",
    "cross-lingual",
    "multi",
    "negative",
    "forgotten",
    "stale",
    "hard-negative",
    "near-miss",
)
GRADES = (1, 2, 3)
#: Tags whose ideal answer is empty: such a query must have no judgement at all.
EMPTY_ANSWER_TAGS = ("negative", "forgotten", "near-miss")
STYLES = ("any", "bundled")

MEMORIES_FILE, QUERIES_FILE, QRELS_FILE = "memories.jsonl", "queries.jsonl", "qrels.trec"

# CJK Unified Ideographs, Extension A, compatibility ideographs and Extensions B-F.
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")
_KANA = re.compile("[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")  # hiragana, katakana, half-width katakana
_CYRILLIC = re.compile("[\u0400-\u04ff]")


def is_chinese(text: str) -> bool:
    """True if ``text`` contains a CJK ideograph (an English identifier inside a
    Chinese sentence does not make it English; one ideograph makes it Chinese)."""
    return _CJK.search(text) is not None


def language(text: str) -> str:
    """The bundled corpora's language of a text, told by its script: ``ja`` if it has
    kana (Japanese prose mixes kana with ideographs), else ``zh`` if it has a CJK
    ideograph, else ``ru`` if it has Cyrillic, else ``en``. English identifiers inside
    other-script prose (code-switched text) do not make it English."""
    if _KANA.search(text):
        return "ja"
    if is_chinese(text):
        return "zh"
    if _CYRILLIC.search(text):
        return "ru"
    return "en"


class DatasetError(PowerContextError, ValueError):
    """A corpus cannot be measured as it is; ``problems`` lists every ``file:line: message``."""

    max_message_chars = None  # every problem, so that an author fixes them in one pass

    def __init__(self, path: str | Path, problems: list[str] | tuple[str, ...]) -> None:
        self.path = Path(path)
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{self.path}: {len(self.problems)} problem(s)\n{lines}")


@dataclass(frozen=True)
class MemoryRecord:
    """One memory entry as the harness writes it: created with ``history[0]`` (or
    ``text`` when there is no history), revised through the rest, forgotten if
    ``state`` is inactive. ``meta`` is carried along for the researcher (an
    importer's provenance, say) and ignored by every measurement."""

    id: str
    memory: str
    kind: str
    text: str
    state: str
    history: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def is_active(self) -> bool:
        return self.state == "active"

    @property
    def language(self) -> str:
        return language(self.text)

    @property
    def is_chinese(self) -> bool:
        return self.language == "zh"


@dataclass(frozen=True)
class QueryRecord:
    """One labelled query; ``judgements`` maps entry id to grade. A query with no
    judgement of grade ≥ 1 has an empty ideal answer. ``split`` is ``None`` until
    ``splits.complete`` assigns one to a corpus that has none."""

    id: str
    text: str
    lang: str
    memories: tuple[str, ...]
    tags: tuple[str, ...] = ()
    split: str | None = None
    judgements: Mapping[str, int] = field(default_factory=dict, hash=False)
    meta: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def is_positive(self) -> bool:
        """Has a judgement of grade ≥ 1; otherwise admitting anything is a false admission."""
        return any(g >= 1 for g in self.judgements.values())

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags


@dataclass(frozen=True)
class Corpus:
    """A validated corpus. ``qrels`` holds only the queries that have judgements,
    exactly as ``qrels.trec`` does (``corpus.qrels.get(qid, {})`` for the rest).
    ``style_notes`` are the bundled-style rules it does not follow (empty when it was
    validated with ``style="bundled"``); ``split_origin`` says whether the dev/test
    split came from the file or was assigned by ``splits.complete``."""

    name: str
    path: Path
    memories: tuple[MemoryRecord, ...]
    queries: tuple[QueryRecord, ...]
    qrels: dict[str, dict[str, int]] = field(hash=False)
    style_notes: tuple[str, ...] = field(default=(), hash=False, compare=False)
    split_origin: str = "file"

    is_chinese = staticmethod(is_chinese)

    @cached_property
    def memory_names(self) -> tuple[str, ...]:
        """Memory names in order of first appearance in memories.jsonl."""
        return tuple(dict.fromkeys(e.memory for e in self.memories))

    def entries_by_memory(self) -> dict[str, tuple[MemoryRecord, ...]]:
        """Entries grouped by memory name (file order kept), for writing each memory."""
        groups: dict[str, list[MemoryRecord]] = {name: [] for name in self.memory_names}
        for e in self.memories:
            groups[e.memory].append(e)
        return {name: tuple(group) for name, group in groups.items()}

    @cached_property
    def _entries(self) -> dict[str, MemoryRecord]:
        return {e.id: e for e in self.memories}

    def entry(self, entry_id: str) -> MemoryRecord:
        return self._entries[entry_id]

    def split(self, name: str) -> tuple[QueryRecord, ...]:
        """The queries of one split (``dev`` to calibrate, ``test`` to report)."""
        return tuple(q for q in self.queries if q.split == name)
