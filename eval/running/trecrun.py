"""Reading another system's run file (``--run``) without trusting it.

A run file comes from outside: one line with a 50 MB document id used to be parsed whole
(by ranx, into its numba dictionaries) before any id was looked at — minutes and
gigabytes before the refusal. Here a TREC run (plain or gzipped, told by its first
bytes) is streamed one bounded line at a time: no line longer than ``MAX_LINE_BYTES``
is ever held, and every line is checked as it is read, so a bad file is refused at its
first bad line, with that line's number, within a second:

* six fields, ``<qid> Q0 <docid> <rank> <score> <tag>``;
* ids valid (``canonical.is_valid_id``: 1..128 printable ASCII characters), then
  known — the query a query of the corpora swept, the document one of their entries;
* the score a finite number (NaN or infinity cannot be ranked);
* each (query, document) pair once. A repeated pair is REFUSED, not kept-first: which
  of two scores the other system meant cannot be guessed, and trec_eval and ranx
  disagree on it (ranx keeps the last).

A ranx JSON run (``.json``) or ranx LZ4 run (``.lz4``) has no lines; it is read whole
(JSON up to ``MAX_JSON_BYTES``) and checked by the same rules, naming the query and
document instead of a line.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import IO, Any, Collection, Iterator

from powercontext.canonical import MAX_ID_LENGTH, is_valid_id
from powercontext.errors import PowerContextError, shown

from ..errors import EvalError

__all__ = ["MAX_JSON_BYTES", "MAX_LINE_BYTES", "RunFileError", "read_ranked"]

#: A run line: two ids of at most 128 characters, a rank, a score and a tag, with room.
MAX_LINE_BYTES = 4096
#: A JSON run is parsed whole; a bigger one should be given as TREC lines (streamed).
MAX_JSON_BYTES = 256 * 1024 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_FORMAT = "<qid> Q0 <docid> <rank> <score> <tag>"


class RunFileError(EvalError, PowerContextError, ValueError):
    """A ``--run`` file the harness will not read; the message names the file, the line
    and what to change. (``EvalError``, so the CLI prints it as one line and exits 2.)"""


class _Checker:
    """The rules every entry of a run obeys, whatever the file's format."""

    def __init__(self, path: Path, query_ids: Collection[str], entry_ids: Collection[str]) -> None:
        self.path, self.queries, self.entries = path, frozenset(query_ids), frozenset(entry_ids)
        self.scores: dict[str, dict[str, float]] = {}
        self.first: dict[tuple[str, str], str] = {}  # where each pair was seen (a duplicate's message)

    def refuse(self, where: str, what: str) -> RunFileError:
        return RunFileError(f"{self.path}, {where}: {what}")

    def add(self, where: str, qid: Any, docid: Any, score: Any) -> None:
        for kind, value, known, plural in (("query", qid, self.queries, "queries"),
                                           ("document", docid, self.entries, "entries")):
            if not is_valid_id(value):
                raise self.refuse(where, f"{kind} id {shown(value)} is not an id (1..{MAX_ID_LENGTH} printable "
                                         f"ASCII characters without spaces)")
            if value not in known:
                raise self.refuse(where, f"{kind} id {shown(value)} is not one of the {plural} of the corpora "
                                         f"swept; an external run must use the corpus's query and entry ids")
        try:
            value = float(score)
        except (TypeError, ValueError):
            raise self.refuse(where, f"score {shown(score)} is not a number") from None
        if not math.isfinite(value):
            raise self.refuse(where, f"score {shown(score)} is not a finite number; give every document a "
                                     f"real score (NaN and infinity cannot be ranked)")
        first = self.first.setdefault((qid, docid), where)
        if first != where:
            raise self.refuse(where, f"query {qid} ranks document {docid} again ({first} already did); a run "
                                     f"scores each document once per query: remove one of the two")
        self.scores.setdefault(qid, {})[docid] = value

    def ranked(self) -> dict[str, tuple[str, ...]]:
        """Best score first, ties by document id (as trec_eval breaks them)."""
        return {q: tuple(d for d, _ in sorted(docs.items(), key=lambda x: (-x[1], x[0])))
                for q, docs in self.scores.items()}


