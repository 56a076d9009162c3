"""Load and validate labelled corpora (``datasets/<corpus>/`` or any folder in that format).

A corpus is the ground truth every relevance threshold is calibrated against, so a
quiet mistake in it (a judgement on a forgotten entry, a query that searches a memory
that does not exist, a typo in a field name) skews every number the harness reports.
Validation therefore reports *every* problem in one ``DatasetError``, each as
``file:line: message``, so an author fixes them in one pass instead of one per run.

Two levels, because a researcher's corpus owes the harness only what makes it
measurable, while the bundled corpora follow house conventions on top:

* **errors** (always): valid JSON objects with known field names; unique ASCII ids
  (≤ 128 printable characters, the service's id rule); known ``kind`` and ``state``;
  texts the service accepts (non-empty, ≤ 8 KiB); a history that changes the text at
  every step; entries of one memory that the service can tell apart; queries that
  search memories which exist; integer grades; judgements only on ACTIVE entries of a
  memory the query searches; splits either on every query or on none.
* **style notes** (``style="bundled"`` turns them into errors): the bundled corpora's
  id patterns and shared prefix, memory names ``repo``/``user``, ``src_`` source
  names, the tag, language and split vocabularies with their heuristics (a ``zh``
  query has Chinese in it …), grades 1..3, the tag/judgement rules of FORMAT.md, the
  per-corpus targets and an up-to-date datasheet.

``load`` validates and then completes a missing split (``splits.complete``): the
harness never runs on a corpus with errors, and always has a dev/test split.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from powercontext.backends.rules import MAX_TEXT_BYTES
from powercontext.canonical import MAX_ID_LENGTH, is_valid_id, nfc
from powercontext.suggest import did_you_mean

from . import counts
from .corpus import (  # noqa: F401  (the corpus model is part of this module's public names)
    DEFAULT_KIND,
    DEFAULT_STATE,
    EMPTY_ANSWER_TAGS,
    GRADES,
    KINDS,
    LANGS,
    LANGUAGE_NAMES,
    MEMORIES,
    MEMORIES_FILE,
    QRELS_FILE,
    QUERIES_FILE,
    SPLITS,
    STATES,
    STYLES,
    TAGS,
    UNKNOWN_LANG,
    Corpus,
    DatasetError,
    MemoryRecord,
    QueryRecord,
    is_chinese,
    language,
)
from ..errors import EvalError
from .splits import complete

__all__ = [
    "Corpus",
    "DatasetError",
    "MemoryRecord",
    "QueryRecord",
    "STYLES",
    "discover",
    "is_chinese",
    "language",
    "load",
    "validate",
]

_ENTRY_ID = re.compile(r"[a-z]{3}-[0-9]{4}")
_QUERY_ID = re.compile(r"[a-z]{3}-q[0-9]{3,4}")
_SOURCE = re.compile(r"src_[a-z0-9_]+")

#: Where the bundled corpora live: the project's datasets/ folder next to this package
#: (an editable install or a checkout). ``bundled()`` finds a corpus by its bare name
#: there, so ``--dataset atlas-etl`` works from any working directory.
BUNDLED_ROOT = Path(__file__).resolve().parents[2] / "datasets"


def bundled(name: str | Path) -> Path | None:
    """The bundled corpus called ``name`` (a bare name like ``atlas-etl``), or None."""
    name = str(name)
    if not name or "/" in name or "\\" in name or name in (".", ".."):
        return None
    path = BUNDLED_ROOT / name
    return path if (path / MEMORIES_FILE).is_file() else None


def discover(root: str | Path = "datasets") -> list[Path]:
    """The corpora under ``root``: every sub-folder holding a memories.jsonl."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / MEMORIES_FILE).is_file())


def load(path: str | Path, style: str = "any", split_seed: int = 0) -> Corpus:
    """Validate a corpus folder (see ``validate``) and give every query a split: the
    file's, or a seeded stratified one (``splits.complete``)."""
    return complete(validate(path, style), seed=split_seed)


