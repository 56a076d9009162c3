"""The calibrated probabilities a search with a given pool reads, rebuilt from a cached
(larger) pool for the array replay (``sweep.Replay``).

A hybrid candidate's probability depends on which entries BOTH channels retrieved (the
hybrid cell of ``powercontext.memory.calibration``), so a limit-8 search (pool 32)
can give an entry another probability than the limit-10 retrieval the harness cached
(pool 40). The replay therefore asks the library's own ``calibration.annotate`` again,
per query, over exactly the candidates the smaller pool holds (``admission.in_pool``):
the same function the service runs, so an offline sweep point equals an online search.
It also lets a study score a cached pool by another artefact (one fitted without the
held-out corpus).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from powercontext.memory import admission
from powercontext.memory.calibration import Calibration, annotate

from ..running.retrieval import candidate, records

__all__ = ["pool_probabilities"]


def pool_probabilities(rows: pd.DataFrame, Q: int, widths: tuple[int, int], channels: tuple[str, ...],
                       pool: int, calibration: Calibration) -> tuple[np.ndarray, np.ndarray]:
    """([Q, Cf], [Q, Cv]) probabilities of the fts and vector candidates a search with
    ``pool`` retrieves (NaN for none, outside the pool, or padding). ``rows``: cached
    candidate rows with the replay's ``qi`` and ``pos`` columns."""
    out = {"fts": np.full((Q, widths[0]), np.nan), "vector": np.full((Q, widths[1]), np.nan)}
    per_query: dict[int, dict[str, list]] = {}
    for row in records(rows):
        place = row.get("pool_rank")
        place = None if place is None or pd.isna(place) else int(place)
        if not admission.in_pool(int(row["pos"]), place if row["channel"] == "fts" else None, pool):
            continue
        per_query.setdefault(int(row["qi"]), {name: [] for name in channels})[row["channel"]].append(
            (int(row["pos"]), candidate(row)))
    for qi, by_channel in per_query.items():
        positions = {name: [p for p, _ in sorted(found, key=lambda t: t[0])] for name, found in by_channel.items()}
        annotated = annotate({name: tuple(c for _, c in sorted(found, key=lambda t: t[0]))
                              for name, found in by_channel.items()}, calibration)
        for name, cands in annotated.items():
            for pos, c in zip(positions[name], cands):
                if c.probability is not None:
                    out[name][qi, pos] = c.probability
    return out["fts"], out["vector"]
