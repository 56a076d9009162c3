"""What every importer shares: reading upstream files with errors that name the file
and the first missing field, and writing a corpus in our format (datasets/FORMAT.md)
with a datasheet stub.

``CorpusBuilder`` keeps the format's rules so importers do not have to:

* ids are made valid for the service (printable ASCII without spaces, ≤ 128) and
  unique; an id that had to change keeps the upstream one in ``meta``;
* a text over the service's 8 KiB limit is split at whitespace into parts, each its
  own entry (``<id>.p2`` …), and a judgement of the text applies to every part;
* two entries of one memory with the same text and sources are ONE entry for the
  service (it stores content once), so the second becomes an alias of the first and
  its judgements go to the first (the higher grade wins);
* the written folder is validated (``datasets.validate``) before the importer returns,
  and the datasheet's counts section is generated;
* the corpus is written into a temporary folder next to OUT and renamed into place
  only once it validated, so a failure leaves OUT as it was (and ``--force`` leaves no
  file of the previous corpus behind).

Upstream files that cannot be read — not UTF-8, JSON nested too deeply, a folder where
a file should be — and texts that have no UTF-8 form are ``LayoutError``s naming the file
or the item, never tracebacks.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from powercontext.backends.rules import MAX_TEXT_BYTES
from powercontext.canonical import MAX_ID_LENGTH, nfc
from powercontext.errors import PowerContextError

from .. import datasheet
from ..datasets import MEMORIES_FILE, QRELS_FILE, QUERIES_FILE, validate

__all__ = ["CorpusBuilder", "Datasheet", "GradedCounts", "ImporterError", "LayoutError", "add_graded_queries", "need",
           "read_json", "read_jsonl", "reading", "split_text"]


class ImporterError(PowerContextError, ValueError):
    """An import cannot run as asked (the message says why and what to do)."""


class LayoutError(ImporterError):
    """The source is not in the upstream layout: the message names the file and the
    first missing or mistyped field."""


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", (str, int): "a string or number"}


def need(obj: Any, key: str, file: str | Path, where: str, kind: type | tuple | None = None) -> Any:
    """``obj[key]``, or a LayoutError naming ``file``, the place and the field."""
    name = Path(file).name
    if not isinstance(obj, dict):
        raise LayoutError(f"{name}: {where}: expected an object with field '{key}', got {type(obj).__name__}")
    if key not in obj:
        raise LayoutError(f"{name}: {where}: missing field '{key}'")
    value = obj[key]
    if kind is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        wanted = _TYPE_NAMES.get(kind, str(kind))
        raise LayoutError(f"{name}: {where}: field '{key}' must be {wanted}, got {type(value).__name__}")
    return value


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """What can go wrong while reading an upstream file, as one LayoutError naming it."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise LayoutError(f"{path.name}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start}); "
                          "convert the file to UTF-8") from None
    except RecursionError:
        raise LayoutError(f"{path.name}: JSON nested too deeply to read") from None
    except OSError as exc:
        raise LayoutError(f"{path}: cannot be read ({exc.strerror or type(exc).__name__})") from None


