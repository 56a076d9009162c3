"""A judge's judgments of a pool folder: reading the folder, the append-only
``judgments/<judge>.jsonl`` file, the exclusive writer lock, and each question's state.

The folder format is the shared contract of issue 44 (pool.json, pool.jsonl,
memories.jsonl, queries.jsonl, judgments/<judge>.jsonl). The reader here is minimal —
what judging needs — and checks only what judging relies on; ``folder.py`` (pooling) is
the one definition of how a folder is written.

Every click is one JSON line written with a single ``write`` on an ``O_APPEND``
descriptor and fsync'd, so a crash leaves at most one truncated last line; the reader
reports that line and ignores it. Any other bad line (a grade 3, an entry that is not in
the snapshot, broken JSON in the middle) refuses the file with ``file:line: what``:
hand edits are not silently dropped.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from powercontext.errors import PowerContextError

__all__ = [
    "DEFAULT_JUDGE", "Candidate", "Entry", "Judgment", "JudgmentLog", "JudgingError", "JudgeLockedError",
    "JudgeWriter", "Pool", "Question", "QuestionState", "check_judge", "read_judgments", "read_pool", "judges_of",
]

DEFAULT_JUDGE = "default"
_JUDGE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
GRADES = (0, 1, 2)


class JudgingError(PowerContextError, ValueError):
    """A pool folder, a judgments file or a qrels file that cannot be judged as given."""


class JudgeLockedError(JudgingError):
    """Another process holds this judge name's lock on the folder."""


def check_judge(name: str) -> str:
    if not isinstance(name, str) or not _JUDGE_NAME.fullmatch(name):
        raise JudgingError(f"bad judge name {str(name)[:80]!r}: use 1-64 letters, digits, '_' or '-'")
    return name


# ---------------------------------------------------------------------------- the pool folder

@dataclass(frozen=True)
class Entry:
    id: str
    memory: str
    kind: str
    text: str


@dataclass(frozen=True)
class Question:
    id: str
    text: str
    memories: tuple[str, ...]
    lang: str = "und"


@dataclass(frozen=True)
class Candidate:
    entry_id: str
    sources: tuple[str, ...]
    best_rank: int


@dataclass(frozen=True)
class Pool:
    """What a judge sees: the questions in file order, the snapshot's entries, and each
    question's pooled candidates (pool.jsonl order, which reveals rank: never shown as is)."""

    folder: Path
    questions: dict[str, Question]
    entries: dict[str, Entry]
    candidates: dict[str, tuple[Candidate, ...]]

    def pooled(self, query_id: str) -> set[str]:
        return {c.entry_id for c in self.candidates.get(query_id, ())}

    @property
    def judgments_dir(self) -> Path:
        return self.folder / "judgments"


