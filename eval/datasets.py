"""Load and validate the bundled evaluation corpora (``datasets/<corpus>/``).

A corpus is the ground truth every relevance threshold is calibrated against, so a
quiet mistake in it (a misspelt tag, a judgement on a forgotten entry, a query that
searches the wrong memory) skews every number the harness reports. ``validate``
therefore checks the whole of ``datasets/FORMAT.md`` and reports *every* problem in
one ``DatasetError``, each as ``file:line: message``, so an author fixes them in one
pass instead of one per run. ``load`` validates too: the harness never runs on a
corpus that breaks the spec.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

__all__ = [
    "Corpus",
    "DatasetError",
    "MemoryRecord",
    "QueryRecord",
    "discover",
    "is_chinese",
    "load",
    "validate",
]

MEMORIES = ("repo", "user")
KINDS = ("fact", "preference", "decision", "constraint", "working_note")
STATES = ("active", "inactive")
LANGS = ("en", "zh")
SPLITS = ("dev", "test")
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
)
GRADES = (1, 2, 3)
#: Tags whose ideal answer is empty: such a query must have no judgement at all.
EMPTY_ANSWER_TAGS = ("negative", "forgotten")

MEMORIES_FILE, QUERIES_FILE, QRELS_FILE = "memories.jsonl", "queries.jsonl", "qrels.trec"

_ENTRY_ID = re.compile(r"[a-z]{3}-[0-9]{4}")
_QUERY_ID = re.compile(r"[a-z]{3}-q[0-9]{3,4}")
_SOURCE = re.compile(r"src_[a-z0-9_]+")
# CJK Unified Ideographs, Extension A, compatibility ideographs and Extensions B-F.
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")


def is_chinese(text: str) -> bool:
    """True if ``text`` contains a CJK ideograph (an English identifier inside a
    Chinese sentence does not make it English; one ideograph makes it Chinese)."""
    return _CJK.search(text) is not None


class DatasetError(ValueError):
    """A corpus breaks the format; ``problems`` lists every ``file:line: message``."""

    def __init__(self, path: str | Path, problems: list[str] | tuple[str, ...]) -> None:
        self.path = Path(path)
        self.problems = tuple(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{self.path}: {len(self.problems)} problem(s)\n{lines}")


@dataclass(frozen=True)
class MemoryRecord:
    """One memory entry as the harness writes it: created with ``history[0]`` (or
    ``text`` when there is no history), revised through the rest, forgotten if
    ``state`` is inactive."""

    id: str
    memory: str
    kind: str
    text: str
    state: str
    history: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()

    @property
    def is_active(self) -> bool:
        return self.state == "active"

    @property
    def is_chinese(self) -> bool:
        return is_chinese(self.text)


@dataclass(frozen=True)
class QueryRecord:
    """One labelled query; ``judgements`` maps entry id to grade (1..3) and is empty
    for a query whose ideal answer is empty."""

    id: str
    text: str
    lang: str
    memories: tuple[str, ...]
    tags: tuple[str, ...]
    split: str
    judgements: Mapping[str, int] = field(default_factory=dict, hash=False)

    @property
    def is_positive(self) -> bool:
        """Has at least one judgement; otherwise admitting anything is a false admission."""
        return bool(self.judgements)

    def has_tag(self, tag: str) -> bool:
        return tag in self.tags


@dataclass(frozen=True)
class Corpus:
    """A validated corpus. ``qrels`` holds only the queries that have judgements,
    exactly as ``qrels.trec`` does (``corpus.qrels.get(qid, {})`` for the rest)."""

    name: str
    path: Path
    memories: tuple[MemoryRecord, ...]
    queries: tuple[QueryRecord, ...]
    qrels: dict[str, dict[str, int]] = field(hash=False)

    is_chinese = staticmethod(is_chinese)

    def entries_by_memory(self) -> dict[str, tuple[MemoryRecord, ...]]:
        """Entries grouped by memory name (file order kept), for writing each memory."""
        return {
            name: group
            for name in MEMORIES
            if (group := tuple(e for e in self.memories if e.memory == name))
        }

    @cached_property
    def _entries(self) -> dict[str, MemoryRecord]:
        return {e.id: e for e in self.memories}

    def entry(self, entry_id: str) -> MemoryRecord:
        return self._entries[entry_id]

    def split(self, name: str) -> tuple[QueryRecord, ...]:
        """The queries of one split (``dev`` to calibrate, ``test`` to report)."""
        return tuple(q for q in self.queries if q.split == name)


def discover(root: str | Path = "datasets") -> list[Path]:
    """The bundled corpora under ``root``: every sub-folder holding a memories.jsonl."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / MEMORIES_FILE).is_file())


def load(path: str | Path) -> Corpus:
    """Load a corpus folder. Validates it fully (see ``validate``), because numbers
    computed on a corpus that breaks the spec are not worth reporting."""
    return validate(path)


