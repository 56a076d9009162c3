"""Step one of search, run once per query, backend and mode, and cached with every raw
signal (``MemoryService.retrieve``: the seam between the database and admission).

The candidates table is tidy: one row per retrieved candidate, in the backend's
channel order, with everything needed to rebuild the exact ``ChannelCandidate`` the
service saw (so ``admission.fuse`` can be replayed on it) plus the corpus entry id it
maps to. The queries table has one row per (backend, corpus, mode, query) with the
analyzer terms, the mode actually used and the wall time of the retrieve call.

Both are cached in the run folder (``cache/``: Parquet tables and ``meta.json``) so a
sweep can be replayed, re-gridded and re-reported without touching a database.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from powercontext.memory.admission import AdmissionPolicy
from powercontext.model import ArtifactRef, ChannelCandidate

from .loader import LoadedCorpus
from ..private import private_dir, write_private_text

__all__ = [
    "CANDIDATE_COLUMNS",
    "QUERY_COLUMNS",
    "QueryChannels",
    "channels_of",
    "query_channels",
    "read_cache",
    "read_candidates",
    "records",
    "records_by",
    "retrieve_corpus",
    "write_cache",
]

CANDIDATE_COLUMNS = [
    "backend", "corpus", "mode", "query_id", "channel", "rank", "memory", "memory_artifact_id",
    "memory_revision", "entry_id", "entry_version_id", "entry_content_hash", "kind", "text",
    "corpus_entry", "matched_terms", "matched", "query_term_count", "coverage", "cosine",
    # the admission families' signals (None = not measured): centred cosine, scripts, profile coverage
    "centred", "script", "query_script", "covered",
    # full-text: the place in the pool order both databases share (admission.within_pool)
    "pool_rank",
    # both channels, hybrid and fts searches: the IDF-weighted share of the query's terms held
    "support",
    # the profile's calibration (memory/calibration.py): probability of answering and the cell read
    "probability", "calibration_cell",
]
QUERY_COLUMNS = ["backend", "corpus", "mode", "query_id", "mode_used", "fallback_reason", "terms",
                 "query_term_count", "pool", "n_fts", "n_vector", "seconds"]


async def retrieve_corpus(
    svc: Any,
    backend: str,
    loaded: LoadedCorpus,
    modes: Sequence[str],
    limit: int,
    progress: Any = None,
) -> tuple[list[dict], list[dict], dict[str, float]]:
    """Retrieve every query of ``loaded.corpus`` in every mode with a pool wide enough
    for ``limit`` (the largest limit of the sweep). Returns candidate rows, query rows,
    and the wall time of each mode's pass over all queries."""
    pool = AdmissionPolicy().pool_size(limit)
    corpus = loaded.corpus
    candidates: list[dict] = []
    queries: list[dict] = []
    seconds: dict[str, float] = {}
    for mode in modes:
        start = time.perf_counter()
        for query in corpus.queries:
            t0 = time.perf_counter()
            retrieval, used, fallback = await svc.retrieve(query.text, loaded.refs(query.memories), limit=limit, mode=mode)
            elapsed = time.perf_counter() - t0
            if used != mode:
                raise RuntimeError(f"{backend}/{corpus.name}: {mode} retrieval ran as {used} ({fallback})")
            chans = retrieval.channels
            queries.append(dict(
                backend=backend, corpus=corpus.name, mode=mode, query_id=query.id, mode_used=used,
                fallback_reason=fallback, terms=tuple(retrieval.terms), query_term_count=len(retrieval.terms),
                pool=pool, n_fts=len(chans.get("fts", ())), n_vector=len(chans.get("vector", ())), seconds=elapsed,
            ))
            for channel in ("fts", "vector"):
                for cand in chans.get(channel, ()):
                    candidates.append(_row(backend, corpus.name, mode, query.id, cand, loaded))
            if progress is not None:
                progress.update(1)
        seconds[mode] = time.perf_counter() - start
    return candidates, queries, seconds