def _jsonl(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line; a readable error for anything else."""
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise JudgingError(f"{path}: missing (not a pool folder?)") from None
    except UnicodeDecodeError as exc:
        raise JudgingError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise JudgingError(f"{path}: cannot read ({exc.strerror})") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise JudgingError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise JudgingError(f"{path}:{number}: not a JSON object")
        yield number, obj


def _field(path: Path, number: int, obj: dict, name: str, kind: type = str, default: Any = None) -> Any:
    value = obj.get(name, default)
    if not isinstance(value, kind) or (kind is str and not value):
        raise JudgingError(f"{path}:{number}: {name!r} missing or not a {'non-empty string' if kind is str else kind.__name__}")
    return value


def short_path(path: Path) -> str:
    """A path for a one-line message: a 100 kB argument is not quoted whole."""
    text = str(path)
    return text if len(text) <= 160 else f"{text[:120]}… ({len(text)} characters)"


def read_pool(folder: str | Path) -> Pool:
    """The pool folder's questions, snapshot entries and candidates, checked against each other."""
    folder = Path(folder).expanduser()
    try:
        is_dir = folder.is_dir()
    except OSError as exc:  # a name too long for the file system, say
        raise JudgingError(f"{short_path(folder)}: not a pool folder ({exc.strerror})") from None
    if not is_dir:
        raise JudgingError(f"{short_path(folder)}: no such pool folder")
    entries: dict[str, Entry] = {}
    path = folder / "memories.jsonl"
    for n, obj in _jsonl(path):
        eid = _field(path, n, obj, "id")
        entries[eid] = Entry(eid, _field(path, n, obj, "memory"), obj.get("kind") or "fact", _field(path, n, obj, "text"))
    questions: dict[str, Question] = {}
    path = folder / "queries.jsonl"
    for n, obj in _jsonl(path):
        qid = _field(path, n, obj, "id")
        questions[qid] = Question(qid, _field(path, n, obj, "text"), tuple(_field(path, n, obj, "memories", list)),
                                  str(obj.get("lang") or "und"))
    pooled: dict[str, list[Candidate]] = {q: [] for q in questions}
    path = folder / "pool.jsonl"
    for n, obj in _jsonl(path):
        qid, eid = _field(path, n, obj, "query_id"), _field(path, n, obj, "entry_id")
        if qid not in questions:
            raise JudgingError(f"{path}:{n}: query {qid!r} is not in queries.jsonl")
        if eid not in entries:
            raise JudgingError(f"{path}:{n}: entry {eid!r} is not in memories.jsonl")
        rank = obj.get("best_rank", 0)
        pooled[qid].append(Candidate(eid, tuple(str(s) for s in obj.get("sources") or ()),
                                     rank if isinstance(rank, int) else 0))
    return Pool(folder, questions, entries, {q: tuple(c) for q, c in pooled.items()})


# ---------------------------------------------------------------------------- one judgment line

Outcome = Literal["graded", "unanswerable", "skip", "note"]


class Judgment(BaseModel):
    """One click. ``entry_id`` is None for a question-level outcome (unanswerable, skip,
    a note on the question)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    query_id: str
    entry_id: Optional[str] = None
    grade: Optional[int] = None
    outcome: Outcome
    note: Optional[str] = None
    judge: str
    at: str

    @model_validator(mode="after")
    def _consistent(self) -> "Judgment":
        if self.outcome == "graded":
            if self.entry_id is None:
                raise ValueError("a grade needs an entry_id")
            if self.grade not in GRADES:
                raise ValueError(f"grade {self.grade!r} is not 0, 1 or 2")
        elif self.grade is not None:
            raise ValueError(f"outcome {self.outcome!r} carries no grade (got {self.grade!r})")
        if self.outcome in ("unanswerable", "skip") and self.entry_id is not None:
            raise ValueError(f"{self.outcome!r} is about the question: entry_id must be null")
        if self.outcome == "note" and not isinstance(self.note, str):
            raise ValueError("a note line needs a note")
        check_judge(self.judge)
        return self

    def line(self) -> bytes:
        return (json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _checked(pool: Pool, judgment: Judgment, where: str) -> Judgment:
    if judgment.query_id not in pool.questions:
        raise JudgingError(f"{where}: question {judgment.query_id!r} is not in the pool")
    if judgment.entry_id is not None and judgment.entry_id not in pool.entries:
        raise JudgingError(f"{where}: entry {judgment.entry_id!r} is not in the snapshot (memories.jsonl)")
    return judgment


def _parse(pool: Pool, obj: dict, where: str) -> Judgment:
    try:
        judgment = Judgment.model_validate(obj)
    except (ValidationError, JudgingError) as exc:
        errors = exc.errors() if isinstance(exc, ValidationError) else [{"msg": str(exc), "loc": ()}]
        first = errors[0]
        loc = ".".join(str(p) for p in first.get("loc", ()))
        raise JudgingError(f"{where}: {(loc + ': ') if loc else ''}{first['msg'].removeprefix('Value error, ')}") from None
    return _checked(pool, judgment, where)


# ---------------------------------------------------------------------------- a judge's state

@dataclass
class QuestionState:
    """Where one question stands for one judge. ``order`` numbers the lines, so a grade ≥ 1
    given after "nothing answers" reopens the question as answerable."""

    grades: dict[str, int] = field(default_factory=dict)
    grade_order: dict[str, int] = field(default_factory=dict)
    marked: Optional[str] = None            # the latest question-level outcome: unanswerable | skip
    marked_order: int = -1
    notes: dict[Optional[str], str] = field(default_factory=dict)


@dataclass
class JudgmentLog:
    """A judge's judgments, latest line per (question, entry) winning."""

    pool: Pool
    judge: str
    states: dict[str, QuestionState]
    lines: int = 0
    truncated: Optional[str] = None         # "file:line: …" of an ignored truncated last line

    def state(self, qid: str) -> QuestionState:
        return self.states.setdefault(qid, QuestionState())

    def apply(self, j: Judgment) -> None:
        st, order = self.state(j.query_id), self.lines
        self.lines += 1
        if j.outcome == "graded":
            st.grades[j.entry_id] = j.grade  # type: ignore[index]
            st.grade_order[j.entry_id] = order  # type: ignore[index]
        elif j.outcome == "note":
            st.notes[j.entry_id] = j.note or ""
        else:
            st.marked, st.marked_order = j.outcome, order

    def unanswerable(self, qid: str) -> bool:
        """Marked "nothing answers" (and no grade ≥ 1 given since), or every pooled
        candidate graded 0 with nothing graded ≥ 1 outside the pool."""
        st = self.states.get(qid)
        if st is None:
            return False
        relevant = [e for e, g in st.grades.items() if g >= 1]
        if st.marked == "unanswerable":
            return not any(st.grade_order[e] > st.marked_order for e in relevant)
        pooled = self.pool.pooled(qid)
        return not relevant and bool(pooled) and pooled <= set(st.grades)

    def judged(self, qid: str) -> bool:
        """Unanswerable, or every pooled candidate has a grade."""
        st = self.states.get(qid)
        if st is None:
            return False
        pooled = self.pool.pooled(qid)
        return self.unanswerable(qid) or (bool(pooled) and pooled <= set(st.grades))

    def skipped(self, qid: str) -> bool:
        st = self.states.get(qid)
        return bool(st and st.marked == "skip" and not self.judged(qid))

    def outside_pool(self, qid: str) -> dict[str, int]:
        """Grades of entries the pool did not retrieve for the question (a judge may know
        an answer the pool missed): kept, counted apart."""
        st = self.states.get(qid)
        pooled = self.pool.pooled(qid)
        return {e: g for e, g in (st.grades.items() if st else ()) if e not in pooled}

    @property
    def judged_ids(self) -> list[str]:
        return [q for q in self.pool.questions if self.judged(q)]

    @property
    def left(self) -> list[str]:
        return [q for q in self.pool.questions if not self.judged(q)]


def judgments_path(pool: Pool, judge: str) -> Path:
    return pool.judgments_dir / f"{check_judge(judge)}.jsonl"


def judges_of(pool: Pool) -> list[str]:
    folder = pool.judgments_dir
    return sorted(p.stem for p in folder.glob("*.jsonl") if _JUDGE_NAME.fullmatch(p.stem)) if folder.is_dir() else []


def read_judgments(pool: Pool, judge: str = DEFAULT_JUDGE) -> JudgmentLog:
    """The judge's log (empty if the judge has not started). A truncated last line is
    reported in ``truncated`` and ignored; any other bad line refuses the file."""
    path = judgments_path(pool, judge)
    log = JudgmentLog(pool, judge, {})
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return log
    except OSError as exc:
        raise JudgingError(f"{path}: cannot read ({exc.strerror})") from None
    raw = data.split(b"\n")
    for number, chunk in enumerate(raw, 1):
        if not chunk.strip():
            continue
        where = f"{path}:{number}"
        last = number == len(raw)  # the text after the final newline: no newline of its own
        try:
            obj = json.loads(chunk.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if last:
                log.truncated = f"{where}: truncated last line ignored ({len(chunk)} bytes)"
                break
            reason = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else f"not JSON ({exc.msg})"
            raise JudgingError(f"{where}: {reason}") from None
        if not isinstance(obj, dict):
            raise JudgingError(f"{where}: not a JSON object")
        judgment = _parse(pool, obj, where)
        if judgment.judge != judge:
            raise JudgingError(f"{where}: a line of judge {judgment.judge!r} in {judge!r}'s file")
        log.apply(judgment)
    return log


# ---------------------------------------------------------------------------- the one writer

class JudgeWriter:
    """The exclusive writer of one judge's file: holds ``judgments/<judge>.lock`` (fcntl)
    from ``open()`` to ``close()``, so two kernels judging under one name are refused
    instead of interleaving lines. The kernel's death releases the lock."""

    def __init__(self, pool: Pool, judge: str = DEFAULT_JUDGE) -> None:
        self.pool, self.judge = pool, check_judge(judge)
        self.path = judgments_path(pool, judge)
        self._lock_fd: Optional[int] = None
        self._fd: Optional[int] = None
        self.dropped: Optional[str] = None  # the truncated last line cut by open(), as the reader reports it

    def __enter__(self) -> "JudgeWriter":
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def open(self) -> "JudgeWriter":
        if self._fd is not None:
            return self
        try:
            self.pool.judgments_dir.mkdir(exist_ok=True)
            lock = os.open(self.pool.judgments_dir / f"{self.judge}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise JudgingError(f"{self.pool.judgments_dir}: cannot write judgments ({exc.strerror})") from None
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(lock, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(lock)
            raise JudgeLockedError(
                f"judge {self.judge!r} is already judging {self.pool.folder} (process {holder}); close that "
                f"judge first or use --judge OTHER_NAME") from None
        os.ftruncate(lock, 0)
        os.pwrite(lock, str(os.getpid()).encode(), 0)
        self._lock_fd = lock
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._drop_truncated_tail()
        except BaseException:
            self.close()
            raise
        return self

    def _drop_truncated_tail(self) -> None:
        """A truncated last line (reported by the reader) would glue onto the next click:
        cut it off before the first append. Only this lock's holder writes the file."""
        data = self.path.read_bytes()
        if not data or data.endswith(b"\n"):
            return
        cut = data.rfind(b"\n") + 1
        try:
            json.loads(data[cut:].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            line = data.count(b"\n", 0, cut) + 1
            self.dropped = (f"{self.path}:{line}: truncated last line ignored "
                            f"({len(data) - cut} bytes)")
            os.truncate(self.path, cut)
        else:
            os.write(self._fd, b"\n")  # a whole line that only lacks its newline
        os.fsync(self._fd)  # type: ignore[arg-type]

    def close(self) -> None:
        for name in ("_fd", "_lock_fd"):
            fd = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                os.close(fd)  # closing the lock descriptor releases the flock

    def append(self, judgments: Iterable[Judgment]) -> int:
        """Check every judgment against the pool, then write them all in one ``write`` and
        fsync: nothing half-written. Returns the number of lines."""
        if self._fd is None:
            raise JudgingError(f"judge {self.judge!r}: the judging session is closed; open it again")
        batch = [_checked(self.pool, j, str(self.path)) for j in judgments]
        for j in batch:
            if j.judge != self.judge:
                raise JudgingError(f"a judgment of {j.judge!r} given to {self.judge!r}'s writer")
        data = b"".join(j.line() for j in batch)
        written = os.write(self._fd, data)
        if written != len(data):  # a full disk: leave no partial line behind
            os.truncate(self.path, os.fstat(self._fd).st_size - written)
            raise JudgingError(f"{self.path}: disk full, the judgment was not saved")
        os.fsync(self._fd)
        return len(batch)

    def record(self, query_id: str, outcome: str, *, entry_id: Optional[str] = None, grade: Optional[int] = None,
               note: Optional[str] = None) -> Judgment:
        """One click, checked and saved at once."""
        try:
            judgment = Judgment(query_id=query_id, entry_id=entry_id, grade=grade, outcome=outcome,  # type: ignore[arg-type]
                                note=note, judge=self.judge, at=now())
        except ValidationError as exc:
            raise JudgingError(f"bad judgment: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None
        self.append([judgment])
        return judgment