def read_json(path: Path) -> Any:
    if not path.is_file():
        raise LayoutError(f"{path}: file missing")
    with reading(path):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise LayoutError(f"{path.name}: invalid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from exc


def read_jsonl(path: Path) -> Iterable[tuple[int, dict]]:
    """``(line number, object)`` per non-empty line."""
    if not path.is_file():
        raise LayoutError(f"{path}: file missing")
    with reading(path), path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LayoutError(f"{path.name}:{n}: invalid JSON ({exc.msg})") from exc
            if not isinstance(obj, dict):
                raise LayoutError(f"{path.name}:{n}: expected a JSON object, got {type(obj).__name__}")
            yield n, obj


def split_text(text: str, limit: int = MAX_TEXT_BYTES) -> list[str]:
    """``text`` (NFC, stripped) cut at whitespace into parts of at most ``limit`` UTF-8
    bytes; a single word longer than that is cut inside."""
    text = nfc(text).strip()
    if len(text.encode("utf-8")) <= limit:
        return [text] if text else []
    parts, current = [], ""
    for word in re.split(r"(\s+)", text):
        candidate = current + word
        if len(candidate.encode("utf-8")) <= limit:
            current = candidate
            continue
        if current.strip():
            parts.append(current.strip())
        current = word.lstrip()
        while len(current.encode("utf-8")) > limit:  # one very long word
            cut = limit
            while len(current[:cut].encode("utf-8")) > limit:
                cut -= 1
            parts.append(current[:cut])
            current = current[cut:]
    if current.strip():
        parts.append(current.strip())
    return parts


def safe_id(raw: str) -> str:
    """A valid service id derived from ``raw`` (spaces and non-ASCII become ``_``)."""
    s = "".join(c if 33 <= ord(c) <= 126 else "_" for c in str(raw))
    return (s or "_")[:MAX_ID_LENGTH]


@dataclass
class Datasheet:
    """The stub README.md of an imported corpus."""

    title: str
    origin: str  # where the data comes from (paper, repository)
    licence: str
    source: str  # the file or folder it was imported from
    mapping: list[str] = field(default_factory=list)  # how upstream fields became entries, queries, qrels
    notes: list[str] = field(default_factory=list)  # what was dropped, merged, split

    def render(self) -> str:
        lines = [f"# {self.title} — datasheet (imported)", "",
                 "Written by `python -m powercontext.eval import`; edit the prose, never the counts.", "",
                 "## Origin and licence", "", f"- origin: {self.origin}", f"- licence: {self.licence}",
                 f"- imported from: `{self.source}`", "",
                 "The licence of the upstream data applies to this folder. Do not commit it to a repository "
                 "whose licence it does not allow.", "", "## How it was mapped", ""]
        lines += [f"- {m}" for m in self.mapping]
        if self.notes:
            lines += ["", "## What the import changed", ""] + [f"- {n}" for n in self.notes]
        lines += ["", "## Counts", "", datasheet.BEGIN, datasheet.END, ""]
        return "\n".join(lines)


class CorpusBuilder:
    """Collects entries, queries and judgements, then writes and validates a corpus."""

    def __init__(self) -> None:
        self._entries: dict[str, dict] = {}
        self._by_content: dict[tuple, str] = {}
        self._alias: dict[str, list[str]] = {}  # upstream key -> entry ids
        self._queries: dict[str, dict] = {}
        self._qrels: dict[str, dict[str, int]] = {}
        self.merged = 0  # entries that were aliases of an identical one
        self.split_parts = 0  # entries made by splitting an over-long text
        self.renamed = 0  # ids that had to change to be valid
        self.empty = 0  # upstream texts that were empty

    def _unique(self, raw: str, taken: Mapping[str, Any]) -> str:
        base = safe_id(raw)
        if base != raw:
            self.renamed += 1
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            suffix = f"~{n}"
            candidate = base[: MAX_ID_LENGTH - len(suffix)] + suffix
        return candidate

    def entry(self, key: str, memory: str, text: str, sources: Sequence[str] = (), kind: str | None = None,
              meta: Mapping[str, Any] | None = None) -> list[str]:
        """Add the entry known upstream as ``key``; returns the entry ids it became
        (several when the text was split, an earlier one when it is a duplicate, none
        when it is empty). ``ids_of(key)`` returns the same later."""
        parts = split_text(utf8_text(text, f"the text of {key!r}"))
        if not parts:
            self.empty += 1
            self._alias[key] = []
            return []
        sources = tuple(sorted({safe_id(s) for s in sources}))
        ids = []
        for i, part in enumerate(parts):
            content = (memory, kind or "fact", part, sources)
            if content in self._by_content:
                self.merged += 1
                ids.append(self._by_content[content])
                continue
            raw = key if len(parts) == 1 else f"{key}.p{i + 1}"
            eid = self._unique(raw, self._entries)
            row: dict[str, Any] = {"id": eid, "memory": memory, "text": part}
            if kind:
                row["kind"] = kind
            if sources:
                row["sources"] = list(sources)
            extra = dict(meta or {})
            if eid != raw:
                extra["upstream_id"] = key
            if len(parts) > 1:
                extra["part"] = f"{i + 1}/{len(parts)}"
            if extra:
                row["meta"] = extra
            self._entries[eid] = row
            self._by_content[content] = eid
            if len(parts) > 1:
                self.split_parts += 1
            ids.append(eid)
        self._alias[key] = list(dict.fromkeys(ids))
        return self._alias[key]

    def ids_of(self, key: str) -> list[str] | None:
        """The entry ids of an upstream key (None if it was never added)."""
        return self._alias.get(key)

    def query(self, key: str, text: str, memories: Sequence[str], tags: Sequence[str] = (), lang: str | None = None,
              meta: Mapping[str, Any] | None = None) -> str:
        qid = self._unique(key, self._queries)
        row: dict[str, Any] = {"id": qid, "text": nfc(str(text)).strip(), "memories": list(dict.fromkeys(memories))}
        if lang:
            row["lang"] = lang
        if tags:
            row["tags"] = list(dict.fromkeys(tags))
        extra = dict(meta or {})
        if qid != key:
            extra["upstream_id"] = key
        if extra:
            row["meta"] = extra
        self._queries[qid] = row
        return qid

    def judge(self, qid: str, entry_ids: Iterable[str], grade: int) -> None:
        """Judge entries for a query; the same pair judged twice keeps the higher grade."""
        judged = self._qrels.setdefault(qid, {})
        for eid in entry_ids:
            judged[eid] = max(grade, judged.get(eid, grade))

    def set_splits(self, split_of: Mapping[str, str]) -> None:
        """Give queries a split (``dev``/``test``); the format wants one on every query or none."""
        for qid, split in split_of.items():
            if qid in self._queries:
                self._queries[qid]["split"] = split

    def drop_query(self, qid: str) -> None:
        self._queries.pop(qid, None)
        self._qrels.pop(qid, None)

    def judged(self, qid: str) -> dict[str, int]:
        return dict(self._qrels.get(qid, {}))

    @property
    def counts(self) -> tuple[int, int]:
        return len(self._entries), len(self._queries)

    def write(self, out: Path, sheet: Datasheet, force: bool = False) -> Path:
        """Write the corpus and its datasheet into ``out`` (refusing a non-empty folder
        unless ``force``), validate it and fill in the datasheet's counts. Everything is
        written into a temporary folder beside ``out`` first and renamed into place at
        the end: a failure on the way leaves ``out`` untouched."""
        out = _target(Path(out), force)
        if not self._entries:
            raise ImporterError("the source holds no entry with text: nothing to import")
        if not self._queries:
            raise ImporterError("the source holds no query that could be judged: nothing to import")
        self._notes(sheet)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".importing", dir=out.parent))
        except OSError as exc:
            raise ImporterError(f"cannot write under {out.parent}: {exc.strerror or exc}") from None
        try:
            self._write_files(work, sheet)
            validate(work)  # the builder's rules make this pass; a failure here is a bug worth seeing
            datasheet.update_readme(work)
            os.chmod(work, 0o777 & ~_umask())
            _replace(work, out)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        return out

    def _write_files(self, folder: Path, sheet: Datasheet) -> None:
        def jsonl(name: str, rows: Iterable[dict], what: str) -> None:
            with (folder / name).open("w", encoding="utf-8") as fh:
                for row in rows:
                    fh.write(_json_line(row, what))

        jsonl(MEMORIES_FILE, self._entries.values(), "entry")
        jsonl(QUERIES_FILE, self._queries.values(), "query")
        with (folder / QRELS_FILE).open("w", encoding="utf-8") as fh:
            for qid in self._queries:
                for eid, grade in self._qrels.get(qid, {}).items():
                    fh.write(f"{qid} 0 {eid} {grade}\n")
        (folder / "README.md").write_text(sheet.render(), encoding="utf-8")

    def _notes(self, sheet: Datasheet) -> None:
        if self.merged:
            sheet.notes.append(f"{self.merged} upstream text(s) repeated an earlier one in the same memory with the "
                               "same sources; they were merged into that entry (the service stores content once) "
                               "and their judgements moved to it")
        if self.split_parts:
            sheet.notes.append(f"texts over the service's {MAX_TEXT_BYTES}-byte limit were split at whitespace into "
                               f"{self.split_parts} parts (ids `<id>.pN`); a judgement of such a text applies to "
                               "every part")
        if self.renamed:
            sheet.notes.append(f"{self.renamed} id(s) were not valid service ids (printable ASCII, no spaces, "
                               f"≤ {MAX_ID_LENGTH}) or collided; they were rewritten and the upstream id kept in "
                               "`meta.upstream_id`")
        if self.empty:
            sheet.notes.append(f"{self.empty} upstream text(s) were empty and were skipped")


