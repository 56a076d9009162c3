"""Why a query failed, from the run folder alone (issue 44, item 6).

``per_query`` says *that* a query failed (an answerable one got nothing, an
unanswerable one got a hit); reading *why* once meant reopening a database to see the
candidates' signals. A sweep therefore keeps, for the policies the report names
(``EXPLAINED``: the library default and the run's recommendation), every candidate a
search with that policy read — its channel and rank, the corpus entry, its relevance
grade and every raw signal (matched terms, coverage, cosine, centred cosine, support,
scripts) — and, per policy, whether it was admitted and where it landed among the
hits. That is ``explain.parquet``, a few bytes a candidate: no entry or query text
(``per_query`` holds the questions, the corpus the entries), no reasons in words.

The reasons are worded when asked for, by ``admission.explain`` itself — the one place
that words them, for the service's ``--explain`` and the search log alike — from the
stored signals and the policy the run used (``explain_policies.parquet``: each named
policy per mode, as JSON). A candidate rebuilt from its stored signals is the one the
replay judged, so the words match the stored verdicts (a test pins this).

    run = harness.load("results/sweep-…")
    run.explain("tny-q005", policy="default")      # a DataFrame; prints readably
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from powercontext.errors import PowerContextError, shown
from powercontext.memory import admission
from powercontext.memory.admission import AdmissionPolicy
from powercontext.suggest import did_you_mean, unknown_name

from ..errors import EvalError
from ..runfolder import RunFolderError, RunTables
from ..running.retrieval import CACHE_DIR, QueryChannels, candidate, query_channels, read_candidates

__all__ = ["EXPLAINED", "EXPLAIN_COLUMNS", "ExplainError", "ExplainedRun", "Explanation", "by_reference", "explain_query",
           "explain_rows", "explain_tables", "failures", "with_signals"]

#: The named policies whose verdicts a run folder keeps: the ones the report names.
EXPLAINED = ("default", "recommended")
#: The candidate columns kept: every signal admission reads, the corpus entry id and
#: its Memory's name. Not the service's ids, hash or text (admission reads none of
#: them; they made the table several times larger): ``explain_rows`` fills them in.
SIGNALS = ["channel", "rank", "memory", "corpus_entry", "kind", "matched_terms", "query_term_count", "coverage",
           "cosine", "centred", "script", "query_script", "covered", "pool_rank", "support"]
#: What ``retrieval.candidate`` needs besides SIGNALS, none of it read by admission.
_UNREAD = dict(memory_artifact_id="unread", memory_revision=0, entry_id="unread", entry_version_id="unread",
               entry_content_hash="", text="")
EXPLAIN_COLUMNS = ["backend", "mode", "query_id", *SIGNALS, "grade",
                   *[f"{p}_{what}" for p in EXPLAINED for what in ("admitted", "hit")]]
#: What identifies a candidate in both explain.parquet and the run's cache/candidates.parquet.
KEYS = ["backend", "mode", "query_id", "channel", "rank"]
#: explain.parquet when the folder's cache/ holds the candidates: the verdicts, not the
#: signals again (they were 1.3 of its 1.4 MB for ``sweep --all --backends sqlite``, a
#: copy of the cache's); ``with_signals`` joins them back when the folder is read.
BY_REFERENCE = [c for c in EXPLAIN_COLUMNS if c in KEYS or c not in SIGNALS]


class ExplainError(EvalError, PowerContextError, ValueError):
    """``explain`` asked about a query, policy, database or mode the run folder does
    not hold; the message names the near miss and the choices."""


def _hit_ranks(hits: Sequence[Any]) -> dict[tuple[str, str], int]:
    return {(h.memory_ref.artifact_id, h.entry_id): i for i, h in enumerate(hits, start=1)}


def explain_tables(candidates: pd.DataFrame, queries: pd.DataFrame, qrels: Mapping[str, Mapping[str, int]],
                   named: Mapping[str, Mapping[str, AdmissionPolicy]], limit: int,
                   groups: Mapping[tuple[str, str, str], QueryChannels] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(explain, explain_policies): one row per candidate a search with either named
    policy of ``named`` (mode → name → policy) reads at ``limit``, with each policy's
    verdict (``<name>_admitted``) and the candidate's place among its hits
    (``<name>_hit``, 0 when not a hit); and the policies themselves as JSON. ``groups``:
    ``query_channels(candidates)`` when the caller has it already."""
    if groups is None:
        groups = query_channels(candidates)
    rows: list[dict[str, Any]] = []
    known = set(queries["query_id"])
    for (backend, mode, query_id), (records, rebuilt) in groups.items():
        policies = named.get(mode, {})
        if not policies or query_id not in known:
            continue
        pool = max(p.pool_size(limit) for p in policies.values())
        kept = {name: admission.within_pool(cands, pool) for name, cands in rebuilt.items()}
        verdicts = {}
        for name, policy in policies.items():
            channels = {c: admission.within_pool(cands, policy.pool_size(limit)) for c, cands in kept.items()}
            admitted = {(c.channel, c.rank) for cands in admission.admit(channels, policy).values() for c in cands}
            verdicts[name] = (admitted, _hit_ranks(admission.fuse(channels, policy, limit)))
        by_key = {(r["channel"], int(r["rank"])): r for r in records}
        grades = qrels.get(query_id, {})
        for cands in kept.values():
            for c in cands:
                r = by_key[(c.channel, c.rank)]
                row = {"backend": backend, "mode": mode, "query_id": query_id, **{k: r.get(k) for k in SIGNALS},
                       "grade": int(grades.get(r["corpus_entry"], 0))}
                for name in EXPLAINED:
                    admitted, hits = verdicts.get(name, (set(), {}))
                    row[f"{name}_admitted"] = (c.channel, c.rank) in admitted
                    row[f"{name}_hit"] = hits.get((c.memory_ref.artifact_id, c.entry_id), 0)
                rows.append(row)
    table = pd.DataFrame(rows, columns=EXPLAIN_COLUMNS)
    table["matched_terms"] = table["matched_terms"].map(lambda v: tuple(v) if v is not None else ())
    policies = pd.DataFrame([{"mode": mode, "policy": name, "limit": limit,
                              "json": json.dumps(p.to_dict(), sort_keys=True)}
                             for mode, by_name in named.items() for name, p in by_name.items()],
                            columns=["mode", "policy", "limit", "json"])
    return table, policies


