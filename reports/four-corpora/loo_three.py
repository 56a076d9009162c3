"""Leave-one-corpus-out over the three original corpora, read from a four-corpus run's sweep
table (no database): each family tuned on two of the three at false admission <= 0.30, scored on
the third and on lantern-relay; hybrid, limit 8, SQLite (OceanBase admits the same sets).

    .venv/bin/python reports/four-corpora/loo_three.py results/<run>/minilm minilm"""
import sys
from pathlib import Path

import pandas as pd

import math

from powercontext.eval.scoring.grid import PARAMS, point_values, policy_label
from powercontext.eval.scoring.recommend import Objective
from powercontext.eval.scoring.transfer import _tune
from powercontext.memory.admission import AdmissionPolicy

run = Path(sys.argv[1])
profile = sys.argv[2]
sweep = pd.read_parquet(run / "sweep.parquet")
obj = Objective()
three = ["atlas-etl", "harbor-web", "tidewater-cli"]
mode = "hybrid"
sw = sweep[(sweep["mode"] == mode) & (sweep["split"] == "all") & (sweep["limit"] == obj.limit)]
params = [p for p in PARAMS if p in sw.columns]
def norm(v):
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else (round(v, 6) if isinstance(v, float) else v)
sw = sw.assign(_key=[tuple(norm(v) for v in t) for t in sw[["family", *params]].itertuples(index=False)])
families = list(dict.fromkeys(sw["family"]))
rows = []
def score(policy, corpus, backend="sqlite"):
    v = point_values(policy, mode, obj.limit)
    key = tuple(norm(v[k]) for k in ["family", *params])
    r = sw[(sw["_key"] == key) & (sw["corpus"] == corpus) & (sw["backend"] == backend)]
    if r.empty:
        return float("nan"), float("nan")
    return float(r["ndcg@10"].iloc[0]), float(r["false_admission"].iloc[0])
for family in families + ["default"]:
    cells, means = [], []
    for held in three:
        others = [c for c in three if c != held]
        if family == "default":
            policy = AdmissionPolicy.default_for(profile)
        else:
            tuned = _tune(sweep, mode, family, others, obj)
            policy = tuned[0]
        nd, fa = score(policy, held)
        cells.append(f"{nd:.3f} / {fa:.3f}")
        means.append(nd)
    policy = AdmissionPolicy.default_for(profile) if family == "default" else _tune(sweep, mode, family, three, obj)[0]
    lnd, lfa = score(policy, "lantern-relay")
    rows.append(dict(family=family, **dict(zip(three, cells)), mean=round(sum(means) / 3, 3),
                     lantern=f"{lnd:.3f} / {lfa:.3f}", tuned_on_three=policy_label(policy, mode)))
print(pd.DataFrame(rows).to_markdown(index=False))
