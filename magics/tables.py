"""Value objects → pandas DataFrames. Pure functions, no I/O.

Reads are lean: text is previewed, hashes are prefixes, matched terms are a count and
a coverage — never the analyzer's token strings — and nothing carries a vector.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import pandas as pd

from powercontext import MemoryEntryVersion, MemoryRevision, MemorySearchResult
from powercontext.memory.patching import parse_patch_reason
from powercontext.model import AdmissionDecision, MemoryManifest, MemoryRevisionChanges

__all__ = [
    "preview", "evidence", "memories_frame", "manifest_frame", "manifest_changes", "diff_frame",
    "lineage_frame", "changes_frame", "hits_frame", "decisions_frame", "entries_frame", "CHANGE_LABELS",
]

MANIFEST_COLUMNS = ["entry_id", "version", "state", "kind", "text", "hash"]


def preview(text: str | None, width: int = 80) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis (0 = whole)."""
    text = " ".join((text or "").split())
    if width and len(text) > width:
        return text[: max(width - 1, 1)] + "…"
    return text


def evidence(version: MemoryEntryVersion) -> str:
    """Sources by name, Artifacts as exact refs, comma separated."""
    parts = [f"source:{s.name}" for s in version.sources] + [f"artifact:{a}" for a in version.artifacts]
    return ", ".join(parts)


def memories_frame(revisions: Iterable[MemoryRevision]) -> pd.DataFrame:
    rows = [
        {
            "memory": r.artifact_id,
            "head": r.revision,
            "active": len(r.manifest.active),
            "inactive": len(r.manifest.inactive),
        }
        for r in revisions
    ]
    return pd.DataFrame(rows, columns=["memory", "head", "active", "inactive"])


def manifest_frame(
    revision: MemoryRevision,
    versions: Mapping[str, MemoryEntryVersion],
    *,
    state: str = "all",
    width: int = 80,
    hash_width: int = 12,
) -> pd.DataFrame:
    """One row per manifest entry (manifest order), optionally only one state."""
    rows = []
    for item in revision.manifest.entries:
        if state != "all" and item.state != state:
            continue
        v = versions.get(item.entry_id)
        rows.append({
            "entry_id": item.entry_id,
            "version": v.version if v else None,
            "state": item.state,
            "kind": v.kind if v else "",
            "text": preview(v.text if v else "", width),
            "hash": item.entry_content_hash[:hash_width],
        })
    return pd.DataFrame(rows, columns=MANIFEST_COLUMNS)


ENTRY_COLUMNS = ["entry_id", "version", "kind", "text", "evidence"]


def entries_frame(versions: Iterable[MemoryEntryVersion], *, width: int = 80) -> pd.DataFrame:
    """One row per entry version (``svc.entries`` order): id, version, kind, text, evidence."""
    rows = [{"entry_id": v.entry_id, "version": v.version, "kind": v.kind, "text": preview(v.text, width),
             "evidence": evidence(v)} for v in versions]
    return pd.DataFrame(rows, columns=ENTRY_COLUMNS)


CHANGE_LABELS = ("added", "revised", "deactivated", "reactivated")


def manifest_changes(previous: MemoryManifest | None, current: MemoryManifest) -> dict[str, str]:
    """entry_id → how it changed from ``previous`` to ``current`` (unchanged entries
    are absent). Computed from the manifests alone, so it works for any two Revisions."""
    before = previous.by_id() if previous is not None else {}
    out: dict[str, str] = {}
    for item in current.entries:
        old = before.get(item.entry_id)
        if old is None:
            out[item.entry_id] = "added"
        elif old.entry_version_id != item.entry_version_id:
            out[item.entry_id] = "revised"
        elif old.state != item.state:
            out[item.entry_id] = "deactivated" if item.state == "inactive" else "reactivated"
    return out


def diff_frame(
    previous: MemoryRevision | None,
    current: MemoryRevision,
    versions: Mapping[str, MemoryEntryVersion],
    previous_versions: Mapping[str, MemoryEntryVersion],
    *,
    width: int = 80,
    hash_width: int = 12,
) -> pd.DataFrame:
    """The changed rows of ``current``'s manifest with a ``change`` column and the
    version they had in ``previous``."""
    changed = manifest_changes(previous.manifest if previous else None, current.manifest)
    frame = manifest_frame(current, versions, width=width, hash_width=hash_width)
    frame = frame[frame["entry_id"].isin(changed)].reset_index(drop=True)
    frame.insert(0, "change", [changed[e] for e in frame["entry_id"]])
    before = [previous_versions[e].version if e in previous_versions else None for e in frame["entry_id"]]
    frame.insert(3, "previous_version", pd.array(before, dtype="Int64"))
    return frame


