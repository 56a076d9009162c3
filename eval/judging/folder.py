"""The pool folder: the one definition of its files, shared by pooling, judging and export.

    FOLDER/memories.jsonl   the snapshot's entries, in the corpus format (datasets/FORMAT.md)
    FOLDER/queries.jsonl    each distinct question once, in the corpus format
                            ("meta": {"log_count": N} when it came from the search log)
    FOLDER/pool.jsonl       one line per pooled (question, entry) pair: {"query_id",
                            "entry_id", "sources", "best_rank", "signals", "pooled",
                            "channels": {profile id: {channel: the admission signals}}}
                            (``channels``: what order.py ranks questions by, no database)
    FOLDER/pool.json        {"format": "powercontext.pool.v1", "database", "memories",
                            "depth", "profiles", "questions_from", "created", "complete"}
    FOLDER/judgments/<judge>.jsonl   append-only, one line per click (latest per pair wins);
                            read and written by judgments.py, the one definition of judgments

``pooled`` on a pool line is how many lines its question has: a question is done when
all of them are there, so a pool killed mid-question redoes just that question.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from powercontext.errors import PowerContextError

__all__ = ["FORMAT", "JudgingError", "PoolFolder", "append_lines", "read_jsonl", "write_atomic"]

FORMAT = "powercontext.pool.v1"


class JudgingError(PowerContextError, ValueError):
    """A pool folder, a judgments or qrels file, or a pool, judging or export request that
    cannot be served as given. The one definition: judgments.py and the rest import it."""


def write_atomic(path: Path, text: str) -> None:
    """Write a whole file or nothing: a temporary sibling renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in rows)


def append_lines(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Append whole lines in one write, flushed to disk (a crash can cut only the last)."""
    data = jsonl(rows).encode("utf-8")
    if not data:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: Path) -> tuple[list[tuple[int, dict]], str | None]:
    """The lines of a JSON-lines file as (line number, object), and a note naming a
    truncated last line (no newline and not JSON), which is left out. A bad line
    elsewhere is an error: only the last can be cut by a crash."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JudgingError(f"{path}: not UTF-8 (byte {exc.start})") from None
    lines = text.split("\n")
    rows, note = [], None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):  # the last piece had no newline: cut by a crash
                note = f"{path}:{number}: truncated last line ignored"
                continue
            raise JudgingError(f"{path}:{number}: not a JSON line") from None
        if not isinstance(obj, dict):
            raise JudgingError(f"{path}:{number}: not a JSON object")
        rows.append((number, obj))
    return rows, note


@dataclass
class PoolFolder:
    """A pool folder's paths and its readers."""

    root: Path
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.root = Path(self.root)

    memories_path = property(lambda self: self.root / "memories.jsonl")
    queries_path = property(lambda self: self.root / "queries.jsonl")
    pool_path = property(lambda self: self.root / "pool.jsonl")
    meta_path = property(lambda self: self.root / "pool.json")

    def meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise JudgingError(f"{self.root}: not a pool folder (no pool.json)") from None
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise JudgingError(f"{self.meta_path}: not a JSON pool description") from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise JudgingError(f"{self.meta_path}: not a {FORMAT} pool description")
        return meta

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        write_atomic(self.meta_path, json.dumps(dict(meta), indent=1, ensure_ascii=False) + "\n")

    def _rows(self, path: Path) -> list[dict]:
        rows, note = read_jsonl(path)
        if note:
            self.notes.append(note)
        return [r for _, r in rows]

    def memories(self) -> dict[str, dict]:
        return {r["id"]: r for r in self._rows(self.memories_path)}

    def queries(self) -> dict[str, dict]:
        return {r["id"]: r for r in self._rows(self.queries_path)}

    def pool_lines(self) -> list[dict]:
        return self._rows(self.pool_path)

    def complete_pool(self) -> tuple[dict[str, list[dict]], bool]:
        """The pool lines of the questions pooled in full, by query id, and whether the
        file held anything else (an interrupted question, a truncated line)."""
        by_query: dict[str, list[dict]] = {}
        rows, note = read_jsonl(self.pool_path)
        for _, row in rows:
            by_query.setdefault(row.get("query_id"), []).append(row)
        done = {q: lines for q, lines in by_query.items() if all(r.get("pooled") == len(lines) for r in lines)}
        return done, note is not None or len(done) != len(by_query)
