"""Which questions to judge first: a seeded random sample (the default), or the ones whose
admission is least certain.

MEASURED (``benchmarks/judging_order.py``, MiniLM, SQLite; a simulated judge answering from
the qrels, the recommended policy fitted after every 5 judged questions and scored on
every question): judging the least certain questions first does NOT save judgments — it
costs them. Uncertain questions are mostly answerable ones (3 unanswerable among the
first 50 on atlas-etl, whose share is 23 %), so the false-admission constraint is fitted
on a handful of negatives and the fitted policy comes out far too strict: after 50 judged
questions nDCG@10 0.426 against 0.621 for a random order (atlas-etl); over the first half
of the questions its mean gap to the all-judged policy is 0.173 nDCG@10 / 0.269 false
admission against 0.043 / 0.090 for random orders (lantern-relay 0.129 / 0.134 against
0.046 / 0.078). A fitted policy needs a representative sample, so the widget offers a
seeded random order (``sample_order``: the same for every judge of a folder, so two
judges overlap early and their agreement can be read) unless asked for ``uncertainty``
— which stays useful to look at where the default policy is shakiest, not to fit one.

The uncertainty rule:

A judge's time is the scarce resource of the researcher's loop. A fitted policy moves
only where a judgment could tip a threshold, so the questions worth judging first are:

* those with candidates whose signals sit NEAR a threshold of the profile's default
  policy (``AdmissionPolicy.default_for(profile)``): a candidate is borderline when a
  slightly looser and a slightly stricter copy of the policy (each threshold moved by
  its ``BAND``) disagree on it. Admission is monotone in every threshold, so that is
  exactly "its signal lies within the band of the threshold" — decided by the library's
  own ``admission.admit``, never by a second copy of the rules;
* those where the two CHANNELS DISAGREE: an entry both channels retrieved that one
  admits and the other refuses (a paraphrase the full-text floor misses, a topic match
  the vector floor lets in) — the cases a threshold trades against each other;
* those the search log saw most OFTEN (``meta.log_count``): a policy that fails a
  question asked fifty times fails the agent fifty times.

``priority = (borderline + disagreeing) × (1 + ln log_count)``; ties go to the more
often asked question, then to the folder's order. A question with no uncertain
candidate keeps its place among its equals by log count. Only pooled candidates (what
the judge will see) within a default search's pool at ``LIMIT`` count.

The signals come from the pool folder (``pool.jsonl``'s ``channels``, written by
``pool.py`` from the admission-off hybrid retrieval): no database is reopened. A pool
written before those signals were stored orders by log count alone.
``benchmarks/judging_order.py`` measures what this order saves on the bundled corpora.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy
from powercontext.model import ArtifactRef, ChannelCandidate

from .folder import JudgingError, PoolFolder

__all__ = ["BAND", "LIMIT", "ORDERS", "QuestionUncertainty", "candidate_signals", "judging_order",
           "order_questions", "pool_channels", "sample_order", "uncertainty"]

#: How a folder's questions can be ordered for judging (the first is the default).
ORDERS = ("sample", "uncertainty", "file")

#: How far each threshold moves to make the looser and the stricter policy: a signal
#: within this of the threshold is "near" it. Cosines: 0.03 (MiniLM's centred-cosine
#: default sits at 0.31 with answers and near misses ~0.05 apart); coverage, support:
#: 0.1 of the query; term counts: one term.
BAND: dict[str, float | int] = {
    "vector_min_cosine": 0.03, "vector_min_centred": 0.03, "gate_min": 0.03,
    "fts_min_coverage": 0.1, "hybrid_fts_min_coverage": 0.1, "vector_min_support": 0.1, "fts_min_support": 0.1,
    "fts_min_terms": 1, "hybrid_fts_min_terms": 1, "cross_script_min_terms": 1,
}
#: The search the uncertainty is read for: the library's default limit (pool 32).
LIMIT = 8
_LIMITS = {"vector_min_cosine": (-1.0, 1.0), "vector_min_centred": (-2.0, 2.0), "gate_min": (-2.0, 2.0)}
#: What a pool line keeps of each channel's candidate: the signals admission reads.
_SIGNALS = ("rank", "matched_terms", "query_term_count", "cosine", "centred", "script", "query_script", "covered",
            "pool_rank", "support")


def _moved(policy: AdmissionPolicy, sign: int) -> AdmissionPolicy:
    """The policy with every threshold it uses moved by ``sign`` × its band (−1 looser,
    +1 stricter), kept in its valid range. A raw cosine floor of −1 means "no floor"
    and stays off."""
    changes: dict[str, Any] = {}
    for name, band in BAND.items():
        value = getattr(policy, name)
        if value is None or (name == "vector_min_cosine" and value <= -1.0):
            continue
        if isinstance(band, int):
            changes[name] = max(1, value + sign * band)
        else:
            low, high = _LIMITS.get(name, (0.0, 1.0))
            changes[name] = min(high, max(low, value + sign * band))
    return replace(policy, **changes)


@dataclass(frozen=True)
class QuestionUncertainty:
    """One question's place in the judging order and why."""

    query_id: str
    borderline: int      # candidates within a band of a threshold
    disagreeing: int     # entries one channel admits and the other refuses
    log_count: int
    priority: float