def utf8_text(text: str, what: str) -> str:
    """``text`` if it has a UTF-8 form; a lone surrogate (JSON's ``\\ud800`` escape with no
    pair) is refused in one line naming ``what`` holds it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise LayoutError(
            f"{what}: holds a lone surrogate ({exc.object[exc.start:exc.end]!r}), a \\ud800-style "
            "escape with no character; fix it in the upstream file"
        ) from None
    return text


def _json_line(row: dict, what: str) -> str:
    return utf8_text(json.dumps(row, ensure_ascii=False) + "\n", f"{what} {row.get('id')!r}")


def _target(out: Path, force: bool) -> Path:
    """``out`` as a folder the import may fill: refused (one line, nothing written) when
    it is a file, a dangling symlink, under a file, or a non-empty folder without force."""
    if out.is_symlink():
        if not out.exists():
            raise ImporterError(f"{out} is a symlink to {os.readlink(out)}, which does not exist: give a folder")
        out = out.resolve()
    if out.exists() and not out.is_dir():
        raise ImporterError(f"{out} is a file, not a folder: choose a folder for the corpus")
    for parent in out.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ImporterError(f"{out} is under {parent}, which is a file: choose a folder for the corpus")
            break
    if out.is_dir():
        try:
            non_empty = any(out.iterdir())
        except OSError as exc:
            raise ImporterError(f"{out} cannot be read: {exc.strerror or exc}") from None
        if non_empty and not force:
            raise ImporterError(f"{out} exists and is not empty: choose a new folder (or pass --force to overwrite)")
    return out


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _replace(work: Path, out: Path) -> None:
    """Put the finished folder at ``out``: a rename onto a missing or empty folder; a
    non-empty one (``--force``) is moved aside first and removed after, so none of its
    files stays behind."""
    try:
        if out.is_dir() and any(out.iterdir()):
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".replaced", dir=out.parent))
            os.rename(out, old / out.name)
            os.rename(work, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(work, out)
    except OSError as exc:
        raise ImporterError(f"cannot move the corpus into {out}: {exc.strerror or exc}") from None


@dataclass
class GradedCounts:
    """What ``add_graded_queries`` left out, for the datasheet."""

    not_relevant: int = 0  # judgements with grade ≤ 0
    unknown_documents: int = 0  # judgements of a document the collection does not hold
    unknown_queries: int = 0  # judgements of a query with no text
    unjudged: int = 0  # queries left without a judgement of grade ≥ 1

    def notes(self, queries: str, grade: str, documents: str, topics: str) -> list[str]:
        """Datasheet lines for what was left out, in the upstream's words (``queries``:
        what a query is called, ``grade``: the judgement column, ``documents`` and
        ``topics``: where documents and query texts come from)."""
        counts = ((self.not_relevant, f"judgement(s) with {grade} ≤ 0 were dropped"),
                  (self.unjudged, f"{queries} had no judgement of {grade} ≥ 1 and were not imported"),
                  (self.unknown_documents, f"judgement(s) named a document missing from {documents}"),
                  (self.unknown_queries, f"judgement(s) named a query missing from {topics}"))
        return [f"{n} {what}" for n, what in counts if n]


def add_graded_queries(build: CorpusBuilder, judgements: Iterable[tuple[str, str, int]], texts: Mapping[str, str],
                       memory: str, meta: Mapping[str, Mapping[str, Any]] | None = None,
                       ) -> tuple[dict[str, str], GradedCounts]:
    """Queries of a judged collection (BEIR, TREC): one per query id that has text and
    at least one judgement of grade ≥ 1, searching ``memory``, judged with those
    grades. A pool judges only some documents, so a query with none relevant is not a
    negative and is left out. Returns ({upstream query id: query id}, what was left out)."""
    keys: dict[str, str] = {}
    counts = GradedCounts()
    for qid, doc_id, grade in judgements:
        if not texts.get(qid, "").strip():
            counts.unknown_queries += 1
            continue
        if qid not in keys:
            keys[qid] = build.query(qid, texts[qid], [memory], meta=(meta or {}).get(qid))
        if grade < 1:
            counts.not_relevant += 1
            continue
        ids = build.ids_of(doc_id)
        if ids is None:
            counts.unknown_documents += 1
            continue
        build.judge(keys[qid], ids, grade)
    for qid, key in list(keys.items()):
        if not build.judged(key):
            build.drop_query(key)
            del keys[qid]
            counts.unjudged += 1
    return keys, counts
