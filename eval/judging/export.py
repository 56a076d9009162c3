"""Export: a judged pool folder → a corpus in ``datasets/FORMAT.md`` (``judging.export``).

One judge's judgments make the qrels: the one named, else the judge with the most
judgments (ties: the first name in sorted order); the datasheet says which, and how
often the other judges agreed with it (``agreement.log_agreement``). Only judged
questions are exported, and which ones are judged or unanswerable is judgments.py's rule
(``JudgmentLog.judged`` / ``unanswerable``): every pooled candidate graded, or marked
unanswerable. An unanswerable question has no relevant entry (a negative). Pooled
candidates left unjudged count as not relevant (the TREC convention).
The corpus is written beside ``out`` and renamed into place only once
``datasets.validate`` accepts it, so a refused export leaves nothing behind.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from ..corpora.corpus import language
from ..corpora.datasets import validate
from ..corpora.datasheet import update_readme
from .agreement import Agreement, log_agreement
from .folder import JudgingError, PoolFolder, jsonl
from .judgments import JudgmentLog, check_judge, judges_of, read_judgments, read_pool

__all__ = ["choose_judge", "export"]


def choose_judge(judged: dict[str, JudgmentLog], judge: str | None) -> str:
    if not judged:
        raise JudgingError("export: the folder has no judgments (judgments/<judge>.jsonl)")
    if judge is not None:
        if check_judge(judge) not in judged:
            raise JudgingError(f"export: no judgments by {judge!r}; judges: {', '.join(sorted(judged))}")
        return judge
    return min(judged, key=lambda name: (-judged[name].lines, name))


def _judged_questions(log: JudgmentLog) -> dict[str, tuple[dict[str, int], bool]]:
    """query id → (qrels {entry: grade}, unanswerable) for every question the judge judged.
    A question marked unanswerable keeps none of the grades given before the mark."""
    out = {}
    for q in log.judged_ids:
        negative, st = log.unanswerable(q), log.states[q]
        out[q] = ({} if negative and st.marked == "unanswerable" else dict(st.grades), negative)
    return out


def export(folder: str | Path, out: str | Path, judge: str | None = None) -> Path:
    """Write the corpus of a judged pool folder to ``out`` (which must not exist or be
    empty), validated; returns ``out``."""
    try:
        return _export(folder, out, judge)
    except OSError as exc:  # unreadable folder, unwritable out: one line, not a traceback
        raise JudgingError(f"export: {exc.strerror or exc}: {exc.filename or out}") from None
    except (KeyError, TypeError) as exc:  # a pool file edited by hand
        raise JudgingError(f"export: {folder} is not a pool folder as pooled ({type(exc).__name__}: {exc})") from None


def _export(folder: str | Path, out: str | Path, judge: str | None) -> Path:
    source = PoolFolder(Path(folder))
    meta = source.meta()
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise JudgingError(f"export: {out} exists and is not an empty folder")
    memories, queries = source.memories(), source.queries()
    judging = read_pool(source.root)
    judged_by = {name: read_judgments(judging, name) for name in judges_of(judging)}
    judged_by = {name: log for name, log in judged_by.items() if log.lines}
    used = choose_judge(judged_by, judge)
    questions = _judged_questions(judged_by[used])
    if not questions:
        raise JudgingError(f"export: no judged question in {source.root} (judge {used})")
    others = {name: log_agreement(judged_by[used], log) for name, log in judged_by.items() if name != used}
    notes = source.notes + [log.truncated for log in judged_by.values() if log.truncated]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        _write(tmp, memories, queries, questions)
        unjudged = sum(len(judging.pooled(q) - questions[q][0].keys()) for q in questions)
        readme = _datasheet(meta, used, others, questions, queries, unjudged, notes)
        (tmp / "README.md").write_text(readme, encoding="utf-8")
        validate(tmp)
        update_readme(tmp)
        if out.exists():
            out.rmdir()
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _write(tmp: Path, memories: dict, queries: dict, questions: dict) -> None:
    rows = []
    for qid, (grades, negative) in questions.items():
        q = queries[qid]
        meta = {k: v for k, v in (q.get("meta") or {}).items() if k != "logged"}
        tags = ["unanswerable"] if negative else []
        rows.append({"id": qid, "text": q["text"], "memories": q["memories"], "lang": language(q["text"]),
                     "tags": tags, "meta": meta})
    (tmp / "memories.jsonl").write_text(jsonl(memories.values()), encoding="utf-8")
    (tmp / "queries.jsonl").write_text(jsonl(rows), encoding="utf-8")
    lines = [f"{qid} 0 {e} {g}\n" for qid, (grades, negative) in questions.items() if not negative or any(grades.values())
             for e, g in sorted(grades.items())]
    (tmp / "qrels.trec").write_text("".join(lines), encoding="utf-8")


def _datasheet(meta: dict[str, Any], used: str, others: dict[str, Agreement], questions: dict, queries: dict, unjudged: int,
               notes: list[str]) -> str:
    negatives = sum(1 for _, negative in questions.values() if negative)
    source = "the search log of" if meta.get("questions_from") == "log" else "a questions file, asked of"
    memories = ", ".join(f"{m['artifact_id']}@{m['revision']}" for m in meta.get("memories", []))
    agree = [f"- {name}: {a.pairs} pairs graded by both, "
             f"{sum(d.entry_id is not None for d in a.disagreements)} disagreeing; exact agreement {a.grade_agreement:.2f}"
             + (f", Cohen's kappa {a.kappa:.2f}" if a.kappa is not None else "") if a.pairs else
             f"- {name}: no pair graded by both" for name, a in sorted(others.items())]
    return "\n".join([
        "# Judged corpus (exported from a pool folder)", "",
        "## Origin", "",
        f"Questions from {source} the database `{meta.get('database')}`, Memories snapshotted at {memories} "
        f"(pool created {meta.get('created')}). {len(questions)} of {len(queries)} pooled questions were judged "
        f"and exported; the rest were left out.", "",
        "## How labels were decided", "",
        f"Each question's candidates were pooled: the union of the top {meta.get('depth')} of full-text, vector and "
        f"hybrid search with admission off, under profiles {', '.join(meta.get('profiles') or ['none (full-text only)'])}, "
        "plus what the search log admitted. A judge graded candidates 0 (not relevant), 1 (marginal) or "
        "2 (relevant), blind to channel and rank, or marked a question unanswerable.", "",
        f"Judgments used: judge `{used}`'s (the rule: the judge named with --judge, else the one with the most "
        "judgments); where another judge disagrees, its grades are not used. Other judges, against it:",
        *(agree or ["- none"]), "",
        "## Known limitations", "",
        f"Pooled candidates left unjudged ({unjudged} in exported questions) and entries outside the pool count as "
        "not relevant: the TREC convention, so recall is measured against the pool. "
        f"{negatives} questions have no relevant entry (unanswerable, or every pooled candidate graded 0).",
        *([""] + [f"- {n}" for n in notes] if notes else []), "",
        "## Counts", "", "<!-- counts:begin -->", "<!-- counts:end -->", "",
    ])
