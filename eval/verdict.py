"""The first screen of report.html: the library's shipped default beside this run's own
recommendation, what each costs on this run's test split, why they differ, and the
exact line to paste for each.

The page once opened with "Set pc.AdmissionPolicy(fts_min_coverage=0.2, …)" — the
run's choice written as a difference from ``AdmissionPolicy()`` — called that choice
"the library default", and never said that its test false admission exceeded the bound
it was chosen under. Now both policies are written out in full (a line that means the
same whatever the library's default becomes), the two are told apart by how they were
chosen (leave-one-corpus-out vs this corpus), and every rate that rests on fewer than
``SMALL`` queries is marked as such.
"""

from __future__ import annotations

import html
from dataclasses import fields
from typing import Any

import pandas as pd

from powercontext.bundled import BUNDLED
from powercontext.memory.admission import AdmissionPolicy

from .grid import policy_from_fields

__all__ = ["SMALL", "bound_notes", "cost_table", "explicit_call", "first_screen", "profiles", "sample_note", "small_notes"]

#: A rate over fewer queries than this gets a warning: 3 negatives cannot support a CI.
SMALL = 20
#: Fields a reader sets; the rest (rrf_k, pool sizes …) stay at their defaults.
_SHOWN = ("fts_min_terms", "fts_min_coverage", "hybrid_fts_min_terms", "hybrid_fts_min_coverage", "vector_min_cosine",
          "vector_min_centred", "vector_min_support", "fts_min_support", "cross_script_min_terms", "vector_uncovered",
          "gate_min", "gate_signal", "profile")


def explicit_call(policy: AdmissionPolicy) -> str:
    """``pc.AdmissionPolicy(fts_min_terms=3, …)`` with every threshold spelled out: the
    same policy whatever ``AdmissionPolicy()``'s defaults are or become."""
    def show(v: Any) -> str:
        return f"{v:g}" if isinstance(v, float) else repr(v)

    default = AdmissionPolicy()
    parts = [f"{f.name}={show(getattr(policy, f.name))}" for f in fields(policy)
             if f.name in _SHOWN and not (f.name == "gate_signal" and policy.gate_min is None)
             and not (getattr(policy, f.name) is None and getattr(default, f.name) is None)]
    return f"pc.AdmissionPolicy({', '.join(parts)})"


def profiles(result: Any) -> list[tuple[str, str | None, AdmissionPolicy, bool]]:
    """(name, profile id, shipped default, whether this run embeds with it) for every
    bundled embedding profile, and for the run's own profile when it is not bundled
    (or None: full text only), whose default is ``AdmissionPolicy()``."""
    run_id = getattr(result.collected, "profile_id", None)
    rows = [(name, p.profile_id, AdmissionPolicy.default_for(p), p.profile_id == run_id) for name, p in BUNDLED.items()]
    if run_id is None:
        rows.append(("full text only", None, AdmissionPolicy(), True))
    elif not any(r[3] for r in rows):
        rows.append((run_id, run_id, AdmissionPolicy.default_for(run_id), True))
    return rows


def sample_note(positive: int, empty: int) -> str:
    """A warning when a rate rests on fewer than SMALL queries, else ""."""
    few = [f"{what} on {n} {label} quer{'y' if n == 1 else 'ies'}"
           for what, n, label in (("nDCG@10", positive, "positive"), ("false admission", empty, "empty-answer"))
           if n < SMALL]
    return ("⚠ " + " and ".join(few) + f" (fewer than {SMALL}: the CI is wide, a 0.000 may be luck)") if few else ""


def _estimate(row: pd.Series, metric: str) -> str:
    value = row.get(metric)
    if value is None or pd.isna(value):
        return ""
    return f"{value:.3f} {row.get(f'{metric}_ci') or ''}".strip()


def cost_table(result: Any) -> pd.DataFrame:
    """Per mode and database on the test split: the library's default, this run's
    recommendation (and its joint policy where it differs) and no admission, with CIs
    and the number of queries each rate rests on."""
    o = result.objective
    s = result.summary[result.summary["split"] == "test"].set_index(["mode", "backend", "policy"])
    rows = []
    for mode in [m for m in ("fts", "vector", "hybrid") if m in result.collected.modes]:
        for backend in result.collected.backends:
            named = [p for p in ("default", "recommended", "joint", "no-admission") if (mode, backend, p) in s.index]
            if "joint" in named and "recommended" in named and (
                    s.loc[(mode, backend, "joint"), "label"] == s.loc[(mode, backend, "recommended"), "label"]):
                named.remove("joint")
            for policy in named:
                r = s.loc[(mode, backend, policy)]
                over = policy in ("recommended", "joint") and r.get("false_admission", 0) > o.bound
                rows.append({
                    "mode": mode, "database": backend,
                    "policy": {"default": "library default", "recommended": "this run's (mode)",
                               "joint": "this run's (joint)"}.get(policy, policy),
                    "thresholds": r["label"], f"{o.metric} [95% CI]": _estimate(r, o.metric),
                    "false adm. [95% CI]": _estimate(r, "false_admission") + (f" > {o.bound:g}" if over else ""),
                    "empty": r.get("empty_answer"), "hits/q": r.get("hits"),
                    "queries (pos/empty)": f"{int(r['positive'])}/{int(r['empty'])}",
                })
    return pd.DataFrame(rows)


