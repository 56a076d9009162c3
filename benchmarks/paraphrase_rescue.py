"""Would a query-relative signal answer the paraphrases the default refuses? (issue 46)

    .venv/bin/python benchmarks/paraphrase_rescue.py [--embedding minilm|e5] [--out results/paraphrase-rescue]

Paraphrased questions' answers sit at the same absolute cosines as the strangers of
unanswerable questions, so no floor on a candidate's own score (raw, centred or
calibrated) separates them (reports/calibration/README.md). A signal that needs no reader
model is how far the vector channel's first candidate stands out from the rest of ITS
OWN pool (the shipped ``+nqc`` family reads the pool's spread as a gate that refuses;
this reads the lead as a rescue that answers): ``z = (s1 − mean(s2..s10)) / std(s2..s10)`` over the profile's admission signal
(MiniLM's centred cosine, E5's raw cosine). This benchmark asks what it would buy:

* each bundled corpus goes through the harness's own collection (SQLite, hybrid, pools
  at limit 10) and the profile's shipped default is replayed on it (``Replay``, the
  sweep's exact replay), giving each question's answered / falsely-admitted flags;
* the *rescue* answers a question the default left empty with the vector channel's
  first candidate when its ``z`` is at least ``t`` — on an unanswerable question that is
  a false admission; on a paraphrase, the table says how many rescues are its answer;
* ``t`` is chosen held out, like the defaults: on the other original corpora (never
  lantern-relay), the lowest ``t`` whose false admission stays ≤ max(0.30, the
  default's) on each of them; the held-out corpus is then scored with it.

Prints, per held-out corpus, the paraphrase-tagged questions' answered share and the
unanswerable questions' false admission, default vs rescue, and the whole curve over
``t``. Asserts nothing; not part of ``make test``. Figures are quoted in
reports/calibration/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from powercontext.e5 import E5_PROFILE  # noqa: E402
from powercontext.embedding import MINILM_PROFILE  # noqa: E402
from powercontext.eval.corpora.datasets import resolve_datasets  # noqa: E402
from powercontext.eval.running.collect import collect  # noqa: E402
from powercontext.eval.scoring.sweep import Replay  # noqa: E402
from powercontext.memory.admission import AdmissionPolicy  # noqa: E402

THRESHOLDS = (8.0, 7.0, 6.0, 5.5, 5.0, 4.5, 4.0, 3.5, 3.0)
BOUND = 0.30
HELD_BACK = ("lantern-relay",)
SIGNAL = {"minilm": "centred", "e5": "cosine"}
PROFILES = {"minilm": MINILM_PROFILE, "e5": E5_PROFILE}


def lead_z(candidates: pd.DataFrame, signal: str, qrels) -> pd.DataFrame:
    """Per query: ``z``, the vector channel's first candidate's signal in standard
    deviations above the mean of the rest of its pool (ranks 2..10), and whether that
    first candidate is an answer (grade ≥ 1)."""
    vector = candidates[(candidates["mode"] == "hybrid") & (candidates["channel"] == "vector")]
    rows = {}
    for query_id, pool in vector.sort_values(["query_id", "rank"]).groupby("query_id", sort=False):
        s = pool[signal].to_numpy(float)[:10]
        rest = s[1:]
        z = (s[0] - rest.mean()) / (rest.std() + 1e-6) if len(rest) > 1 else -np.inf
        rows[query_id] = (z, qrels.get(query_id, {}).get(pool["corpus_entry"].iloc[0], 0) >= 1)
    return pd.DataFrame.from_dict(rows, orient="index", columns=["z", "first_is_answer"])


def per_query(embedding: str, out: Path) -> pd.DataFrame:
    corpora = resolve_datasets("all", root=ROOT / "datasets")
    collected = asyncio.run(collect(corpora, backends=("sqlite",), modes=("fts", "vector", "hybrid"), out=out,
                                    max_limit=10, embedding=embedding, progress=False, spot_queries=0, reuse=True))
    default = AdmissionPolicy.default_for(PROFILES[embedding].profile_id)
    cands = collected.candidates
    retrievals = collected.retrievals[collected.retrievals["mode"] == "hybrid"]
    replay = Replay.build(cands[cands["mode"] == "hybrid"], retrievals, collected.qrels, "hybrid",
                          min_width=collected.max_limit)
    values = replay.evaluate([default], [8])
    q = collected.queries.set_index("query_id").loc[replay.query_ids].reset_index()
    q["answered"] = values["empty_answer"][0, 0] == 0
    lead = lead_z(cands, SIGNAL[embedding], collected.qrels).reindex(q["query_id"])
    q["z"] = lead["z"].fillna(-np.inf).to_numpy()
    q["first_is_answer"] = lead["first_is_answer"].fillna(False).astype(bool).to_numpy()
    q["paraphrase"] = q["tags"].map(lambda tags: "paraphrase" in tags)
    q["positive"] = q["positive"].astype(bool)
    return q


def scores(q: pd.DataFrame, t: float | None) -> dict:
    """Paraphrase answered share and false admission, with the rescue at ``t`` (None:
    the default alone), and the share of the rescued paraphrases whose rescue is an answer."""
    rescued = ~q["answered"] & (q["z"] >= (np.inf if t is None else t))
    answered = q["answered"] | rescued
    para, neg = q["paraphrase"] & q["positive"], ~q["positive"]
    right = q.loc[rescued & para, "first_is_answer"]
    return dict(paraphrase_answered=float(answered[para].mean()), false_admission=float(answered[neg].mean()),
                n_paraphrase=int(para.sum()), n_unanswerable=int(neg.sum()), rescued=int(len(right)),
                rescued_right=int(right.sum()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedding", default="minilm", choices=sorted(SIGNAL))
    parser.add_argument("--out", default=None, help="the harness's run folder (candidates cached there)")
    args = parser.parse_args()
    out = Path(args.out or ROOT / "results" / f"paraphrase-rescue-{args.embedding}")
    q = per_query(args.embedding, out)
    corpora = sorted(q["corpus"].unique())
    by = {c: q[q["corpus"] == c] for c in corpora}
    print(f"{args.embedding}: z over the vector channel's {SIGNAL[args.embedding]} (ranks 2..10), hybrid, limit 8, SQLite")
    allowed = {c: max(BOUND, scores(by[c], None)["false_admission"]) for c in corpora}  # the default's, once
    print("\nheld out | t (tuned on the other originals) | paraphrase answered default → rescue "
          "(rescues that are an answer) | false admission default → rescue")
    for held in corpora:
        tuning = [c for c in corpora if c != held and c not in HELD_BACK]
        ok = [t for t in THRESHOLDS
              if all(scores(by[c], t)["false_admission"] <= allowed[c] + 1e-12 for c in tuning)]
        t = min(ok) if ok else None
        d, r = scores(by[held], None), scores(by[held], t)
        print(f"{held:<15} | {'none' if t is None else f'{t:g}':>4} | {d['paraphrase_answered']:.3f} → "
              f"{r['paraphrase_answered']:.3f} (n={d['n_paraphrase']}; {r['rescued_right']}/{r['rescued']}) | "
              f"{d['false_admission']:.3f} → "
              f"{r['false_admission']:.3f} (n={d['n_unanswerable']})")
    print("\nthe curve, per corpus: paraphrase answered / false admission")
    header = "t".ljust(8) + "".join(f"{c[:14]:>18}" for c in corpora)
    print(header)
    for t in (None, *THRESHOLDS):
        row = "default".ljust(8) if t is None else f"z≥{t:g}".ljust(8)
        for c in corpora:
            s = scores(by[c], t)
            row += f"{s['paraphrase_answered']:>10.3f} /{s['false_admission']:.3f}"
        print(row)


if __name__ == "__main__":
    main()