def _row(backend: str, corpus: str, mode: str, query_id: str, c: ChannelCandidate, loaded: LoadedCorpus) -> dict:
    memory = next(name for name, ref in loaded.heads.items() if ref.artifact_id == c.memory_ref.artifact_id)
    return dict(
        backend=backend, corpus=corpus, mode=mode, query_id=query_id, channel=c.channel, rank=c.rank,
        memory=memory, memory_artifact_id=c.memory_ref.artifact_id, memory_revision=c.memory_ref.revision,
        entry_id=c.entry_id, entry_version_id=c.entry_version_id, entry_content_hash=c.entry_content_hash,
        kind=c.kind, text=c.text, corpus_entry=loaded.corpus_id(c.memory_ref.artifact_id, c.entry_id),
        matched_terms=tuple(c.matched_terms), matched=len(c.matched_terms), query_term_count=c.query_term_count,
        coverage=c.coverage, cosine=c.cosine, centred=c.centred, script=c.script, query_script=c.query_script,
        covered=c.covered, pool_rank=c.pool_rank, support=c.support, probability=c.probability,
        calibration_cell=c.calibration_cell,
    )


def candidate(row: Mapping[str, Any]) -> ChannelCandidate:
    """The exact ChannelCandidate a cached row was made from."""
    get = row.get
    cosine, centred, covered, pool_rank = row["cosine"], get("centred"), get("covered"), get("pool_rank")
    support, probability = get("support"), get("probability")
    return ChannelCandidate(
        channel=row["channel"],
        rank=int(row["rank"]),
        memory_ref=ArtifactRef(row["memory_artifact_id"], int(row["memory_revision"])),
        entry_id=row["entry_id"],
        entry_version_id=row["entry_version_id"],
        entry_content_hash=row["entry_content_hash"],
        kind=row["kind"],
        text=row["text"],
        matched_terms=tuple(row["matched_terms"]),
        query_term_count=int(row["query_term_count"]),
        cosine=None if _missing(cosine) else float(cosine),
        centred=None if _missing(centred) else float(centred),
        script=_text_or_none(get("script")),
        query_script=_text_or_none(get("query_script")),
        covered=None if _missing(covered) else bool(covered),
        pool_rank=None if _missing(pool_rank) else int(pool_rank),
        support=None if _missing(support) else float(support),
        probability=None if _missing(probability) else float(probability),
        calibration_cell=_text_or_none(get("calibration_cell")),
    )