def bound_notes(result: Any) -> list[str]:
    """A warning for each of this run's policies whose test false admission exceeds the
    bound it was chosen under (on the dev split, or all queries when cross-validated)."""
    o = result.objective
    s = result.summary
    s = s[(s["split"] == "test") & s["policy"].isin(["recommended", "joint"]) & (s["false_admission"] > o.bound)]
    s = s.drop_duplicates(["backend", "mode", "label"])  # joint = recommended: one note
    return [f"⚠ On the test split this run's {r.policy} policy ({r.mode}, {r.backend}) gives a hit to "
            f"{r.false_admission:.3f} of the empty-answer queries: above the {o.bound:g} bound it met on the "
            f"{o.split} split. The bound constrains the choice; it is no guarantee on new queries."
            for r in s.itertuples()]


def small_notes(result: Any) -> list[str]:
    """A warning per test-split population of fewer than SMALL queries."""
    s = result.summary[result.summary["split"] == "test"]
    notes = []
    for corpus_counts in s[["positive", "empty"]].drop_duplicates().itertuples(index=False):
        note = sample_note(int(corpus_counts.positive), int(corpus_counts.empty))
        if note:
            notes.append(f"{note} — on this run's test split.")
    return notes


def first_screen(result: Any) -> list[str | pd.DataFrame]:
    """The first screen as HTML pieces and the cost table (a DataFrame the report renders
    with its own table style), in order."""
    o = result.objective
    recs = result.recommendations.set_index("mode")
    parts: list[str | pd.DataFrame] = []
    run_policy = policy_from_fields(recs.loc["joint"]) if "joint" in recs.index else None
    how = (f"chosen on all queries, its held-out cost estimated by {result.folds}-fold cross-validation"
           if result.folds else f"tuned on this run's {o.split} split")
    shipped = []
    for name, profile_id, default, used in profiles(result):
        line = (f"<code>{html.escape(name)}</code>"
                + (f" ({html.escape(profile_id)})" if profile_id and profile_id != name else "")
                + f": <code>{html.escape(explicit_call(default))}</code>")
        shipped.append(f"<b>{line} — this run's profile</b>" if used else line)
    lines = ["<b>Library defaults</b>, shipped per embedding profile (<code>AdmissionPolicy.default_for(profile)</code>;"
             " a database opened with that model searches with it), meant for corpora they were never tuned on: "
             "chosen leave-one-corpus-out on the bundled corpora (tuned on all but one, scored on the one left out; "
             "<code>DEFAULTS</code> in <code>memory/admission.py</code> says how each was chosen):",
             "<ul>" + "".join(f"<li>{x}</li>" for x in shipped) + "</ul>"]
    if run_policy is not None:
        flag = ("" if recs.loc["joint", "feasible"] else
                " No policy met the bound on every mode: this one has the lowest false admission.")
        same = " It is this profile's library default." if run_policy == result.collected.default_policy else ""
        lines.append(f"<b>This run's recommendation</b>: <code>{html.escape(explicit_call(run_policy))}</code> — one "
                     f"policy for every mode, {how}: it fits this corpus and may not transfer.{same}{flag}")
    parts.append("<div class='verdict'>" + "".join(lines) + "</div>")
    parts.append("<p><b>Why they differ.</b> The default is the family and thresholds that held best on corpora they "
                 "were not tuned on (<a href='#transfer'>leave one corpus out</a>); the recommendation is the best "
                 f"point of this run's grid on this corpus ({html.escape(o.describe())}). Use the recommendation for "
                 "this corpus and queries like it; keep the default for memories you have no labels for.</p>")
    run_name = next(n for n, _, _, used in profiles(result) if used)
    default = result.collected.default_policy
    pastes = ["<b>To paste</b> (<code>svc.search(…, policy=…)</code>, or <code>svc.policy = …</code> for every search "
              "of a service):",
              f"the library default for <code>{html.escape(run_name)}</code>: <code>{html.escape(explicit_call(default))}"
              f"</code> — what a database with that embedding uses anyway"]
    if run_policy is not None:
        pastes.append(f"this run's: <code>{html.escape(explicit_call(run_policy))}</code>, or in Jupyter "
                      "<code>%config PcMem.policy_file = 'policy.json'</code> with the <code>policy.json</code> of "
                      "the run folder")
    parts.append("<ul class='paste'>" + "".join(f"<li>{p}</li>" for p in pastes) + "</ul>")
    held_out = "test split; not held out, see the cross-validation" if result.folds else "held-out test split"
    costs = cost_table(result)
    parts += [f"<h3>What each costs ({held_out}, limit {o.limit})</h3>", costs]
    parts += [f"<p class='warn'>{html.escape(n)}</p>" for n in bound_notes(result) + small_notes(result)]
    parts.append("<p class='muted'>Per mode and database with 95 % bootstrap CIs, beside no admission. Admission "
                 "trades some recall (a lower nDCG@10) for answering nothing when nothing is relevant (a lower false "
                 "admission). <i>false adm.</i>: share of empty-answer queries (no relevant entry) given any hit; "
                 "<i>empty</i>: share of positive queries (with a relevant entry) given nothing; <i>hits/q</i>: mean "
                 "hits per query; <i>queries</i>: the positive and empty-answer queries each rate rests on.</p>")
    return parts