def validate(path: str | Path, style: str = "any") -> Corpus:
    """Check a corpus folder and return it, or raise one ``DatasetError`` listing every
    error, each with its file and line. With ``style="bundled"`` the bundled corpora's
    conventions are errors too; otherwise they are returned as ``corpus.style_notes``."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}: use one of {', '.join(STYLES)}")
    path = Path(path)
    if not path.is_dir():  # one line, not three "file missing"
        siblings = [p.name for p in path.parent.iterdir() if p.is_dir()] if path.parent.is_dir() else []
        what = "is a file, not a corpus folder" if path.exists() else "no such folder"
        raise DatasetError(path, [f"{what}{did_you_mean(path.name, siblings)}"])
    check = _Check()
    entries = {e.id: (line, e) for line, e in _read_memories(path, check)}
    queries = {q.id: (line, q) for line, q in _read_queries(path, entries, check)}
    _check_prefix(entries, queries, check)
    qrels = _read_qrels(path, entries, queries, check)
    _check_answers(entries, queries, qrels, check)
    if not check.errors and style == "bundled":
        corpus = _corpus(path, entries, queries, qrels, ())
        _check_bundled_counts(corpus, check)
    problems = check.errors + (check.notes if style == "bundled" else [])
    if problems:
        raise DatasetError(path, problems)
    return _corpus(path, entries, queries, qrels, () if style == "bundled" else tuple(check.notes))


def _corpus(path: Path, entries: dict, queries: dict, qrels: dict, notes: tuple[str, ...]) -> Corpus:
    return Corpus(
        name=path.name,
        path=path,
        memories=tuple(e for _, e in entries.values()),
        queries=tuple(replace(q, judgements=qrels.get(q.id, {})) for _, q in queries.values()),
        qrels=qrels,
        style_notes=notes,
    )


class _Check:
    """Collects errors (a corpus cannot be measured) and style notes (it is not in
    the bundled corpora's house style)."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.notes: list[str] = []

    def error(self, message: str) -> None:
        self.errors.append(message)

    def style(self, message: str) -> None:
        self.notes.append(message)


# --- reading ------------------------------------------------------------------------

# field name -> (required?, type check, description for the message)
_STR = (lambda v: isinstance(v, str) and v.strip() != "", "a non-empty string")
_STRS = (
    lambda v: isinstance(v, list) and all(isinstance(x, str) and x.strip() for x in v),
    "a list of non-empty strings",
)
_OBJECT = (lambda v: isinstance(v, dict), "a JSON object")
_ENTRY_FIELDS = {
    "id": (True, *_STR),
    "memory": (True, *_STR),
    "text": (True, *_STR),
    "kind": (False, *_STR),
    "state": (False, *_STR),
    "history": (False, *_STRS),
    "sources": (False, *_STRS),
    "meta": (False, *_OBJECT),
}
_QUERY_FIELDS = {
    "id": (True, *_STR),
    "text": (True, *_STR),
    "memories": (True, *_STRS),
    "lang": (False, *_STR),
    "tags": (False, *_STRS),
    "split": (False, *_STR),
    "meta": (False, *_OBJECT),
}
# Fields every bundled record spells out although the format lets them default.
_BUNDLED_ENTRY_FIELDS = ("kind", "state")
_BUNDLED_QUERY_FIELDS = ("lang", "tags", "split")


def _jsonl(path: Path, check: _Check) -> list[tuple[str, dict[str, Any]]]:
    """``(where, object)`` for each line that is a JSON object; the rest are reported."""
    if not path.is_file():
        check.error(f"{path.name}: file missing")
        return []
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{path.name}:{n}"
        if not line.strip():
            check.style(f"{where}: empty line")
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            check.error(f"{where}: invalid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(obj, dict):
            check.error(f"{where}: expected a JSON object, got {type(obj).__name__}")
            continue
        rows.append((where, obj))
    if not rows and not check.errors:
        check.error(f"{path.name}: no records")
    return rows


def _fields_ok(obj: dict[str, Any], spec: dict, where: str, check: _Check) -> bool:
    """Report missing, unknown and mistyped fields; True if a record can be built.
    An unknown field is an error, not a note: a misspelt ``stat`` would otherwise
    silently leave an entry active (put free-form extras under ``meta``)."""
    ok = True
    for name in sorted(obj.keys() - spec.keys()):
        check.error(f"{where}: unexpected field '{name}' (known: {', '.join(spec)}; put extras under 'meta')")
    for name, (required, valid, wanted) in spec.items():
        if name not in obj:
            if required:
                check.error(f"{where}: missing field '{name}'")
                ok = False
        elif not valid(obj[name]):
            check.error(f"{where}: field '{name}' must be {wanted}, got {obj[name]!r}")
            ok = False
    return ok


def _one_of(value: str, allowed: tuple[str, ...], what: str, where: str, report) -> None:
    if value not in allowed:
        report(f"{where}: unknown {what} {value!r} (expected one of {', '.join(allowed)})")


def _check_id(value: str, where: str, check: _Check) -> bool:
    if is_valid_id(value):
        return True
    check.error(f"{where}: id {value!r} must be 1..{MAX_ID_LENGTH} printable ASCII characters without spaces")
    return False


def _check_text(text: str, what: str, where: str, check: _Check) -> None:
    size = len(nfc(text).strip().encode("utf-8"))
    if size > MAX_TEXT_BYTES:
        check.error(f"{where}: {what} is {size} UTF-8 bytes; the service accepts at most {MAX_TEXT_BYTES} "
                    "(split it into entries of one topic each)")


def _read_memories(path: Path, check: _Check) -> list[tuple[str, MemoryRecord]]:
    records: list[tuple[str, MemoryRecord]] = []
    seen: dict[str, str] = {}
    firsts: dict[tuple, tuple[str, str]] = {}
    for where, obj in _jsonl(path / MEMORIES_FILE, check):
        if not _fields_ok(obj, _ENTRY_FIELDS, where, check):
            continue
        entry = MemoryRecord(
            id=obj["id"], memory=obj["memory"], text=obj["text"],
            kind=obj.get("kind", DEFAULT_KIND), state=obj.get("state", DEFAULT_STATE),
            history=tuple(obj.get("history", ())), sources=tuple(obj.get("sources", ())),
            meta=obj.get("meta", {}),
        )
        if entry.id in seen:
            check.error(f"{where}: duplicate id {entry.id!r} (first at {seen[entry.id]})")
            continue
        seen[entry.id] = where
        _check_id(entry.id, where, check)
        _one_of(entry.kind, KINDS, "kind", where, check.error)
        _one_of(entry.state, STATES, "state", where, check.error)
        for source in entry.sources:
            if not is_valid_id(source):
                check.error(f"{where}: source name {source!r} must be 1..{MAX_ID_LENGTH} printable ASCII "
                            "characters without spaces")
            elif not _SOURCE.fullmatch(source):
                check.style(f"{where}: source {source!r} is not 'src_[a-z0-9_]+'")
        texts = (*entry.history, entry.text)
        for i, text in enumerate(texts):
            _check_text(text, "text" if i == len(texts) - 1 else f"history[{i}]", where, check)
        if any(nfc(a).strip() == nfc(b).strip() for a, b in zip(texts, texts[1:])):
            check.error(f"{where}: history repeats a text (a revision must change it)")
        # The service stores an entry once per content (kind, text, sources): two
        # entries of one memory that start identical would become one.
        key = (entry.memory, entry.kind, nfc(texts[0]).strip(), tuple(sorted(entry.sources)))
        if key in firsts:
            other_where, other = firsts[key]
            check.error(f"{where}: entry {entry.id!r} starts with the same kind, text and sources as {other!r} "
                        f"({other_where}) in memory {entry.memory!r}; the service would store them as one entry")
        firsts.setdefault(key, (where, entry.id))
        if not _ENTRY_ID.fullmatch(entry.id):
            check.style(f"{where}: id {entry.id!r} is not '<3-letter prefix>-<4 digits>'")
        _one_of(entry.memory, MEMORIES, "memory name", where, check.style)
        for name in _BUNDLED_ENTRY_FIELDS:
            if name not in obj:
                check.style(f"{where}: no '{name}' field (bundled corpora spell it out)")
        records.append((where, entry))
    return records


def _read_queries(path: Path, entries: dict, check: _Check) -> list[tuple[str, QueryRecord]]:
    records: list[tuple[str, QueryRecord]] = []
    seen: dict[str, str] = {}
    memory_names = {e.memory for _, e in entries.values()}
    with_split: list[str] = []
    without_split: list[str] = []
    for where, obj in _jsonl(path / QUERIES_FILE, check):
        if not _fields_ok(obj, _QUERY_FIELDS, where, check):
            continue
        query = QueryRecord(
            id=obj["id"], text=obj["text"], lang=obj.get("lang", UNKNOWN_LANG), memories=tuple(obj["memories"]),
            tags=tuple(obj.get("tags", ())), split=obj.get("split"), meta=obj.get("meta", {}),
        )
        if query.id in seen:
            check.error(f"{where}: duplicate id {query.id!r} (first at {seen[query.id]})")
            continue
        seen[query.id] = where
        _check_id(query.id, where, check)
        (with_split if query.split is not None else without_split).append(where)
        if query.split is not None:
            _one_of(query.split, SPLITS, "split", where, check.error)
        for what, values in (("memory name", query.memories), ("tag", query.tags)):
            if len(set(values)) != len(values):
                check.error(f"{where}: {what}s repeat: {list(values)}")
        if not query.memories:
            check.error(f"{where}: memories must name at least one memory")
        for name in query.memories:
            if entries and name not in memory_names:
                check.error(f"{where}: searches memory {name!r}, which has no entries in {MEMORIES_FILE}")
        # bundled style
        if not _QUERY_ID.fullmatch(query.id):
            check.style(f"{where}: id {query.id!r} is not '<3-letter prefix>-q<3 digits>'")
        for name in _BUNDLED_QUERY_FIELDS:
            if name not in obj:
                check.style(f"{where}: no '{name}' field (bundled corpora spell it out)")
        if "lang" in obj:
            _one_of(query.lang, LANGS, "lang", where, check.style)
        for value in query.memories:
            _one_of(value, MEMORIES, "memory name", where, check.style)
        for value in query.tags:
            _one_of(value, TAGS, "tag", where, check.style)
        if "tags" in obj and not query.tags:
            check.style(f"{where}: tags must be a non-empty list")
        written = language(query.text)
        if query.lang in LANGS and query.lang != "en" and written != query.lang:
            check.style(f"{where}: lang {query.lang!r} but the text has no {LANGUAGE_NAMES[query.lang]} characters"
                        + ("" if written == "en" else f" (it reads as {written!r})"))
        if query.lang == "en" and written != "en":
            check.style(f"{where}: lang 'en' but the text contains {LANGUAGE_NAMES[written]} characters")
        if query.has_tag("cjk") and query.lang not in ("zh", "ja"):
            check.style(f"{where}: tagged cjk but lang is {query.lang!r}")
        records.append((where, query))
    if with_split and without_split:
        check.error(f"{without_split[0]}: query has no split while {with_split[0]} has one "
                    f"({len(without_split)} without, {len(with_split)} with): give every query a split "
                    "(dev or test) or none, and the harness assigns a stratified one")
    return records


def _check_prefix(entries: dict, queries: dict, check: _Check) -> None:
    """Bundled style: all ids of a corpus share one prefix, so corpora can be mixed in one report."""
    ids = [(where, record.id) for where, record in (*entries.values(), *queries.values())]
    if not ids:
        return
    prefix = ids[0][1][:3]
    for where, rid in ids:
        if rid[:3] != prefix:
            check.style(f"{where}: id {rid!r} does not use the corpus prefix {prefix!r}")


def _read_qrels(path: Path, entries: dict, queries: dict, check: _Check) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    seen: dict[tuple[str, str], str] = {}
    file = path / QRELS_FILE
    if not file.is_file():
        check.error(f"{QRELS_FILE}: file missing (an empty file means every query is a negative)")
        return qrels
    for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        where = f"{QRELS_FILE}:{n}"
        parts = line.split()
        if not parts:
            check.style(f"{where}: empty line")
            continue
        if len(parts) != 4 or not re.fullmatch(r"-?[0-9]+", parts[3]):
            check.error(f"{where}: malformed line {line!r} (expected '<query id> 0 <entry id> <integer grade>')")
            continue
        qid, iteration, eid, grade_text = parts
        grade = int(grade_text)
        bad = len(check.errors)
        if iteration != "0":
            check.style(f"{where}: iteration column {iteration!r} is not 0")
        if grade < 0:
            check.error(f"{where}: grade {grade} is negative (0 = judged not relevant, ≥ 1 relevant)")
        elif grade not in GRADES:
            check.style(f"{where}: grade {grade} outside 1..3")
        if qid not in queries:
            check.error(f"{where}: unknown query {qid!r}")
        if eid not in entries:
            check.error(f"{where}: unknown entry {eid!r}")
        else:
            entry = entries[eid][1]
            if entry.state == "inactive":
                check.error(f"{where}: entry {eid!r} is inactive (forgotten entries may not be judged)")
            if qid in queries and entry.memory not in queries[qid][1].memories:
                check.error(f"{where}: entry {eid!r} is in memory {entry.memory!r}, "
                            f"which query {qid!r} does not search")
        if (qid, eid) in seen:
            check.error(f"{where}: duplicate judgement of {eid!r} for {qid!r} (first at {seen[qid, eid]})")
        seen.setdefault((qid, eid), where)
        if len(check.errors) == bad:
            qrels.setdefault(qid, {})[eid] = grade
    return qrels


def _check_answers(entries: dict, queries: dict, qrels: dict, check: _Check) -> None:
    """Bundled style: the rules that tie a query's tags to its judgements."""
    for where, query in queries.values():
        grades = qrels.get(query.id, {})
        answers = [entries[eid][1] for eid, g in grades.items() if g == 3]
        empty_tags = [t for t in EMPTY_ANSWER_TAGS if query.has_tag(t)]
        if empty_tags:
            if grades:
                check.style(f"{where}: query {query.id!r} is tagged {empty_tags[0]} but has "
                            f"{len(grades)} judgement(s) in {QRELS_FILE}")
            continue
        if query.has_tag("hard-negative") and all(g == 1 for g in grades.values()):
            continue  # a hard negative with nothing (or only marginal entries) relevant
        if not answers:
            check.style(f"{where}: query {query.id!r} has no grade-3 judgement "
                        "(add its answer, or tag it negative, forgotten or hard-negative)")
            continue
        if query.has_tag("multi") and sum(g >= 2 for g in grades.values()) < 2:
            check.style(f"{where}: tagged multi but fewer than two entries are graded 2 or 3")
        if query.has_tag("stale") and not any(e.history for e in answers):
            check.style(f"{where}: tagged stale but none of its grade-3 answers has a history")
        if query.has_tag("cjk") and not any(e.language == query.lang for e in answers):
            check.style(f"{where}: tagged cjk but none of its grade-3 answers is "
                        f"{LANGUAGE_NAMES.get(query.lang, 'Chinese')}")
        same_language = all(e.language == query.lang for e in answers)
        if query.has_tag("cross-lingual") and same_language:
            check.style(f"{where}: tagged cross-lingual but every grade-3 answer is in the query's language")


def _check_bundled_counts(corpus: Corpus, check: _Check) -> None:
    """Bundled style: the per-corpus targets of FORMAT.md, a split on every query and
    a datasheet whose generated counts are current."""
    if any(q.split is None for q in corpus.queries):
        check.style(f"{QUERIES_FILE}: queries have no split (bundled corpora ship one)")
    for shortfall in counts.shortfalls(counts.counts(corpus), corpora=1):
        check.style(f"{corpus.name}: below the FORMAT.md target: {shortfall}")
    readme = corpus.path / "README.md"
    if not readme.is_file():
        check.style("README.md: file missing (the datasheet)")
        return
    text = readme.read_text(encoding="utf-8")
    try:
        stale = counts.with_counts(text, corpus) != text
    except ValueError as exc:
        check.style(f"README.md: {exc}")
    else:
        if stale:
            check.style(f"README.md: counts out of date; run python -m powercontext.eval.corpora.datasheet {corpus.path}")


def resolve_datasets(datasets: Any = None, root: str | Path = "datasets") -> list[Path]:
    """Dataset folders from a path, a list of paths, or "all"/None (every bundled corpus)."""
    if datasets is None or datasets == "all" or datasets == ["all"]:
        found = discover(root)
        if not found:
            raise EvalError(f"no corpora under {Path(root).resolve()}: pass --dataset datasets/<name>")
        return found
    if isinstance(datasets, (str, Path)):
        datasets = [datasets]
    paths = []
    for d in datasets:
        p = Path(d)
        if not p.is_dir() and bundled(d) is not None:  # a bare bundled name, from any directory
            p = bundled(d)
        if not p.is_dir():
            names = ", ".join(q.name for q in discover(BUNDLED_ROOT))
            hint = f"; bundled corpora by name: {names}" if names else ""
            raise EvalError(f"{p}: no such dataset folder in {Path.cwd()} (expected a corpus folder with "
                            f"memories.jsonl{hint})")
        paths.append(p)
    return paths
