"""Judgments without a widget: TREC qrels in the pool folder's ids become one judge's lines.

The whole file is checked before anything is written (one ``write``, fsync'd): a qrels
line for a question that is not in the pool refuses the import. A grade for an entry of
the snapshot that the pool did not retrieve for that question is kept and counted apart —
a judge may know an answer the pool missed. A question whose every pooled candidate is
graded 0 (and nothing outside the pool ≥ 1) is also recorded as unanswerable, the
widget's "nothing here answers it".
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .judgments import DEFAULT_JUDGE, GRADES, JudgeWriter, Judgment, JudgingError, Pool, short_path, now

__all__ = ["ImportResult", "import_qrels"]


@dataclass(frozen=True)
class ImportResult:
    judge: str
    questions: int
    graded: int          # grades of pooled candidates
    outside_pool: int    # grades of entries the pool did not retrieve for the question
    unanswerable: int

    def line(self) -> str:
        return (f"judge {self.judge}: imported {self.graded + self.outside_pool} grades for {self.questions} questions "
                f"({self.outside_pool} outside the pool, kept apart); {self.unanswerable} questions unanswerable")


def _read_qrels(path: Path) -> list[tuple[int, str, str, int]]:
    try:
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise JudgingError(f"{short_path(path)}: no such qrels file") from None
    except UnicodeDecodeError as exc:
        raise JudgingError(f"{path}: not UTF-8 (byte {exc.start})") from None
    except OSError as exc:
        raise JudgingError(f"{short_path(path)}: cannot read ({exc.strerror})") from None
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise JudgingError(f"{path}:{number}: expected 'QUERY 0 ENTRY GRADE', got {len(parts)} fields")
        try:
            grade = int(parts[3])
        except ValueError:
            raise JudgingError(f"{path}:{number}: grade {parts[3][:20]!r} is not an integer") from None
        if grade not in GRADES:
            raise JudgingError(f"{path}:{number}: grade {grade} is not 0, 1 or 2")
        rows.append((number, parts[0], parts[2], grade))
    return rows


def import_qrels(pool: Pool, qrels: str | Path, judge: str = DEFAULT_JUDGE) -> ImportResult:
    """Append ``qrels`` to ``judge``'s judgments of ``pool`` (holding the judge's lock)."""
    path = Path(qrels).expanduser()
    rows = _read_qrels(path)
    missing = sorted({q for _, q, _, _ in rows if q not in pool.questions})
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise JudgingError(f"{path}: {len(missing)} questions are not in the pool ({shown}); nothing imported")
    seen: dict[tuple[str, str], int] = {}
    for number, qid, eid, _ in rows:
        if eid not in pool.entries:
            raise JudgingError(f"{path}:{number}: entry {eid!r} is not in the snapshot (memories.jsonl)")
        if (qid, eid) in seen:
            raise JudgingError(f"{path}:{number}: {qid} {eid} is graded twice (first on line {seen[qid, eid]})")
        seen[qid, eid] = number
    at = now()
    lines = [Judgment(query_id=q, entry_id=e, grade=g, outcome="graded", judge=judge, at=at) for _, q, e, g in rows]
    by_question: dict[str, dict[str, int]] = {}
    for _, q, e, g in rows:
        by_question.setdefault(q, {})[e] = g
    unanswerable = 0
    for qid, grades in by_question.items():
        pooled = pool.pooled(qid)
        if pooled and pooled <= set(grades) and not any(grades.values()):
            lines.append(Judgment(query_id=qid, outcome="unanswerable", judge=judge, at=at))
            unanswerable += 1
    outside = sum(1 for _, q, e, _ in rows if e not in pool.pooled(q))
    with JudgeWriter(pool, judge) as writer:
        writer.append(lines)
    return ImportResult(judge, len(by_question), len(rows) - outside, outside, unanswerable)