def _lines(raw: IO[bytes], check: _Checker) -> Iterator[tuple[int, str]]:
    """(number, text) of each line, never holding more than MAX_LINE_BYTES of one."""
    number = 0
    while True:
        number += 1
        try:
            line = raw.readline(MAX_LINE_BYTES + 1)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            raise check.refuse(f"line {number}", f"the file cannot be read on ({type(exc).__name__}: {exc})") from None
        if not line:
            return
        if len(line) > MAX_LINE_BYTES:
            raise check.refuse(f"line {number}", f"longer than {MAX_LINE_BYTES} bytes; a run line is {_FORMAT} "
                                                 f"with ids of at most {MAX_ID_LENGTH} characters")
        try:
            yield number, line.decode("utf-8")
        except UnicodeDecodeError:
            raise check.refuse(f"line {number}", "not UTF-8 text; is this a TREC run file?") from None


def _read_trec(path: Path, check: _Checker) -> None:
    with open(path, "rb") as plain:
        gzipped = plain.read(2) == _GZIP_MAGIC
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as raw:
        for number, text in _lines(raw, check):
            fields = text.split()
            if not fields:
                continue  # a blank line (a trailing one, say) holds nothing to check
            if len(fields) != 6:
                raise check.refuse(f"line {number}", f"{len(fields)} fields where a run line has 6: {_FORMAT}")
            qid, _, docid, _, score, _ = fields
            check.add(f"line {number}", qid, docid, score)


def _pairs_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (``json`` would keep the last silently)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(Exception):
    pass


def _read_mapping(path: Path, check: _Checker) -> None:
    """A ranx JSON or LZ4 run: ``{qid: {docid: score}}``."""
    try:
        if path.suffix == ".lz4":
            from ranx.io import load_lz4

            run = load_lz4(str(path))
        else:
            if path.stat().st_size > MAX_JSON_BYTES:
                raise check.refuse("the whole file", f"a JSON run over {MAX_JSON_BYTES >> 20} MiB; give it as TREC "
                                                     f"lines ({_FORMAT}), which are streamed")
            with open(path, "rb") as fh:
                run = json.load(fh, object_pairs_hook=_pairs_once)
    except _DuplicateKey as exc:
        raise check.refuse("the whole file", f"the key {shown(exc.args[0])} is given twice in one object; a run "
                                             f"scores each document once per query: remove one") from None
    except RunFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parse failure is the file's, said in one line
        raise check.refuse("the whole file", f"not a ranx run ({type(exc).__name__}: {shown(str(exc))})") from None
    if not isinstance(run, dict) or not all(isinstance(docs, dict) for docs in run.values()):
        raise check.refuse("the whole file", "not a ranx run: expected {query id: {document id: score}}")
    for qid, docs in run.items():
        for docid, score in docs.items():
            if isinstance(score, bool):
                score = None  # JSON true is not a score
            check.add(f"query {shown(qid)}", qid, docid, score)


def read_ranked(path: str | Path, query_ids: Collection[str], entry_ids: Collection[str]) -> dict[str, tuple[str, ...]]:
    """query id → its documents, best first, from a TREC run (plain or gzipped) or a ranx
    JSON/LZ4 run, every entry checked as it is read (see the module's rules)."""
    path = Path(path)
    if not path.is_file():
        raise RunFileError(f"{path}: no such run file")
    check = _Checker(path, query_ids, entry_ids)
    try:
        if path.suffix in (".json", ".lz4"):
            _read_mapping(path, check)
        else:
            _read_trec(path, check)
    except OSError as exc:
        raise RunFileError(f"{path}: cannot read the run file ({exc.strerror or type(exc).__name__})") from None
    return check.ranked()