def _missing(value: Any) -> bool:
    """``pd.isna`` of one cell as ``records`` gives it (None, NaN or pd.NA), without
    pandas' dispatch: a full sweep rebuilds ~180k candidates, and ``pd.isna`` per field was
    half of that time."""
    return value is None or value is pd.NA or value != value


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as dicts of plain Python values, like
    ``frame.to_dict("records")`` (NaN stays NaN) but one ``tolist()`` per column: a
    sweep's 180k candidate rows took 61 s of the cross-backend comparison grouped and
    converted per query, and take ~1 s this way."""
    columns = list(frame.columns)
    return [dict(zip(columns, values)) for values in zip(*(frame[c].tolist() for c in columns))]


def records_by(frame: pd.DataFrame, keys: Sequence[str]) -> dict[tuple, list[dict[str, Any]]]:
    """``records(frame)`` grouped by the values of ``keys``, groups in order of first
    appearance and rows in frame order (``groupby(keys, sort=False)``'s order)."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for row in records(frame):
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    return groups


def channels_of(rows: pd.DataFrame | Iterable[Mapping[str, Any]], mode: str) -> dict[str, tuple[ChannelCandidate, ...]]:
    """Rebuild a Retrieval's ``channels`` mapping from the cached rows of one query."""
    if isinstance(rows, pd.DataFrame):
        rows = records(rows)
    names = {"fts": ("fts",), "vector": ("vector",), "hybrid": ("fts", "vector")}[mode]
    out: dict[str, list[ChannelCandidate]] = {name: [] for name in names}
    for row in rows:
        out[row["channel"]].append(candidate(row))
    return {name: tuple(sorted(cands, key=lambda c: c.rank)) for name, cands in out.items()}


#: One query's cached rows on one database in one mode, and the channels rebuilt from them.
QueryChannels = tuple[list[dict[str, Any]], dict[str, tuple[ChannelCandidate, ...]]]


def query_channels(candidates: pd.DataFrame) -> dict[tuple[str, str, str], QueryChannels]:
    """(backend, mode, query id) → (its rows, ``channels_of`` them), for every query that
    retrieved anything. Rebuilding ~180k candidates is seconds of a full sweep's analysis,
    and the cross-backend check and the explain table both read every query: built once
    here and handed to both, not once by each."""
    return {key: (rows, channels_of(rows, key[1]))
            for key, rows in records_by(candidates, ["backend", "mode", "query_id"]).items()}


CACHE_DIR = "cache"
#: What a candidate row says about its entry, not about the query: the same for every
#: query that retrieved it, so the cache stores each distinct combination once
#: (``entries.parquet``) and a candidate row its number (``entry``). Per row, these
#: columns were 0.95 of the 2.5 MB of ``sweep --all --backends sqlite``'s candidates.
ENTRY_COLUMNS = ["memory", "memory_artifact_id", "memory_revision", "entry_id", "entry_version_id",
                 "entry_content_hash", "kind", "text", "corpus_entry"]
#: The tables of the cache besides the candidates and the retrievals (collect's meta).
_META_TABLES = ("loads", "exact", "spot", "stages")


def write_cache(folder: Path, candidates: pd.DataFrame, queries: pd.DataFrame, meta: dict) -> None:
    """``folder/cache/``: candidates, retrievals and collect's tables as Parquet (Parquet's
    dictionary encoding stores each repeated id, hash and text once), the rest of
    ``meta`` (fingerprint, embedding facts) as JSON."""
    from ..runfolder import write_table

    cache = private_dir(Path(folder) / CACHE_DIR)
    # groups numbered in order of first appearance, as drop_duplicates keeps them
    number = candidates.groupby(ENTRY_COLUMNS, sort=False, dropna=False).ngroup().astype("int32")
    write_table(candidates[ENTRY_COLUMNS].drop_duplicates().reset_index(drop=True), cache, "entries", csv=False)
    write_table(candidates.drop(columns=ENTRY_COLUMNS).assign(entry=number.to_numpy()), cache, "candidates", csv=False)
    write_table(queries, cache, "retrievals", csv=False)
    spot = meta.get("spot")
    for name in _META_TABLES:
        frame = meta.get(name)
        if frame is None:
            continue
        if name == "spot":  # hits are tuples of mixed fields: one JSON text per search
            frame = frame.assign(hits=[json.dumps(h) for h in spot["hits"]])
        # the exact top lists' cosines are shown, never replayed (HNSW recall reads the ids)
        write_table(frame, cache, name, csv=False, **(dict(split=["exact_cosine"], float32=["exact_cosine"])
                                                      if name == "exact" else {}))
    rest = {k: v for k, v in meta.items() if k not in _META_TABLES}
    write_private_text(cache / "meta.json", json.dumps(rest, indent=1, default=str))
    (Path(folder) / "candidates.pkl").unlink(missing_ok=True)  # a cache of an older version


def read_cache(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict] | None:
    """What ``write_cache`` wrote, or None when ``folder`` holds no cache."""
    from ..runfolder import read_table

    cache = Path(folder) / CACHE_DIR
    if not (cache / "meta.json").is_file():
        return None
    meta = json.loads((cache / "meta.json").read_text(encoding="utf-8"))
    for name in _META_TABLES:
        if (cache / f"{name}.parquet").is_file():
            meta[name] = read_table(cache / f"{name}.parquet")
    if "spot" in meta:
        meta["spot"]["hits"] = [_tuples(json.loads(h)) for h in meta["spot"]["hits"]]
    return read_candidates(folder), read_table(cache / "retrievals.parquet"), meta


def read_candidates(folder: Path) -> pd.DataFrame:
    """The candidates table of ``folder/cache/`` as ``write_cache`` was given it (what a
    replay and the run folder's explain table read)."""
    from ..runfolder import read_table

    cache = Path(folder) / CACHE_DIR
    candidates = read_table(cache / "candidates.parquet")
    if "entry" in candidates.columns:  # each entry's columns stored once (ENTRY_COLUMNS)
        entries = read_table(cache / "entries.parquet").iloc[candidates.pop("entry").to_numpy()].reset_index(drop=True)
        candidates = pd.concat([candidates, entries], axis=1)
        candidates = candidates[[c for c in CANDIDATE_COLUMNS if c in candidates.columns]
                                + [c for c in candidates.columns if c not in CANDIDATE_COLUMNS]]
    candidates["covered"] = [None if v is None or (isinstance(v, float) and pd.isna(v)) else bool(v)
                             for v in candidates["covered"]]
    return candidates


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value
