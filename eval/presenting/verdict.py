"""The first screen of report.html: the library's shipped default beside this run's own
recommendation, what each costs, why they differ, which to paste and the exact line
for each.

The page once opened with "Set pc.AdmissionPolicy(fts_min_coverage=0.2, …)" and called
the run's choice "the library default"; then with two long ``AdmissionPolicy(...)``
calls a reader had to diff by eye. Now the default is named by how to get it
(``AdmissionPolicy.default_for(profile)``), the recommendation is shown as the knobs
that differ from it (default → recommended), and the screen says which of the two to
paste (``paste_choice``: the default when the cross-validation folds disagreed). Every
figure is quoted on the same split as the terminal summary (``headline_split``), and
every rate that rests on fewer than ``SMALL`` queries is marked as such. The verdict
box carries the run's profile and both policies as JSON (``data-*`` attributes), so a
test can hold a committed report to ``AdmissionPolicy.default_for``.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import fields
from typing import Any

import pandas as pd

from powercontext.bundled import BUNDLED
from powercontext.memory.admission import AdmissionPolicy

from ..scoring.grid import policy_from_fields

__all__ = ["SMALL", "bound_notes", "corpus_words", "cost_table", "explicit_call", "first_screen", "fold_policies",
           "headline_split", "knob_changes", "paste_choice", "profiles", "sample_note", "small_notes"]

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


def headline_split(result: Any) -> str:
    """The split the first screen quotes: ``SweepResult.headline_split`` (the terminal
    summary's too), test for a result-like object without one."""
    return getattr(result, "headline_split", None) or "test"


def cost_table(result: Any) -> pd.DataFrame:
    """Per mode and database on the headline split (the one the terminal summary
    prints, from the same ``summary_table``): the library's default, this run's
    recommendation (and its joint policy where it differs) and no admission, with CIs,
    the number of queries each rate rests on and, for a cross-validated run, the
    recommendation's held-out estimate."""
    o = result.objective
    split = headline_split(result)
    s = result.summary_table(split).set_index(["mode", "backend", "policy"])
    counts = result.summary[result.summary["split"] == split].set_index(["mode", "backend", "policy"])
    rows = []
    for mode in [m for m in ("fts", "vector", "hybrid") if m in result.collected.modes]:
        for backend in result.collected.backends:
            named = [p for p in ("default", "recommended", "joint", "no-admission") if (mode, backend, p) in s.index]
            if "joint" in named and "recommended" in named and (
                    s.loc[(mode, backend, "joint"), "label"] == s.loc[(mode, backend, "recommended"), "label"]):
                named.remove("joint")
            for policy in named:
                r, n = s.loc[(mode, backend, policy)], counts.loc[(mode, backend, policy)]
                over = policy in ("recommended", "joint") and r.get("false_admission", 0) > o.bound
                row = {
                    "mode": mode, "database": backend,
                    "policy": {"default": "library default", "recommended": "this run's (mode)",
                               "joint": "this run's (joint)"}.get(policy, policy),
                    "thresholds": r["label"], f"{o.metric} [95% CI]": _estimate(r, o.metric),
                    "false adm. [95% CI]": _estimate(r, "false_admission") + (f" > {o.bound:g}" if over else ""),
                    "empty": r.get("empty_answer"), "hits/q": r.get("hits"),
                    "queries (pos/empty)": f"{int(n['positive'])}/{int(n['empty'])}",
                }
                if getattr(result, "folds", 0):
                    held = r.get(f"heldout_{o.metric}")
                    row["held out (folds)"] = ("" if held is None or pd.isna(held) else
                                               f"{held:.3f} ± {r[f'heldout_{o.metric}_sd']:.3f} / "
                                               f"{r[f'heldout_{o.constraint}']:.3f}")
                rows.append(row)
    return pd.DataFrame(rows)


def bound_notes(result: Any) -> list[str]:
    """A warning for each of this run's policies whose test false admission exceeds the
    bound it was chosen under (on the dev split, or all queries when cross-validated)."""
    o = result.objective
    s = result.summary
    split = headline_split(result)
    s = s[(s["split"] == split) & s["policy"].isin(["recommended", "joint"]) & (s["false_admission"] > o.bound)]
    s = s.drop_duplicates(["backend", "mode", "label"])  # joint = recommended: one note
    return [f"⚠ On {_split_words(split)} this run's {r.policy} policy ({r.mode}, {r.backend}) gives a hit to "
            f"{r.false_admission:.3f} of the empty-answer queries: above the {o.bound:g} bound it met on the "
            f"{o.split} split. The bound constrains the choice; it is no guarantee on new queries."
            for r in s.itertuples()]


def _split_words(split: str) -> str:
    return "all queries" if split == "all" else f"the {split} split"


def small_notes(result: Any) -> list[str]:
    """A warning per headline-split population of fewer than SMALL queries."""
    split = headline_split(result)
    s = result.summary[result.summary["split"] == split]
    notes = []
    for corpus_counts in s[["positive", "empty"]].drop_duplicates().itertuples(index=False):
        note = sample_note(int(corpus_counts.positive), int(corpus_counts.empty))
        if note:
            notes.append(f"{note} — on {_split_words(split)} of this run.")
    return notes


def _show(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else repr(value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-9)
    return a == b


def knob_changes(default: AdmissionPolicy, chosen: AdmissionPolicy) -> pd.DataFrame:
    """The knobs a reader sets (``_SHOWN`` but the profile) whose value differs between
    ``default`` and ``chosen``: one row each, ``knob``, ``default``, ``recommended`` —
    what the first screen shows instead of two long calls to diff by eye."""
    rows = []
    for name in _SHOWN:
        if name == "profile" or (name == "gate_signal" and default.gate_min is None and chosen.gate_min is None):
            continue
        a, b = getattr(default, name), getattr(chosen, name)
        if not _same(a, b):
            rows.append({"knob": name, "default": _show(a), "recommended": _show(b)})
    return pd.DataFrame(rows, columns=["knob", "default", "recommended"])


def corpus_words(result: Any) -> str:
    """"this corpus" or, on a run of several, "these corpora"."""
    return "these corpora" if len(result.collected.corpora) > 1 else "this corpus"


def fold_policies(result: Any) -> int:
    """How many different joint policies the cross-validation folds chose (0: not
    cross-validated)."""
    recs = result.recommendations.set_index("mode")
    if not getattr(result, "folds", 0) or "fold_policies" not in recs.columns or "joint" not in recs.index:
        return 0
    value = recs.loc["joint", "fold_policies"]
    return 0 if pd.isna(value) else int(value)


def _held_out_false_admission(result: Any) -> float | None:
    """The joint recommendation's worst false admission on queries it was not chosen
    on: the test split (any mode and database), or the cross-validation's held-out
    mean; None where neither was measured."""
    o = result.objective
    if getattr(result, "folds", 0):
        recs = result.recommendations.set_index("mode")
        column = f"heldout_{o.constraint}"
        value = recs.loc["joint", column] if column in recs.columns and "joint" in recs.index else None
        return None if value is None or pd.isna(value) else float(value)
    s = result.summary
    values = s[(s["split"] == "test") & (s["policy"] == "joint")][o.constraint].dropna()
    return float(values.max()) if len(values) else None


def paste_choice(result: Any) -> tuple[str, str]:
    """Which policy the first screen says to paste, ``"default"`` or ``"recommended"``,
    and why in one sentence.

    The default when this run's policy broke its false-admission bound on queries it
    was not chosen on (the test split, or the folds held out), and when the
    cross-validation folds chose different policies: which thresholds win then depends
    on which queries happened to be tuned on, so the corpus does not pin them down, and
    a choice that moves between folds is a direction, not a setting. The library
    default was chosen the way a new memory meets it — on corpora it was never tuned on
    — and stays put. (The most stable fold choice would be a third policy, tuned on
    part of the queries only.) Otherwise the recommendation, for corpora like these."""
    recs = result.recommendations.set_index("mode")
    if "joint" not in recs.index:
        return "default", "this run made no joint recommendation"
    if knob_changes(result.collected.default_policy, policy_from_fields(recs.loc["joint"])).empty:
        return "default", "this run's recommendation is the library default"
    over = _held_out_false_admission(result)
    if over is not None and over > result.objective.bound:
        return "default", (f"on queries it was not chosen on, this run's policy gives a hit to {over:.3f} of the "
                           f"empty-answer questions, above the {result.objective.bound:g} bound it was chosen under: "
                           "it fits the tuning queries, not new ones")
    chosen = fold_policies(result)
    if chosen > 1:
        return "default", (f"the {result.folds} cross-validation folds chose {chosen} different policies: which "
                           f"thresholds win depends on the queries tuned on, so {corpus_words(result)} do"
                           f"{'' if len(result.collected.corpora) > 1 else 'es'} not pin them down; the library "
                           "default was chosen on corpora it was never tuned on and does not move with them")
    return "recommended", (f"it is the best policy for {corpus_words(result)} and questions like them; keep the "
                           "default for memories you have no labels for")


def first_screen(result: Any) -> list[str | pd.DataFrame]:
    """The first screen as HTML pieces and tables (DataFrames the report renders with
    its own table style), in order: the run profile's library default, this run's
    recommendation as the knobs that differ from it, which of the two to paste and
    why, what each costs."""
    o = result.objective
    recs = result.recommendations.set_index("mode")
    parts: list[str | pd.DataFrame] = []
    run_policy = policy_from_fields(recs.loc["joint"]) if "joint" in recs.index else None
    default = result.collected.default_policy
    how = (f"chosen on all queries, its held-out cost estimated by {result.folds}-fold cross-validation"
           if result.folds else f"tuned on this run's {o.split} split")
    rows = profiles(result)
    run_name, run_id = next((n, p) for n, p, _, used in rows if used)
    call = f"pc.AdmissionPolicy.default_for({(run_id if run_id is None else run_name)!r})"
    others = ", ".join(f"<code>{html.escape(n)}</code>" for n, p, _, used in rows if not used and p is not None)
    marker = (f" data-profile='{html.escape(run_id or '', quote=True)}'"
              f" data-default-policy='{html.escape(json.dumps(default.to_dict(), sort_keys=True), quote=True)}'")
    if run_policy is not None:
        marker += (" data-recommended-policy="
                   f"'{html.escape(json.dumps(run_policy.to_dict(), sort_keys=True), quote=True)}'")
    lines = [f"<p><b>Library default</b> for this run's embedding profile <code>{html.escape(run_name)}</code>"
             + (f" ({html.escape(run_id)})" if run_id and run_id != run_name else "")
             + f": <code>{html.escape(call)}</code> — what a database opened with that model searches with, meant "
             "for memories it was never tuned on: chosen leave-one-corpus-out on the bundled corpora (tuned on all "
             "but one, scored on the one left out; <code>DEFAULTS</code> in <code>memory/admission.py</code> says "
             "how)." + (f" Other profiles have their own ({others})." if others else "") + "</p>"]
    diff = None
    if run_policy is not None:
        flag = ("" if recs.loc["joint", "feasible"] else
                " No policy met the bound on every mode: this one has the lowest false admission.")
        diff = knob_changes(default, run_policy)
        same = (" It is this profile's library default." if diff.empty else
                f" It differs from the default in {len(diff)} knob{'s' if len(diff) != 1 else ''} "
                "(default → recommended):")
        lines.append(f"<p><b>This run's recommendation</b>: one policy for every mode, {how}: it fits "
                     f"{corpus_words(result)} and may not transfer.{flag}{same}</p>")
    parts.append(f"<div class='verdict'{marker}>" + "".join(lines))
    if diff is not None and not diff.empty:
        parts.append(diff)
    pick, why = paste_choice(result)
    chosen = fold_policies(result)
    fold_note = (f"<p>⚠ The {result.folds} cross-validation folds chose {chosen} different policies.</p>"
                 if chosen > 1 else "")
    parts.append(fold_note + f"<p><b>Paste the {'library default' if pick == 'default' else 'recommendation'}</b>: "
                 f"{html.escape(why)}.</p></div>")
    parts.append("<p><b>Why they differ.</b> The default is the family and thresholds that held best on corpora they "
                 "were not tuned on (<a href='#transfer'>leave one corpus out</a>); the recommendation is the best "
                 f"point of this run's grid on {corpus_words(result)} ({html.escape(o.describe())}).</p>")
    pastes = ["<b>To paste</b> (<code>svc.search(…, policy=…)</code>, or <code>svc.policy = …</code> for every search "
              "of a service):",
              f"the library default for <code>{html.escape(run_name)}</code>: <code>{html.escape(call)}</code>, "
              f"every threshold spelled out: <code>{html.escape(explicit_call(default))}</code>"
              + (" ← paste this" if pick == "default" else "")]
    if run_policy is not None:
        pastes.append(f"this run's: <code>{html.escape(explicit_call(run_policy))}</code>, or in Jupyter "
                      "<code>%config PcMem.policy_file = 'policy.json'</code> with the <code>policy.json</code> of "
                      "the run folder" + (" ← paste this" if pick == "recommended" else ""))
    parts.append("<ul class='paste'>" + "".join(f"<li>{p}</li>" for p in pastes) + "</ul>")
    split = headline_split(result)
    where = ("all queries, as the terminal summary; the recommendation was chosen on them, its held-out estimate "
             "is the last column" if split == "all" else "held-out test split, as the terminal summary")
    parts += [f"<h3>What each costs ({where}; limit {o.limit})</h3>", cost_table(result)]
    parts += [f"<p class='warn'>{html.escape(n)}</p>" for n in bound_notes(result) + small_notes(result)]
    parts.append("<p class='muted'>Per mode and database with 95 % bootstrap CIs, beside no admission. Admission "
                 "trades some recall (a lower nDCG@10) for answering nothing when nothing is relevant (a lower false "
                 "admission). <i>false adm.</i>: share of empty-answer queries (no relevant entry) given any hit; "
                 "<i>empty</i>: share of positive queries (with a relevant entry) given nothing; <i>hits/q</i>: mean "
                 "hits per query; <i>queries</i>: the positive and empty-answer queries each rate rests on"
                 + ("; <i>held out (folds)</i>: the recommendation's mean over the folds it was not tuned on ± the "
                    "spread, then its false admission" if split == "all" else "") + ".</p>")
    return parts
