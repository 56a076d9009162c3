"""Everything that touches a database or the model: embed the corpora once, load each
corpus into a fresh database per backend, retrieve every query in every mode.

The result (``Collected``) is plain tables and is pickled into the run folder, so the
offline part of the harness (sweep, metrics, comparison, report) can be rerun on it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

import re

from powercontext.analyzer import ANALYZER_VERSION
from powercontext.analyzer import get as get_analyzer
from powercontext.canonical import SequentialIds, nfc
from powercontext.errors import EmbeddingNotInstalledError, EmbeddingUnavailableError, PowerContextError
from powercontext.memory.admission import INITIAL_POLICY, NO_ADMISSION, AdmissionPolicy

from .databases import Databases
from ..errors import EvalError
from ..corpora.datasets import Corpus, load
from .embedcache import profile_key
from .loader import load_corpus, text_sequence
from ..progress import current, stage
from .retrieval import CACHE_DIR, read_cache, retrieve_corpus, write_cache

__all__ = ["Collected", "collect", "query_table", "vector_modes"]

VECTOR_MODES = ("vector", "hybrid")
CACHE_VERSION = 9  # 4: the admission families' signals are cached; 6: the full-text pool order (pool_rank);
# 7: questions embedded in the query role; 8: the support signal; 9: the calibrated probability
SPOT_POLICIES = {"initial": INITIAL_POLICY, "no-admission": NO_ADMISSION}
SPOT_LIMIT = 8


def vector_modes(modes: Sequence[str]) -> bool:
    return any(m in VECTOR_MODES for m in modes)


@dataclass
class Collected:
    corpora: list[Corpus]
    backends: tuple[str, ...]
    modes: tuple[str, ...]
    max_limit: int
    candidates: pd.DataFrame  # retrieval.CANDIDATE_COLUMNS
    retrievals: pd.DataFrame  # retrieval.QUERY_COLUMNS
    queries: pd.DataFrame  # one row per labelled query (query_table)
    loads: pd.DataFrame  # backend, corpus, entries, writes, seconds
    exact: pd.DataFrame  # corpus, query_id, exact vector top list (corpus ids), for HNSW recall
    embedding: dict = field(default_factory=dict)  # profile, texts, seconds, cache hits
    spot: pd.DataFrame = field(default_factory=pd.DataFrame)  # online searches to check the replay against
    stages: pd.DataFrame = field(default_factory=pd.DataFrame)  # stage, backend, seconds (wall time)
    server_peak_mib: float | None = None  # peak RSS of the seekdb server the run started (None: none started)
    analyzer: str = ANALYZER_VERSION  # the analyzer every database of the run was created with
    profile_id: str | None = None  # the embedding profile of the run's vectors (None: full text only)
    cache: Path | None = None  # the folder's cache/ that holds these candidates (explain.parquet refers to it)

    @property
    def default_policy(self) -> AdmissionPolicy:
        """The library's shipped default for this run's embedding profile."""
        return AdmissionPolicy.default_for(self.profile_id)

    @property
    def qrels(self) -> dict[str, dict[str, int]]:
        return {q.id: dict(q.judgements) for c in self.corpora for q in c.queries}

    def retrieval_seconds(self) -> pd.DataFrame:
        """Wall time of one retrieval pass over all queries, per backend and mode."""
        return self.retrievals.groupby(["backend", "mode"], as_index=False)["seconds"].sum()


def query_table(corpora: Sequence[Corpus]) -> pd.DataFrame:
    rows = []
    for c in corpora:
        for q in c.queries:
            n_rel = sum(1 for g in q.judgements.values() if g >= 1)
            rows.append(dict(corpus=c.name, query_id=q.id, text=q.text, lang=q.lang, split=q.split, tags=tuple(q.tags),
                             memories=tuple(q.memories), positive=n_rel > 0, n_rel=n_rel))
    return pd.DataFrame(rows)


def check_distinct(corpora: Sequence[Corpus]) -> None:
    """Corpora swept together must not share a name or a query id: every table of a
    run is keyed by them."""
    names: dict[str, Corpus] = {}
    owner: dict[str, str] = {}
    for c in corpora:
        if c.name in names:
            raise EvalError(f"two corpora are named {c.name!r} ({names[c.name].path} and {c.path}): "
                            "give each folder its own name")
        names[c.name] = c
        for q in c.queries:
            if q.id in owner:
                raise EvalError(f"query id {q.id!r} is in both {owner[q.id]} and {c.name}: sweep them separately "
                                "or make their query ids distinct")
            owner[q.id] = c.name


def id_tag(corpus: Corpus) -> str:
    """The tag of the readable service ids minted for ``corpus`` (``mem_ent_<tag>_00001``):
    the bundled id prefix (``atl``) when there is one, else a slug of the corpus name."""
    prefix = corpus.memories[0].id.split("-")[0]
    if re.fullmatch(r"[a-z]{3}", prefix):
        return prefix
    return re.sub(r"[^a-z0-9]+", "", corpus.name.lower())[:16] or "corpus"


def _model(embedding: Any, cache_dir: Any):
    from powercontext.profiles import resolve

    from .embedcache import CachingEmbedding

    try:
        model = resolve(embedding or "minilm")
    except PowerContextError as exc:
        raise EvalError(str(exc)) from exc
    return model if isinstance(model, CachingEmbedding) else CachingEmbedding(model, cache_dir)


def corpus_texts(corpora: Sequence[Corpus]) -> list[str]:
    """Every text the service will embed as a document: each entry text as stored
    (NFC, stripped)."""
    return sorted({nfc(t).strip() for c in corpora for e in c.memories for t in text_sequence(e)})


def corpus_queries(corpora: Sequence[Corpus]) -> list[str]:
    """Every question the service will embed as a query, as given."""
    return sorted({q.text for c in corpora for q in c.queries})


def _exact_top(corpus: Corpus, model, depth: int) -> list[dict]:
    """Exact cosine top-``depth`` over the active entries of the searched memories."""
    active = [e for e in corpus.memories if e.is_active]
    matrix = np.stack([model.vector(nfc(e.text).strip()) for e in active]).astype(np.float64)
    memory = np.array([e.memory for e in active])
    rows = []
    for q in corpus.queries:
        sims = matrix @ model.vector(q.text, "query").astype(np.float64)
        sims = np.where(np.isin(memory, q.memories), sims, -np.inf)
        order = np.argsort(-sims, kind="stable")[: min(depth, int(np.isfinite(sims).sum()))]
        rows.append(dict(corpus=corpus.name, query_id=q.id, exact=tuple(active[i].id for i in order),
                         exact_cosine=tuple(float(sims[i]) for i in order)))
    return rows


async def collect(
    datasets: Sequence[str | Path],
    backends: Sequence[str] = ("sqlite",),
    modes: Sequence[str] = ("fts",),
    out: str | Path = "results/run",
    max_limit: int = 10,
    embedding: Any = None,
    embedding_cache: str | Path | None = None,
    seekdb_dir: str | Path | None = None,
    keep_databases: bool = False,
    reuse: bool = False,
    progress: bool = True,
    spot_queries: int = 20,
    style: str = "any",
    split_seed: int = 0,
    analyzer: str | None = None,
    compact: bool = False,
) -> Collected:
    """Load, embed and retrieve. With ``reuse`` a matching ``candidates.pkl`` in
    ``out`` is read instead of touching any database. ``style`` and ``split_seed``
    go to ``datasets.load`` (which validates and completes missing splits); every
    database is created with ``analyzer`` (default: a new database's, v2). With
    ``compact`` each corpus's database gets ``svc.maintain()`` between its load and
    its retrieval (OceanBase compacts the server: ~1–2 minutes a corpus; the stage
    "compact" times it)."""
    out = Path(out)
    try:
        analyzer = get_analyzer(analyzer).version
    except PowerContextError as exc:
        raise EvalError(str(exc)) from exc
    stages: list[dict] = []
    clock = time.perf_counter()
    corpora = [load(p, style=style, split_seed=split_seed) for p in datasets]
    check_distinct(corpora)
    stages.append(dict(stage="validate", backend="", seconds=time.perf_counter() - clock))
    model = _model(embedding, embedding_cache) if vector_modes(modes) else None
    profile_id = None if model is None else model.profile.profile_id
    fingerprint = dict(version=CACHE_VERSION, corpora={c.name: _digest(c) for c in corpora}, backends=list(backends),
                       modes=list(modes), max_limit=max_limit, spot=spot_queries, split_seed=split_seed,
                       analyzer=analyzer, embedding=None if model is None else profile_key(model.profile))
    if reuse:
        cached = read_cache(out)
        if cached is not None and cached[2].get("fingerprint") == fingerprint:
            candidates, retrievals, meta = cached
            for kind in ("embed", *backends):  # no model, no database: those stages have nothing to do
                _skip(kind)
            return Collected(corpora, tuple(backends), tuple(modes), max_limit, candidates, retrievals,
                             query_table(corpora), meta["loads"], meta["exact"], meta["embedding"], meta["spot"],
                             meta.get("stages", pd.DataFrame()), analyzer=analyzer, profile_id=profile_id,
                             cache=out / CACHE_DIR)

    embedding_stats: dict = {}
    exact_rows: list[dict] = []
    if model is not None:
        start = time.perf_counter()
        texts, questions = corpus_texts(corpora), corpus_queries(corpora)
        todo = len(model.missing(texts)) + len(model.missing(questions, "query"))
        try:
            # No stage at all when every text is cached: a 0-text stage only looks like a stall.
            if todo:
                with stage("embed", todo, progress) as embed_stage:
                    n = await model.prefetch(texts, progress=embed_stage, queries=questions)
            else:
                _skip("embed")
                n = await model.prefetch(texts, queries=questions)
        except EmbeddingNotInstalledError as exc:
            raise EvalError(f"the embedding model is unavailable: {exc}. Install it (pip install "
                            "'powercontext[embed]') or run with --modes fts") from exc
        except EmbeddingUnavailableError as exc:  # a broken folder: no install repairs it
            raise EvalError(f"the embedding model is unavailable: {exc}; or run with --modes fts") from exc
        embedding_stats = dict(profile=model.profile.profile_id, model=model.name, texts=len(texts) + len(questions),
                               embedded=n,
                               seconds=time.perf_counter() - start, model_seconds=model.embed_seconds,
                               cache=str(model.path))
        for c in corpora:
            exact_rows += _exact_top(c, model, AdmissionPolicy().pool_size(max_limit))
        stages.append(dict(stage="embed", backend="", seconds=time.perf_counter() - start))

    candidates: list[dict] = []
    retrievals: list[dict] = []
    loads: list[dict] = []
    spot_rows: list[dict] = []
    writes = sum(len(text_sequence(e)) + (not e.is_active) for c in corpora for e in c.memories)
    queries = sum(len(c.queries) for c in corpora) * len(modes)
    for backend in backends:  # one stage per database: its corpora loaded, then searched
        _expect(backend, writes + queries)
    with Databases(out, seekdb_dir=seekdb_dir, keep=keep_databases) as dbs:
        for backend in backends:
            seconds = {"load": 0.0, "retrieve": 0.0, "spot check": 0.0}
            if compact:
                seconds["compact"] = 0.0
            with stage(backend, writes + queries, progress) as db_stage:
                for corpus in corpora:
                    db_stage.step(f"load {corpus.name}")
                    start = time.perf_counter()
                    svc = await dbs.open(backend, corpus.name, embedding=model, ids=SequentialIds(id_tag(corpus)),
                                         analyzer=analyzer)
                    try:
                        loaded = await load_corpus(svc, corpus, progress=db_stage)
                        loads.append(dict(backend=backend, corpus=corpus.name, entries=len(corpus.memories),
                                          writes=loaded.writes, seconds=loaded.seconds))
                        seconds["load"] += time.perf_counter() - start
                        if compact:
                            start = time.perf_counter()
                            db_stage.step(f"compact {corpus.name}")
                            await svc.maintain()
                            seconds["compact"] += time.perf_counter() - start
                        start = time.perf_counter()
                        db_stage.step(f"retrieve {corpus.name}")
                        c_rows, q_rows, _ = await retrieve_corpus(svc, backend, loaded, modes, max_limit, db_stage)
                        candidates += c_rows
                        retrievals += q_rows
                        seconds["retrieve"] += time.perf_counter() - start
                        start = time.perf_counter()
                        db_stage.step(f"spot check {corpus.name}")
                        spot_rows += await spot_searches(svc, backend, loaded, modes, spot_queries)
                        seconds["spot check"] += time.perf_counter() - start
                    finally:
                        await svc.close()
            stages += [dict(stage=stage, backend=backend, seconds=t) for stage, t in seconds.items()]
    server_peak = dbs.server_peak_mib
    if model is not None:
        model.save()
        embedding_stats.update(hits=model.hits, misses=model.misses)
    from .retrieval import CANDIDATE_COLUMNS, QUERY_COLUMNS

    cand_df = pd.DataFrame(candidates, columns=CANDIDATE_COLUMNS)
    retr_df = pd.DataFrame(retrievals, columns=QUERY_COLUMNS)
    loads_df = pd.DataFrame(loads, columns=["backend", "corpus", "entries", "writes", "seconds"])
    exact_df = pd.DataFrame(exact_rows, columns=["corpus", "query_id", "exact", "exact_cosine"])
    spot_df = pd.DataFrame(spot_rows, columns=["backend", "corpus", "mode", "policy", "limit", "query_id", "hits"])
    stages_df = pd.DataFrame(stages, columns=["stage", "backend", "seconds"])
    write_cache(out, cand_df, retr_df, dict(fingerprint=fingerprint, loads=loads_df, exact=exact_df,
                                            embedding=embedding_stats, spot=spot_df, stages=stages_df))
    return Collected(corpora, tuple(backends), tuple(modes), max_limit, cand_df, retr_df, query_table(corpora),
                     loads_df, exact_df, embedding_stats, spot_df, stages_df, server_peak, analyzer, profile_id,
                     cache=out / CACHE_DIR)


def _expect(kind: str, units: float) -> None:
    run = current()
    if run is not None:
        run.expect(kind, units)


def _skip(kind: str) -> None:
    run = current()
    if run is not None:
        run.skip(kind)


def hit_key(hit) -> tuple:
    """What the spot check compares: identity, score (exact float) and channels."""
    return (hit.memory_ref.artifact_id, hit.entry_id, hit.entry_version_id, hit.score, tuple(hit.matched_by))


async def spot_searches(svc, backend: str, loaded, modes: Sequence[str], n: int) -> list[dict]:
    """Online ``svc.search`` results for a spread of queries, to check the offline
    replay against on real data (the report's "online spot check")."""
    queries = loaded.corpus.queries
    sample = queries[:: max(1, len(queries) // n)][:n] if n > 0 else ()
    rows = []
    for mode in modes:
        for name, policy in SPOT_POLICIES.items():
            for q in sample:
                result = await svc.search(q.text, loaded.refs(q.memories), limit=SPOT_LIMIT, mode=mode, policy=policy)
                rows.append(dict(backend=backend, corpus=loaded.corpus.name, mode=mode, policy=name, limit=SPOT_LIMIT,
                                 query_id=q.id, hits=tuple(hit_key(h) for h in result.hits)))
    return rows


def _digest(corpus: Corpus) -> str:
    import hashlib

    h = hashlib.sha256()
    for name in ("memories.jsonl", "queries.jsonl", "qrels.trec"):
        h.update((corpus.path / name).read_bytes())
    return h.hexdigest()[:16]
