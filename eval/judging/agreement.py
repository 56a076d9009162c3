"""How far two judges of one pool folder agree: Cohen's κ on the grades of the pairs both
graded, agreement on which questions are unanswerable, and every disagreement listed.

κ (not raw agreement) because most pooled candidates are 0s: two judges who grade
everything 0 agree 90 % by chance alone."""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from typing import Optional

from .judgments import JudgingError, JudgmentLog, Pool, check_judge, judges_of, read_judgments

__all__ = ["Agreement", "Disagreement", "agreement", "folder_agreement", "log_agreement"]


@dataclass(frozen=True)
class Disagreement:
    query_id: str
    entry_id: Optional[str]     # None: they disagree on whether the question is unanswerable
    a: object                   # a's grade, or "unanswerable"/"answerable"
    b: object


@dataclass
class Agreement:
    judge_a: str
    judge_b: str
    pairs: int                      # (question, entry) pairs both graded
    kappa: Optional[float]          # None when undefined (no pairs, or one grade only on both sides)
    grade_agreement: Optional[float]
    questions: int                  # questions both judged
    unanswerable_agreement: Optional[float]
    disagreements: list[Disagreement] = field(default_factory=list)

    def lines(self) -> list[str]:
        def pct(x: Optional[float]) -> str:
            return "n/a" if x is None else f"{x:.0%}"
        kappa = "n/a" if self.kappa is None else f"{self.kappa:.3f}"
        head = [f"{self.judge_a} vs {self.judge_b}: Cohen's kappa {kappa} on {self.pairs} pairs graded by both "
                f"(raw agreement {pct(self.grade_agreement)}); unanswerable agreed on {pct(self.unanswerable_agreement)} "
                f"of {self.questions} questions judged by both; {len(self.disagreements)} disagreements"]
        for d in self.disagreements:
            what = d.entry_id if d.entry_id is not None else "(question)"
            head.append(f"  {d.query_id} {what}: {self.judge_a}={d.a} {self.judge_b}={d.b}")
        return head


def log_agreement(a: JudgmentLog, b: JudgmentLog) -> Agreement:
    """The agreement of two judges' logs of one pool (already read)."""
    pool = a.pool
    pairs, disagreements = [], []
    for qid in pool.questions:
        sa, sb = a.states.get(qid), b.states.get(qid)
        if sa is None or sb is None:
            continue
        for eid in sorted(set(sa.grades) & set(sb.grades)):
            ga, gb = sa.grades[eid], sb.grades[eid]
            pairs.append((ga, gb))
            if ga != gb:
                disagreements.append(Disagreement(qid, eid, ga, gb))
    both = [q for q in pool.questions if a.judged(q) and b.judged(q)]
    same = 0
    for qid in both:
        ua, ub = a.unanswerable(qid), b.unanswerable(qid)
        same += ua == ub
        if ua != ub:
            label = {True: "unanswerable", False: "answerable"}
            disagreements.append(Disagreement(qid, None, label[ua], label[ub]))
    kappa = None
    if pairs:
        # imported here: scikit-learn costs ~4 s to import, and every `python -m powercontext.eval`
        # (a full-text sweep, a cleanup) imports this module without asking for a κ
        from sklearn.metrics import cohen_kappa_score

        ga, gb = zip(*pairs)
        with warnings.catch_warnings():  # one grade on both sides: κ is 0/0, reported as n/a
            warnings.simplefilter("ignore", RuntimeWarning)
            value = float(cohen_kappa_score(ga, gb, labels=[0, 1, 2]))
        kappa = None if math.isnan(value) else value
    return Agreement(a.judge, b.judge, len(pairs), kappa,
                     (sum(x == y for x, y in pairs) / len(pairs)) if pairs else None,
                     len(both), (same / len(both)) if both else None, disagreements)


def agreement(pool: Pool, judge_a: str, judge_b: str) -> Agreement:
    """The agreement of two judges of ``pool``."""
    if check_judge(judge_a) == check_judge(judge_b):
        raise JudgingError(f"agreement needs two different judges (got {judge_a!r} twice)")
    return log_agreement(read_judgments(pool, judge_a), read_judgments(pool, judge_b))


def folder_agreement(pool: Pool) -> list[Agreement]:
    """Every pair of the folder's judges; refused with fewer than two."""
    judges = judges_of(pool)
    if len(judges) < 2:
        raise JudgingError(f"{pool.folder}: agreement needs two judges; found {len(judges)} "
                           f"({', '.join(judges) or 'none'}): judge again with --judge NAME")
    logs = {j: read_judgments(pool, j) for j in judges}
    return [log_agreement(logs[x], logs[y]) for x, y in itertools.combinations(judges, 2)]
