"""How well a retrieval signal predicts whether a query should be answered at all:
MTEB-style nAUC of abstention per backend and mode.

Utility of a query: its nDCG@10 with no admission at limit 10 when it has
judgements, 0 when its ideal answer is empty (any answer is wrong there, so
abstaining on it is right). Confidence: the strongest raw signal among the query's
candidates — the best FTS coverage (matched / query terms), the best cosine, or their
maximum and mean in hybrid. An admission threshold is an abstention rule on exactly
these signals, so a low nAUC means no threshold on that signal can separate answerable
from unanswerable queries well.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics import nauc

__all__ = ["CONFIDENCES", "abstention_table", "confidences"]

CONFIDENCES = {
    "fts": ("top_coverage", "top_matched"),
    "vector": ("top_cosine", "cosine_margin"),
    "hybrid": ("top_cosine", "top_coverage", "coverage_plus_cosine"),
}


def confidences(candidates: pd.DataFrame, query_ids: list[str]) -> pd.DataFrame:
    """Per query of one backend and mode: every confidence score (missing channel → lowest)."""
    fts = candidates[candidates["channel"] == "fts"].groupby("query_id")
    vec = candidates[candidates["channel"] == "vector"].groupby("query_id")
    out = pd.DataFrame(index=pd.Index(query_ids, name="query_id"))
    out["top_coverage"] = fts["coverage"].max().reindex(out.index).fillna(0.0)
    out["top_matched"] = fts["matched"].max().reindex(out.index).fillna(0).astype(float)
    cos = vec["cosine"].apply(lambda s: sorted(s.astype(float), reverse=True)).reindex(out.index)
    out["top_cosine"] = [c[0] if isinstance(c, list) and c else -1.0 for c in cos]
    out["cosine_margin"] = [c[0] - c[1] if isinstance(c, list) and len(c) > 1 else 0.0 for c in cos]
    out["coverage_plus_cosine"] = out["top_coverage"] + out["top_cosine"].clip(lower=0.0)
    return out


def abstention_table(candidates: pd.DataFrame, utility: pd.DataFrame) -> pd.DataFrame:
    """nAUC per backend, mode, confidence and split. ``utility``: columns backend,
    mode, query_id, split, utility."""
    rows = []
    for (backend, mode), u in utility.groupby(["backend", "mode"], sort=False):
        cands = candidates[(candidates["backend"] == backend) & (candidates["mode"] == mode)]
        conf = confidences(cands, list(u["query_id"]))
        for name in CONFIDENCES[mode]:
            for split in ("all", "dev", "test"):
                sel = u if split == "all" else u[u["split"] == split]
                c = conf.loc[sel["query_id"], name].to_numpy(float)
                rows.append(dict(backend=backend, mode=mode, confidence=name, split=split, queries=len(sel),
                                 nauc=nauc(c, sel["utility"].to_numpy(float)),
                                 mean_utility=float(np.mean(sel["utility"])) if len(sel) else np.nan))
    return pd.DataFrame(rows)