def lineage_frame(
    entry_id: str,
    versions: Sequence[MemoryEntryVersion],
    history: Sequence[MemoryRevisionChanges],
    *,
    width: int = 80,
) -> pd.DataFrame:
    """One row per Revision that touched the entry: what happened, to which version,
    the state after it, the reason, and the version's text and evidence."""
    by_id = {v.entry_version_id: v for v in versions}
    rows = []
    for step in history:
        for change in step.changes:
            if change.entry_id != entry_id:
                continue
            version_id = change.to_entry_version_id or change.from_entry_version_id
            v = by_id.get(version_id)
            patch = parse_patch_reason(change.reason) if change.op == "revise" else None
            rows.append({
                "revision": step.memory_ref.revision,
                "op": "patch" if patch else change.op,  # a revise whose reason records a patch
                "version": v.version if v else None,
                "state": "inactive" if change.op == "deactivate" else "active",
                "reason": patch.describe() if patch else change.reason or "",
                "kind": v.kind if v else "",
                "text": preview(v.text if v else "", width),
                "evidence": evidence(v) if v else "",
                "entry_version_id": version_id,
            })
    columns = ["revision", "op", "version", "state", "reason", "kind", "text", "evidence", "entry_version_id"]
    return pd.DataFrame(rows, columns=columns)


def changes_frame(history: Sequence[MemoryRevisionChanges]) -> pd.DataFrame:
    rows = [
        {
            "revision": step.memory_ref.revision,
            "op": c.op,
            "entry_id": c.entry_id,
            "from_version_id": c.from_entry_version_id or "",
            "to_version_id": c.to_entry_version_id or "",
            "reason": c.reason or "",
        }
        for step in history
        for c in step.changes
    ]
    return pd.DataFrame(rows, columns=["revision", "op", "entry_id", "from_version_id", "to_version_id", "reason"])


HIT_COLUMNS = ["rank", "score", "matched_by", "memory", "entry_id", "kind", "text"]


def hits_frame(result: MemorySearchResult, *, width: int = 80) -> pd.DataFrame:
    rows = [
        {
            "rank": rank,
            "score": round(hit.score, 6),
            "matched_by": "+".join(hit.matched_by),
            "memory": str(hit.memory_ref),
            "entry_id": hit.entry_id,
            "kind": hit.kind,
            "text": preview(hit.text, width),
        }
        for rank, hit in enumerate(result.hits, start=1)
    ]
    frame = pd.DataFrame(rows, columns=HIT_COLUMNS)
    frame.attrs.update(search_attrs(result))
    return frame


def search_attrs(result: MemorySearchResult) -> dict:
    return {
        "query": result.query,
        "mode": result.mode,
        "requested_mode": result.requested_mode,
        "fallback_reason": result.fallback_reason,
    }


#: ``probability`` and ``cell`` (issue 46): the candidate's calibrated probability of
#: answering and the calibration cell it was read from — the language pair for a vector
#: candidate, the query length for a full-text one, a fallback to the pooled map said in
#: words — beside the raw signals it was computed from; None without a calibration.
DECISION_COLUMNS = [
    "channel", "channel_rank", "admitted", "reason", "matched", "query_terms", "coverage", "cosine",
    "probability", "cell", "hit_rank", "memory", "entry_id", "kind", "text",
]


def decisions_frame(
    decisions: Sequence[AdmissionDecision],
    hits: Sequence = (),
    *,
    width: int = 80,
) -> pd.DataFrame:
    """Every retrieved candidate, per channel in backend order, with its signals (the
    calibrated probability and its cell among them), the admission verdict and reason,
    and its fused rank if it made the final hits."""
    final = {(h.memory_ref.artifact_id, h.entry_id, h.entry_version_id): i for i, h in enumerate(hits, start=1)}
    rows = []
    for d in decisions:
        c = d.candidate
        fts = c.channel == "fts"
        rows.append({
            "channel": c.channel,
            "channel_rank": c.rank,
            "admitted": d.admitted,
            "reason": d.reason,
            "matched": len(c.matched_terms) if fts else None,
            "query_terms": c.query_term_count if fts else None,
            "coverage": round(c.coverage, 4) if fts else None,
            "cosine": round(c.cosine, 4) if c.cosine is not None else None,
            "probability": round(c.probability, 4) if c.probability is not None else None,
            "cell": c.calibration_cell,
            "hit_rank": final.get(c.key),
            "memory": str(c.memory_ref),
            "entry_id": c.entry_id,
            "kind": c.kind,
            "text": preview(c.text, width),
        })
    frame = pd.DataFrame(rows, columns=DECISION_COLUMNS)
    for column in ("matched", "query_terms", "hit_rank"):
        frame[column] = pd.array(frame[column].tolist(), dtype="Int64")
    frame["cosine"] = pd.array(frame["cosine"].tolist(), dtype="Float64")
    for column in ("coverage", "probability"):
        frame[column] = pd.array(frame[column].tolist(), dtype="Float64")
    return frame
