"""Export: a judged pool folder → a corpus in ``datasets/FORMAT.md`` (``judging.export``).

One judge's judgments make the qrels: the one named, else the judge with the most
judgments (ties: the first name in sorted order); the datasheet says which, and how
often the other judges agreed with it. Only judged questions are exported: a question
is judged when it holds a graded entry or an "unanswerable" outcome. An unanswerable
question, or one whose every pooled candidate was graded 0, has no relevant entry (a
negative). Pooled candidates left unjudged count as not relevant (the TREC convention).
The corpus is written beside ``out`` and renamed into place only once
``datasets.validate`` accepts it, so a refused export leaves nothing behind.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from ..corpus import language
from ..datasets import validate
from ..datasheet import update_readme
from .folder import JudgingError, Judgment, PoolFolder, check_judge, jsonl

__all__ = ["agreement", "choose_judge", "export"]


def choose_judge(judged: dict[str, dict], judge: str | None) -> str:
    if not judged:
        raise JudgingError("export: the folder has no judgments (judgments/<judge>.jsonl)")
    if judge is not None:
        if check_judge(judge) not in judged:
            raise JudgingError(f"export: no judgments by {judge!r}; judges: {', '.join(sorted(judged))}")
        return judge
    return min(judged, key=lambda name: (-len(judged[name]), name))


def agreement(a: dict, b: dict) -> tuple[int, float | None, float | None]:
    """Pairs both judges graded, their share of equal grades and Cohen's kappa."""
    pairs = [(a[k].grade, b[k].grade) for k in a.keys() & b.keys()
             if k[1] is not None and a[k].outcome == b[k].outcome == "graded"]
    if not pairs:
        return 0, None, None
    n = len(pairs)
    observed = sum(x == y for x, y in pairs) / n
    ca, cb = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    expected = sum(ca[g] * cb[g] for g in ca) / (n * n)
    kappa = None if expected == 1 else (observed - expected) / (1 - expected)
    return n, observed, kappa


def _judged_questions(queries: dict, pool: dict[str, list[dict]], judgments: dict[tuple, Judgment]):
    """query id → (qrels {entry: grade}, unanswerable) for every judged question."""
    graded: dict[str, dict[str, int]] = {}
    unanswerable: set[str] = set()
    for (q, e), j in judgments.items():
        if e is None and j.outcome == "unanswerable":
            unanswerable.add(q)
        elif e is not None and j.outcome == "graded":
            graded.setdefault(q, {})[e] = j.grade
    out = {}
    for q in queries:
        if q in unanswerable:
            out[q] = ({}, True)
        elif q in graded:
            grades = graded[q]
            pooled = {line["entry_id"] for line in pool.get(q, ())}
            none_relevant = pooled <= grades.keys() and not any(grades.values())
            out[q] = (grades, none_relevant)
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
    pool: dict[str, list[dict]] = {}
    for line in source.pool_lines():
        pool.setdefault(line["query_id"], []).append(line)
    judged_by = {name: source.judgments(name) for name in source.judges()}
    judged_by = {name: j for name, j in judged_by.items() if j}
    used = choose_judge(judged_by, judge)
    questions = _judged_questions(queries, pool, judged_by[used])
    if not questions:
        raise JudgingError(f"export: no judged question in {source.root} (judge {used})")
    others = {name: agreement(judged_by[used], j) for name, j in judged_by.items() if name != used}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        _write(tmp, memories, queries, questions)
        unjudged = sum(1 for q in questions for line in pool.get(q, ()) if line["entry_id"] not in questions[q][0])
        readme = _datasheet(meta, used, others, questions, queries, unjudged, source.notes)
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


def _datasheet(meta: dict[str, Any], used: str, others: dict, questions: dict, queries: dict, unjudged: int,
               notes: list[str]) -> str:
    negatives = sum(1 for _, negative in questions.values() if negative)
    source = "the search log of" if meta.get("questions_from") == "log" else "a questions file, asked of"
    memories = ", ".join(f"{m['artifact_id']}@{m['revision']}" for m in meta.get("memories", []))
    agree = [f"- {name}: {n} pairs graded by both, {round(n * (1 - obs))} disagreeing; exact agreement {obs:.2f}"
             + (f", Cohen's kappa {kappa:.2f}" if kappa is not None else "") if n else
             f"- {name}: no pair graded by both" for name, (n, obs, kappa) in sorted(others.items())]
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