def validate(path: str | Path) -> Corpus:
    """Check a corpus folder against datasets/FORMAT.md and return it, or raise one
    ``DatasetError`` listing every problem found, each with its file and line."""
    path = Path(path)
    problems: list[str] = []
    entries = {e.id: (line, e) for line, e in _read_memories(path, problems)}
    queries = {q.id: (line, q) for line, q in _read_queries(path, problems)}
    _check_prefix(entries, queries, problems)
    qrels = _read_qrels(path, entries, queries, problems)
    _check_answers(entries, queries, qrels, problems)
    if problems:
        raise DatasetError(path, problems)
    return Corpus(
        name=path.name,
        path=path,
        memories=tuple(e for _, e in entries.values()),
        queries=tuple(
            replace(q, judgements=qrels.get(q.id, {})) for _, q in queries.values()
        ),
        qrels=qrels,
    )


# --- reading ------------------------------------------------------------------------

# field name -> (required?, type check, description for the message)
_STR = (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string")
_STRS = (
    lambda v: isinstance(v, list) and all(isinstance(x, str) and x.strip() for x in v),
    "a list of non-empty strings",
)
_ENTRY_FIELDS = {
    "id": (True, *_STR),
    "memory": (True, *_STR),
    "kind": (True, *_STR),
    "text": (True, *_STR),
    "state": (True, *_STR),
    "history": (False, *_STRS),
    "sources": (False, *_STRS),
}
_QUERY_FIELDS = {
    "id": (True, *_STR),
    "text": (True, *_STR),
    "lang": (True, *_STR),
    "memories": (True, *_STRS),
    "tags": (True, *_STRS),
    "split": (True, *_STR),
}


def _jsonl(path: Path, problems: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each line that is a JSON object; the rest are reported."""
    if not path.is_file():
        problems.append(f"{path.name}: file missing")
        return []
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{path.name}:{n}"
        if not line.strip():
            problems.append(f"{where}: empty line")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{where}: expected a JSON object, got {type(obj).__name__}")
            continue
        rows.append((where, obj))
    return rows


def _fields_ok(obj: dict[str, Any], spec: dict, where: str, problems: list[str]) -> bool:
    """Report missing, extra and mistyped fields; True if a record can be built."""
    ok = True
    for name in obj.keys() - spec.keys():
        problems.append(f"{where}: unexpected field '{name}'")
    for name, (required, check, wanted) in spec.items():
        if name not in obj:
            if required:
                problems.append(f"{where}: missing field '{name}'")
                ok = False
        elif not check(obj[name]):
            problems.append(f"{where}: field '{name}' must be {wanted}, got {obj[name]!r}")
            ok = False
    return ok


def _one_of(value: str, allowed: tuple[str, ...], what: str, where: str, problems: list[str]):
    if value not in allowed:
        problems.append(f"{where}: unknown {what} {value!r} (expected one of {', '.join(allowed)})")


def _read_memories(path: Path, problems: list[str]) -> list[tuple[str, MemoryRecord]]:
    records: list[tuple[str, MemoryRecord]] = []
    seen: dict[str, str] = {}
    for where, obj in _jsonl(path / MEMORIES_FILE, problems):
        if not _fields_ok(obj, _ENTRY_FIELDS, where, problems):
            continue
        entry = MemoryRecord(
            **{k: obj[k] for k in ("id", "memory", "kind", "text", "state")},
            history=tuple(obj.get("history", ())),
            sources=tuple(obj.get("sources", ())),
        )
        if entry.id in seen:
            problems.append(f"{where}: duplicate id {entry.id!r} (first at {seen[entry.id]})")
            continue
        seen[entry.id] = where
        if not _ENTRY_ID.fullmatch(entry.id):
            problems.append(f"{where}: id {entry.id!r} is not '<3-letter prefix>-<4 digits>'")
        _one_of(entry.memory, MEMORIES, "memory name", where, problems)
        _one_of(entry.kind, KINDS, "kind", where, problems)
        _one_of(entry.state, STATES, "state", where, problems)
        for source in entry.sources:
            if not _SOURCE.fullmatch(source):
                problems.append(f"{where}: source {source!r} is not 'src_[a-z0-9_]+'")
        texts = (*entry.history, entry.text)
        if any(a == b for a, b in zip(texts, texts[1:])):
            problems.append(f"{where}: history repeats a text (a revision must change it)")
        records.append((where, entry))
    return records


def _read_queries(path: Path, problems: list[str]) -> list[tuple[str, QueryRecord]]:
    records: list[tuple[str, QueryRecord]] = []
    seen: dict[str, str] = {}
    for where, obj in _jsonl(path / QUERIES_FILE, problems):
        if "split" not in obj:
            problems.append(f"{where}: query has no split (expected dev or test)")
            obj = {**obj, "split": "?"}
        if not _fields_ok(obj, _QUERY_FIELDS, where, problems):
            continue
        query = QueryRecord(
            **{**obj, "memories": tuple(obj["memories"]), "tags": tuple(obj["tags"])}
        )
        if query.id in seen:
            problems.append(f"{where}: duplicate id {query.id!r} (first at {seen[query.id]})")
            continue
        seen[query.id] = where
        if not _QUERY_ID.fullmatch(query.id):
            problems.append(f"{where}: id {query.id!r} is not '<3-letter prefix>-q<3 digits>'")
        _one_of(query.lang, LANGS, "lang", where, problems)
        if query.split != "?":
            _one_of(query.split, SPLITS, "split", where, problems)
        for what, values, allowed in (
            ("memory name", query.memories, MEMORIES),
            ("tag", query.tags, TAGS),
        ):
            for value in values:
                _one_of(value, allowed, what, where, problems)
            if not values or len(set(values)) != len(values):
                problems.append(f"{where}: {what}s must be a non-empty list without repeats")
        if query.lang == "zh" and not is_chinese(query.text):
            problems.append(f"{where}: lang 'zh' but the text has no Chinese characters")
        if query.lang == "en" and is_chinese(query.text):
            problems.append(f"{where}: lang 'en' but the text contains Chinese characters")
        if query.has_tag("cjk") and query.lang != "zh":
            problems.append(f"{where}: tagged cjk but lang is {query.lang!r}")
        records.append((where, query))
    return records


def _check_prefix(entries: dict, queries: dict, problems: list[str]) -> None:
    """All ids of a corpus share one prefix, so corpora can be mixed in one report."""
    ids = [(where, record.id) for where, record in (*entries.values(), *queries.values())]
    if not ids:
        return
    prefix = ids[0][1][:3]
    for where, rid in ids:
        if rid[:3] != prefix:
            problems.append(f"{where}: id {rid!r} does not use the corpus prefix {prefix!r}")


def _read_qrels(
    path: Path, entries: dict, queries: dict, problems: list[str]
) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], str] = {}
    file = path / QRELS_FILE
    if not file.is_file():
        problems.append(f"{QRELS_FILE}: file missing")
        return qrels
    for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{QRELS_FILE}:{n}"
        parts = line.split()
        if len(parts) != 4 or parts[1] != "0" or not re.fullmatch(r"-?[0-9]+", parts[3]):
            problems.append(
                f"{where}: malformed line {line!r} (expected '<query id> 0 <entry id> <grade>')"
            )
            continue
        qid, _, eid, grade_text = parts
        grade = int(grade_text)
        bad = len(problems)
        if grade not in GRADES:
            problems.append(f"{where}: grade {grade} outside 1..3")
        if qid not in queries:
            problems.append(f"{where}: unknown query {qid!r}")
        if eid not in entries:
            problems.append(f"{where}: unknown entry {eid!r}")
        else:
            entry = entries[eid][1]
            if entry.state == "inactive":
                problems.append(
                    f"{where}: entry {eid!r} is inactive (forgotten entries may not be judged)"
                )
            if qid in queries and entry.memory not in queries[qid][1].memories:
                problems.append(
                    f"{where}: entry {eid!r} is in memory {entry.memory!r}, "
                    f"which query {qid!r} does not search"
                )
        if (qid, eid) in seen:
            problems.append(
                f"{where}: duplicate judgement of {eid!r} for {qid!r} (first at {seen[qid, eid]})"
            )
        seen.setdefault((qid, eid), where)
        if len(problems) == bad:
            qrels.setdefault(qid, {})[eid] = grade
    return qrels


def _check_answers(entries: dict, queries: dict, qrels: dict, problems: list[str]) -> None:
    """The rules that tie a query's tags to its judgements."""
    for where, query in queries.values():
        grades = qrels.get(query.id, {})
        answers = [entries[eid][1] for eid, g in grades.items() if g == 3]
        empty_tags = [t for t in EMPTY_ANSWER_TAGS if query.has_tag(t)]
        if empty_tags:
            if grades:
                problems.append(
                    f"{where}: query {query.id!r} is tagged {empty_tags[0]} but has "
                    f"{len(grades)} judgement(s) in {QRELS_FILE}"
                )
            continue
        if query.has_tag("hard-negative") and all(g == 1 for g in grades.values()):
            continue  # a hard negative with nothing (or only marginal entries) relevant
        if not answers:
            problems.append(
                f"{where}: query {query.id!r} has no grade-3 judgement "
                "(add its answer, or tag it negative, forgotten or hard-negative)"
            )
            continue
        if query.has_tag("multi") and sum(g >= 2 for g in grades.values()) < 2:
            problems.append(f"{where}: tagged multi but fewer than two entries are graded 2 or 3")
        if query.has_tag("stale") and not any(e.history for e in answers):
            problems.append(f"{where}: tagged stale but none of its grade-3 answers has a history")
        if query.has_tag("cjk") and not any(e.is_chinese for e in answers):
            problems.append(f"{where}: tagged cjk but none of its grade-3 answers is Chinese")
        same_language = all(e.is_chinese == (query.lang == "zh") for e in answers)
        if query.has_tag("cross-lingual") and same_language:
            problems.append(
                f"{where}: tagged cross-lingual but every grade-3 answer is in the query's language"
            )