def by_reference(explain: pd.DataFrame) -> pd.DataFrame:
    """``explain`` without the signals the run folder's cache/ holds (``BY_REFERENCE``)."""
    return explain[BY_REFERENCE]


def with_signals(stored: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """explain.parquet as ``explain_tables`` made it: a table stored ``by_reference`` gets
    each candidate's signals from ``folder/cache/candidates.parquet`` (one without the
    cache, or a whole table of an older sweep, is returned as stored or refused)."""
    if all(c in stored.columns for c in SIGNALS):
        return stored
    cache = Path(folder) / CACHE_DIR / "candidates.parquet"
    redo = "rerun the sweep (without a cache, explain.parquet keeps the signals itself)"
    if not cache.is_file():
        raise RunFolderError(f"{folder / 'explain.parquet'}: its candidates' signals are in {cache}, which is "
                             f"missing; {redo}")
    try:
        candidates = read_candidates(folder)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for one cause: a bad file
        raise RunFolderError(f"{cache}: not a readable Parquet table ({type(exc).__name__}: {shown(str(exc))}); "
                             f"{redo}") from None
    signals = candidates[KEYS + [c for c in SIGNALS if c not in KEYS]]
    joined = stored.merge(signals, on=KEYS, how="left", validate="many_to_one", indicator=True)
    if not (joined["_merge"] == "both").all():
        raise RunFolderError(f"{cache}: does not hold the candidates explain.parquet names (another sweep's cache?); "
                             f"{redo}")
    return joined[EXPLAIN_COLUMNS]


class Explanation(pd.DataFrame):
    """``explain``'s answer: one row per candidate (admitted first, then by channel and
    rank), and ``headline`` — the question, the policy and what went wrong — printed
    above the table."""

    _metadata = ["headline"]

    @property
    def _constructor(self):
        return Explanation

    def __repr__(self) -> str:
        with pd.option_context("display.max_colwidth", 90, "display.width", 200):
            body = self.to_string(index=False) if len(self) else "(no candidate was retrieved)"
        return f"{getattr(self, 'headline', '')}\n{body}"

    def _repr_html_(self) -> str:  # Jupyter: the headline above the table
        from html import escape

        return f"<pre>{escape(getattr(self, 'headline', ''))}</pre>" + super()._repr_html_()


#: Up to this many choices an unknown name's message lists them all; beyond (a run's
#: query ids), it says how many there are and shows the first few.
LISTED = 12


def _pick(what: str, value: Any, choices: Sequence[str]) -> str:
    if value in choices:
        return value
    if len(choices) <= LISTED:
        raise ExplainError(unknown_name(what, str(value), choices))
    raise ExplainError(f"unknown {what} {shown(value)}{did_you_mean(str(value), choices)} ({len(choices)} in this "
                       f"run folder, e.g. {', '.join(map(str, choices[:3]))})")


def _signals(c: Any) -> str:
    parts = []
    if c.channel == "fts":
        parts.append(f"matched {len(c.matched_terms)}/{c.query_term_count}")
        if c.coverage is not None and not math.isnan(c.coverage):
            parts.append(f"coverage {c.coverage:.2f}")
    else:
        if c.cosine is not None:
            parts.append(f"cosine {c.cosine:.3f}")
        if c.centred is not None:
            parts.append(f"centred {c.centred:.3f}")
    if c.support is not None:
        parts.append(f"support {c.support:.2f}")
    if c.script and c.query_script and c.script != c.query_script:
        parts.append(f"{c.script} entry, {c.query_script} query")
    return ", ".join(parts)


def _chosen(policies: pd.DataFrame, mode: str, policy: str) -> tuple[AdmissionPolicy, int]:
    row = policies[(policies["mode"] == mode) & (policies["policy"] == policy)].iloc[0]
    return AdmissionPolicy.from_dict(json.loads(row["json"])), int(row["limit"])


def explain_rows(rows: pd.DataFrame, chosen: AdmissionPolicy, policy: str, mode: str, limit: int) -> pd.DataFrame:
    """The stored candidates ``rows`` of one query (one backend and mode) as read
    under ``chosen`` (the run's ``policy``): signals, grade, verdict, place among the
    hits and the reason in ``admission.explain``'s words; admitted rows first."""
    records = [dict(r, **_UNREAD) for r in rows.to_dict("records")]
    cands = [candidate(r) for r in records]
    channels = {name: admission.within_pool(tuple(sorted((c for c in cands if c.channel == name), key=lambda c: c.rank)),
                                            chosen.pool_size(limit))
                for name in {"fts": ("fts",), "vector": ("vector",), "hybrid": ("fts", "vector")}[mode]}
    reasons = {(d.candidate.channel, d.candidate.rank): d.reason for d in admission.explain(channels, chosen)}
    out = pd.DataFrame({
        "channel": [c.channel for c in cands], "rank": [c.rank for c in cands],
        "entry": rows["corpus_entry"].to_numpy(), "grade": rows["grade"].astype(int).to_numpy(),
        "admitted": rows[f"{policy}_admitted"].astype(bool).to_numpy(),
        "hit": rows[f"{policy}_hit"].astype(int).to_numpy(),
        "signals": [_signals(c) for c in cands],
        "reason": [reasons.get((c.channel, c.rank), "outside this policy's pool") for c in cands],
    }, columns=["channel", "rank", "entry", "grade", "admitted", "hit", "signals", "reason"])
    return out.sort_values(["admitted", "channel", "rank"], ascending=[False, True, True],
                           kind="stable").reset_index(drop=True)


def explain_query(explain: pd.DataFrame, policies: pd.DataFrame, per_query: pd.DataFrame, query_id: str,
                  policy: str = "default", backend: str | None = None, mode: str | None = None) -> Explanation:
    """Why ``query_id`` got the hits it got under the run's ``policy`` (``default`` or
    ``recommended``) on ``backend`` (default: the run's first database) in ``mode``
    (default: hybrid when the run swept it, else its first mode), from a run's
    ``explain``, ``explain_policies`` and ``per_query`` tables alone (see the module
    docstring). An unknown name is an ``ExplainError`` with "did you mean"."""
    _pick("policy", policy, list(EXPLAINED))
    _pick("query id", query_id, list(dict.fromkeys(per_query["query_id"])))
    backends = list(dict.fromkeys(per_query["backend"]))
    backend = _pick("database", backend if backend is not None else backends[0], backends)
    modes = list(dict.fromkeys(policies["mode"]))
    mode = _pick("mode", mode if mode is not None else ("hybrid" if "hybrid" in modes else modes[0]), modes)
    chosen, limit = _chosen(policies, mode, policy)
    rows = explain[(explain["backend"] == backend) & (explain["mode"] == mode) & (explain["query_id"] == query_id)]
    result = Explanation(explain_rows(rows, chosen, policy, mode, limit))
    result.headline = _headline(per_query, query_id, policy, backend, mode, result)
    return result


def failures(explain: pd.DataFrame, policies: pd.DataFrame, per_query: pd.DataFrame, backend: str, mode: str,
             split: str = "all", policy: str = "default") -> pd.DataFrame:
    """The queries ``policy`` failed on ``split`` (one backend and mode), one row each:
    the question, what went wrong (``missed``: answerable, no relevant entry among the
    hits; ``false admission``: unanswerable, yet a hit) and the reason that decided it —
    for a miss the best-ranked relevant candidate's (or "not retrieved"), for a false
    admission the first hit's."""
    pq = per_query[(per_query["backend"] == backend) & (per_query["mode"] == mode) & (per_query["policy"] == policy)]
    if split != "all":
        pq = pq[pq["split"] == split]
    chosen, limit = _chosen(policies, mode, policy)
    groups = dict(tuple(explain[(explain["backend"] == backend) & (explain["mode"] == mode)].groupby("query_id")))
    rows = []
    for q in pq.to_dict("records"):
        cands = groups.get(q["query_id"], explain.iloc[:0])
        found = ((cands["grade"] > 0) & (cands[f"{policy}_hit"] > 0)).any()
        hit = (cands[f"{policy}_hit"] > 0).any()
        if bool(q["positive"]) and found or not bool(q["positive"]) and not hit:
            continue
        why = explain_rows(cands, chosen, policy, mode, limit)
        if bool(q["positive"]):
            relevant = why[why["grade"] > 0].sort_values(["rank"], kind="stable")
            reason = (f"{relevant.iloc[0]['entry']} ({relevant.iloc[0]['channel']} #{relevant.iloc[0]['rank']}): "
                      f"{relevant.iloc[0]['reason']}" if len(relevant) else "no relevant entry was retrieved")
        else:
            first = why[why["hit"] > 0].sort_values("hit").iloc[0]
            reason = f"{first['entry']} ({first['channel']} #{first['rank']}): {first['reason']}"
        rows.append({"query": q["query_id"], "question": q.get("text", ""),
                     "outcome": "missed" if bool(q["positive"]) else "false admission", "why": reason})
    return pd.DataFrame(rows, columns=["query", "question", "outcome", "why"])


class ExplainedRun(RunTables):
    """A run folder read back (``harness.load``) that can also say why a query failed:
    ``run.explain(query_id, policy="default")``."""

    def explain(self, query_id: str, policy: str = "default", backend: str | None = None,
                mode: str | None = None) -> Explanation:
        """``explain_query`` on this folder's tables; a folder written before the
        explain table existed is an ExplainError saying how to add it."""
        if "explain" not in self.tables or "explain_policies" not in self.tables:
            raise ExplainError(f"{self.out}: this run folder has no explain table (sweeps write it since issue 44); "
                               "rerun the sweep (with --reuse while its cache/ is there, no database needed)")
        return explain_query(self.tables["explain"], self.tables["explain_policies"], self.tables["per_query"],
                             query_id, policy, backend, mode)


def _headline(per_query: pd.DataFrame, query_id: str, policy: str, backend: str, mode: str, out: pd.DataFrame) -> str:
    rows = per_query[(per_query["query_id"] == query_id) & (per_query["backend"] == backend)
                     & (per_query["mode"] == mode) & (per_query["policy"] == policy)]
    first = rows.iloc[0] if len(rows) else per_query[per_query["query_id"] == query_id].iloc[0]
    text, label = first.get("text", ""), first.get("label", "") if len(rows) else ""
    relevant, hits = int((out["grade"] > 0).sum()), int((out["hit"] > 0).sum())
    if bool(first["positive"]):
        found = int(((out["grade"] > 0) & (out["hit"] > 0)).sum())
        verdict = f"answerable: {found} relevant entr{'y' if found == 1 else 'ies'} among its {hits} hit(s)"
        if not relevant:
            verdict += " — no relevant entry was retrieved at all (a retrieval miss, not admission)"
        elif not found:
            verdict += f"; {relevant} relevant candidate(s) retrieved, none a hit: see their reasons"
    else:
        verdict = ("unanswerable: correctly no hit" if hits == 0 else
                   f"unanswerable, yet {hits} hit(s): a false admission, see the admitted rows' reasons")
    return f"{query_id}: {text}\n{policy} policy ({label}) · {backend} · {mode} — {verdict}"