def uncertainty(channels: Mapping[str, Sequence[ChannelCandidate]], policy: AdmissionPolicy,
                query_id: str = "", log_count: int = 1) -> QuestionUncertainty:
    """How uncertain ``policy``'s admission is for one question's retrieved ``channels``
    (admission off; see the module docstring)."""
    pool = policy.pool_size(LIMIT)
    # by each candidate's own rank, not its position: pooled candidates are a subset
    channels = {name: tuple(c for c in cands if admission.in_pool(c.rank - 1, c.pool_rank, pool))
                for name, cands in channels.items()}
    loose = _keys(admission.admit(channels, _moved(policy, -1)))
    strict = _keys(admission.admit(channels, _moved(policy, +1)))
    borderline = len(loose - strict)
    disagreeing = 0
    if admission.is_hybrid(channels):
        admitted = admission.admit(channels, policy)
        fts, vec = ({c.key for c in admitted[n]} for n in ("fts", "vector"))
        both = {c.key for c in channels["fts"]} & {c.key for c in channels["vector"]}
        disagreeing = len((fts ^ vec) & both)
    count = max(1, int(log_count))
    priority = (borderline + disagreeing) * (1.0 + math.log(count))
    return QuestionUncertainty(query_id, borderline, disagreeing, count, priority)


def _keys(admitted: Mapping[str, Sequence[ChannelCandidate]]) -> set[tuple[str, tuple[str, str, str]]]:
    return {(name, c.key) for name, cands in admitted.items() for c in cands}


def order_questions(scores: Iterable[QuestionUncertainty]) -> list[QuestionUncertainty]:
    """Most uncertain first; ties: more often asked first, then the given order."""
    indexed = list(enumerate(scores))
    indexed.sort(key=lambda item: (-item[1].priority, -item[1].log_count, item[0]))
    return [s for _, s in indexed]


# ---------------------------------------------------------------------------- the pool's stored signals

def candidate_signals(candidate: ChannelCandidate) -> dict[str, Any]:
    """What a pool line keeps of a retrieved candidate (``pool_channels`` rebuilds it)."""
    out = {name: getattr(candidate, name) for name in _SIGNALS}
    out["matched_terms"] = list(candidate.matched_terms)
    for name in ("cosine", "centred", "support"):
        if out[name] is not None:
            out[name] = round(float(out[name]), 6)
    return {k: v for k, v in out.items() if v is not None}


_FIELDS = {f.name for f in fields(ChannelCandidate)}


def pool_channels(lines: Sequence[Mapping[str, Any]], entries: Mapping[str, Mapping[str, Any]],
                  profile: str | None = None) -> dict[str, tuple[ChannelCandidate, ...]]:
    """One question's retrieved channels, rebuilt from its pool lines' ``channels``
    under ``profile`` (a profile id, "none" for a full-text-only pool; None: the first
    stored). Text and hashes are not kept: admission reads only the signals."""
    out: dict[str, list[ChannelCandidate]] = {}
    for line in lines:
        by_profile = line.get("channels") or {}
        stored = by_profile.get(profile) if profile is not None else next(iter(by_profile.values()), None)
        if not stored:
            continue
        entry = entries.get(line["entry_id"], {})
        meta = entry.get("meta") or {}
        ref = ArtifactRef(str(entry.get("memory", "memory")), int(meta.get("revision", 0)))
        for channel, signals in stored.items():
            values = {k: v for k, v in signals.items() if k in _FIELDS}
            values["matched_terms"] = tuple(values.get("matched_terms", ()))
            out.setdefault(channel, []).append(ChannelCandidate(
                channel=channel, memory_ref=ref, entry_id=str(meta.get("entry_id", line["entry_id"])),
                entry_version_id=str(meta.get("entry_version_id", "")), entry_content_hash="",
                kind=str(entry.get("kind", "")), text="", **values))
    return {name: tuple(sorted(cands, key=lambda c: c.rank)) for name, cands in out.items()}


def sample_order(query_ids: Iterable[str]) -> list[str]:
    """A random order seeded by the question ids themselves: the same for every judge
    and every run over one folder, independent of the file's order."""
    ids = sorted(query_ids)
    seed = int.from_bytes(hashlib.sha256("\0".join(ids).encode("utf-8")).digest()[:8], "big")
    random.Random(seed).shuffle(ids)
    return ids


def judging_order(folder: str | Path, by: str = "sample", policy: AdmissionPolicy | None = None,
                  ) -> list[QuestionUncertainty]:
    """The pool folder's questions in the order to judge them, each with its uncertainty
    (see the module docstring): ``by`` "sample" (seeded random, the default),
    "uncertainty" (most uncertain first) or "file" (as pooled). ``policy``: the
    profile's default policy unless given."""
    if by not in ORDERS:
        raise JudgingError(f"judging order must be one of {', '.join(ORDERS)}, got {str(by)[:40]!r}")
    source = PoolFolder(Path(folder))
    meta = source.meta()
    profiles = meta.get("profiles") or []
    profile = profiles[0] if profiles else None
    if policy is None:
        policy = AdmissionPolicy.default_for(profile)
    entries = source.memories()
    lines: dict[str, list[dict]] = {}
    for line in source.pool_lines():
        lines.setdefault(line.get("query_id"), []).append(line)
    scores = []
    for qid, q in source.queries().items():
        count = (q.get("meta") or {}).get("log_count", 1)
        channels = pool_channels(lines.get(qid, ()), entries, profile or "none")
        scores.append(uncertainty(channels, policy, qid, count if isinstance(count, int) else 1))
    if by == "uncertainty":
        return order_questions(scores)
    if by == "file":
        return scores
    place = {qid: i for i, qid in enumerate(sample_order(s.query_id for s in scores))}
    return sorted(scores, key=lambda s: place[s.query_id])
