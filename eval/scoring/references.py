"""Peers' defaults as named reference policies: what a user gets who does not tune.

A researcher comparing this library with another memory library rarely compares tuned
systems: they compare defaults. Each ``Reference`` below records one library's
documented default relevance cutoff — the value, what it thresholds, where it is
written — and the nearest ``AdmissionPolicy`` of this project, so the harness can
replay it on the same candidates as every swept policy and show where it lands on the
nDCG@10 / false-admission frontier (``peers.peers_frame``, the report's "Peers'
defaults" section, the ThresholdTuner's named points).

How a default maps:

* no cutoff, top-k (most libraries): ``NO_ADMISSION`` at that k — everything the
  channel retrieves is admitted, so any question with no answer is answered anyway;
* a minimum cosine similarity: ``vector_min_cosine`` at that value, after converting
  the library's score to a raw cosine (Neo4j's ``vector.similarity.cosine`` returns
  (1 + cos) / 2; LangChain's relevance score on a squared-L2 Chroma collection is
  1 − d/√2 with d = 2 − 2 cos for unit vectors);
* a hybrid of BM25 and a cosine floor fused by reciprocal rank: the FTS channel with
  no floor (one matched term), the cosine floor, and the library's RRF constant in
  this project's formula (1/(k + rank), rank from 1).

A reference applies in the modes where the library retrieves the same way
(``modes``): a vector-store retriever has no full-text channel, so it is placed on
the vector frontier only. ``limit`` is the library's own top-k; the harness caps it at
the largest limit it retrieved for (``SweepResult.peers`` says when it did).

Cosine thresholds are model-specific: each library chose its value for the model it
ships with (mostly OpenAI's text-embedding models, whose related pairs score far higher
than all-MiniLM-L6-v2's and lower than multilingual-e5-small's), so the same cutoff
admits very different sets under each embedding profile. The harness therefore shows
the peers under every profile it sweeps. Sources were read on the date in
``LOOKED_UP``; ``reports/thresholds/peers.md`` cites each one.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from powercontext.memory.admission import NO_ADMISSION, AdmissionPolicy

__all__ = ["BASES", "LOOKED_UP", "REFERENCES", "Reference", "reference", "references_frame"]

#: When the sources below were read (their text can change in later releases).
LOOKED_UP = "2026-12-05"
#: ``basis``: a default a user gets by not passing the argument, or a value the
#: library's own documentation uses where the argument has no default.
BASES = ("default", "documented example")
MAPPINGS = ("exact", "approximate")
_MODES = ("fts", "vector", "hybrid")


@dataclass(frozen=True)
class Reference:
    """One peer library's default as a named point of comparison.

    ``name``: the short name tables use; ``library``: the library and API; ``version``:
    the release or commit read; ``source``: where the value is written (URL, or
    repository and path); ``default``: the documented call and value; ``basis``: one of
    ``BASES``; ``thresholds``: what the value thresholds, in the library's terms;
    ``policy``: the nearest AdmissionPolicy; ``limit``: the library's top-k (None: the
    run's limit); ``modes``: where the mapping holds; ``mapping``: ``exact`` (same
    admitted set and order on the same candidates) or ``approximate``; ``note``: what
    the mapping leaves out."""

    name: str
    library: str
    version: str
    source: str
    default: str
    basis: str
    thresholds: str
    policy: AdmissionPolicy
    limit: int | None
    modes: tuple[str, ...]
    mapping: str
    note: str

    def __post_init__(self) -> None:
        if not isinstance(self.policy, AdmissionPolicy):
            raise TypeError(f"{self.name}: policy must be an AdmissionPolicy")
        if self.basis not in BASES or self.mapping not in MAPPINGS:
            raise ValueError(f"{self.name}: basis must be one of {BASES}, mapping one of {MAPPINGS}")
        if not self.modes or any(m not in _MODES for m in self.modes):
            raise ValueError(f"{self.name}: modes must be a non-empty subset of {_MODES}")
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 1):
            raise ValueError(f"{self.name}: limit must be None or an integer ≥ 1")
        if not all((self.name, self.library, self.version, self.source, self.default, self.thresholds, self.note)):
            raise ValueError(f"{self.name}: every descriptive field must be filled in")

    def limit_in(self, run_limit: int) -> int:
        """The top-k this reference is replayed at in a run whose own limit is ``run_limit``."""
        return run_limit if self.limit is None else self.limit


def _cosine_floor(cosine: float, **options) -> AdmissionPolicy:
    """A raw-cosine floor on the vector channel and no FTS floor beyond one term (the
    FTS rule only matters for the hybrid references)."""
    return AdmissionPolicy.floors(1, 0.0, cosine, **options)


#: The references, in the order tables list them: the RFC's constants first, then the
#: libraries alphabetically, each default before its documented example.
REFERENCES: tuple[Reference, ...] = (
    Reference(
        name="rfc-initial", library="PowerContext Memory RFC (seed 000)", version="RFC initial constants",
        source="the Memory RFC (shared/seeds/000_*.txt, relevance admission: fixed baselines); values in "
               "powercontext.memory.admission.AdmissionPolicy.rfc_initial()",
        default="FTS: 2 matched terms / coverage 0.25; vector: cosine ≥ 0.30", basis="default",
        thresholds="matched analyzer terms and their share of the query (FTS); raw cosine similarity (vector)",
        policy=AdmissionPolicy.rfc_initial(), limit=None, modes=_MODES, mapping="exact",
        note="The upstream constants this project started from; replayed at the run's own limit."),
    Reference(
        name="chroma", library="Chroma (chromadb) Collection.query", version="docs read " + LOOKED_UP,
        source="https://docs.trychroma.com/docs/querying-collections/query-and-get",
        default="collection.query(query_texts=..., n_results=10)", basis="default",
        thresholds="nothing: n_results nearest neighbours by distance (squared L2 by default)",
        policy=NO_ADMISSION, limit=10, modes=("vector",), mapping="exact",
        note="No cutoff: every query gets its 10 nearest entries. (Chroma's default 'l2' space is SQUARED L2: "
             "d = 2 − 2·cos for unit vectors, so cos = 1 − d/2, not 1 − d²/2.)"),
    Reference(
        name="cognee", library="Cognee cognee.search (SearchType.CHUNKS)",
        version="topoteretes/cognee @ 011b618 (api) / 0d8dd43 (ChunksRetriever)",
        source="https://github.com/topoteretes/cognee/blob/main/cognee/api/v1/search/search.py; "
               "cognee/modules/retrieval/chunks_retriever.py",
        default="cognee.search(query_text, top_k=10); CHUNKS: vector_engine.search(limit=top_k)", basis="default",
        thresholds="nothing: top_k chunks by vector distance",
        policy=NO_ADMISSION, limit=10, modes=("vector",), mapping="approximate",
        note="The default search type (GRAPH_COMPLETION) answers with an LLM over graph context; CHUNKS is its plain "
             "retrieval, the comparable one. No cutoff."),
    Reference(
        name="graphiti", library="Graphiti (Zep's open-source core), hybrid edge/node search",
        version="getzep/graphiti @ 0012b9a",
        source="https://github.com/getzep/graphiti/blob/main/graphiti_core/search/search_utils.py "
               "(DEFAULT_MIN_SCORE = 0.6, rrf(rank_const=1)); search_config.py (limit 10)",
        default="semantic leg: vector.similarity.cosine(...) > min_score=0.6; BM25 leg: no cutoff; RRF; limit 10",
        basis="default",
        thresholds="Neo4j's normalised cosine (1 + cos) / 2 > 0.6, i.e. raw cosine > 0.2, on the semantic leg only",
        policy=_cosine_floor(0.2, rrf_k=0), limit=10, modes=("vector", "hybrid"), mapping="approximate",
        note="Neo4j's vector.similarity.cosine returns (1 + cos)/2 (Neo4j Cypher manual, vector functions), so 0.6 is "
             "a raw cosine of 0.2 (strict >; ≥ here). BM25 has no floor: the FTS channel admits any match. Graphiti's "
             "rrf adds 1/(i + 1) for 0-based i: rrf_k=0 in this project's 1/(k + rank). Graphiti searches extracted "
             "facts and entities, not raw entries, and drops full-text queries of 32+ words."),
    Reference(
        name="haystack", library="Haystack InMemoryEmbeddingRetriever", version="haystack-ai 2.x, docs read " + LOOKED_UP,
        source="https://docs.haystack.deepset.ai/docs/inmemoryembeddingretriever; "
               "haystack/components/retrievers/in_memory/embedding_retriever.py",
        default="InMemoryEmbeddingRetriever(document_store, top_k=10, scale_score=False)", basis="default",
        thresholds="nothing: top_k documents by embedding similarity",
        policy=NO_ADMISSION, limit=10, modes=("vector",), mapping="exact", note="No cutoff."),
    Reference(
        name="langchain", library="LangChain VectorStore.as_retriever()", version="langchain-core @ 026de90",
        source="https://github.com/langchain-ai/langchain/blob/master/libs/core/langchain_core/vectorstores/base.py "
               "(as_retriever, VectorStoreRetriever)",
        default="as_retriever(): search_type='similarity', search_kwargs k=4", basis="default",
        thresholds="nothing: the k most similar documents",
        policy=NO_ADMISSION, limit=4, modes=("vector",), mapping="exact", note="No cutoff."),
    Reference(
        name="langchain-threshold", library="LangChain as_retriever(search_type='similarity_score_threshold')",
        version="langchain-core @ 026de90",
        source="https://github.com/langchain-ai/langchain/blob/master/libs/core/langchain_core/vectorstores/base.py "
               "(as_retriever docstring example; similarity_search_with_relevance_scores)",
        default="search_kwargs score_threshold=0.8 (score_threshold has no default: the retriever refuses to "
                "start without one; 0.8 is the docstring's example), k=4",
        basis="documented example",
        thresholds="relevance score in [0, 1] from the store's distance: 1 − cosine distance = cosine on a cosine "
                   "store",
        policy=_cosine_floor(0.8), limit=4, modes=("vector",), mapping="exact",
        note="Exact on a cosine-space store. On langchain-chroma's default squared-L2 space the relevance is "
             "1 − d/√2 with d = 2 − 2·cos, so 0.8 means cos ≥ 0.859 there."),
    Reference(
        name="langmem", library="LangMem create_search_memory_tool (LangGraph store search)",
        version="langchain-ai/langmem @ 31527de",
        source="https://github.com/langchain-ai/langmem/blob/main/src/langmem/knowledge/tools.py",
        default="search_memory(query, limit=10, offset=0) → store.asearch(namespace, query=..., limit=10)",
        basis="default", thresholds="nothing: the limit most similar items",
        policy=NO_ADMISSION, limit=10, modes=("vector",), mapping="exact", note="No cutoff."),
    Reference(
        name="letta", library="Letta (MemGPT) archival_memory_search",
        version="letta-ai/letta @ 0f6f52c",
        source="https://github.com/letta-ai/letta/blob/main/letta/functions/function_sets/base.py",
        default="archival_memory_search(query, top_k=None → 10)", basis="default",
        thresholds="nothing: top_k passages ranked by semantic similarity",
        policy=NO_ADMISSION, limit=10, modes=("vector",), mapping="exact",
        note="No cutoff; the agent decides what to use from the 10 passages."),
    Reference(
        name="llamaindex", library="LlamaIndex VectorStoreIndex.as_retriever()",
        version="llama-index-core @ 1d8353e (constants) / 003ac67 (postprocessor)",
        source="https://github.com/run-llama/llama_index/blob/main/llama-index-core/llama_index/core/constants.py "
               "(DEFAULT_SIMILARITY_TOP_K = 2); core/postprocessor/node.py (similarity_cutoff default None)",
        default="similarity_top_k=2; SimilarityPostprocessor(similarity_cutoff=None)", basis="default",
        thresholds="nothing: the 2 most similar nodes (no postprocessor cutoff by default)",
        policy=NO_ADMISSION, limit=2, modes=("vector",), mapping="exact", note="No cutoff, and only two hits."),
    Reference(
        name="llamaindex-cutoff", library="LlamaIndex SimilarityPostprocessor(similarity_cutoff=...)",
        version="docs read " + LOOKED_UP,
        source="https://developers.llamaindex.ai/python/framework/module_guides/querying/node_postprocessors",
        default="SimilarityPostprocessor(similarity_cutoff=0.75) (the guide's example), similarity_top_k=2",
        basis="documented example",
        thresholds="node score ≥ cutoff: cosine similarity for the default in-memory vector store",
        policy=_cosine_floor(0.75), limit=2, modes=("vector",), mapping="exact",
        note="Exact for the default SimpleVectorStore (cosine). Stores that score by distance make the same number "
             "mean something else."),
    Reference(
        name="mem0", library="mem0 (open source) Memory.search",
        version="mem0ai/mem0 @ 005c56d (memory/main.py) / 01fcd26 (utils/scoring.py)",
        source="https://github.com/mem0ai/mem0/blob/main/mem0/memory/main.py (Memory.search, _search_vector_store); "
               "mem0/utils/scoring.py (score_and_rank); mem0/vector_stores/qdrant.py (Distance.COSINE)",
        default="search(query, top_k=20, threshold=0.1)", basis="default",
        thresholds="the semantic score before any BM25/entity boost: cosine similarity on mem0's default Qdrant "
                   "collection",
        policy=_cosine_floor(0.1), limit=20, modes=("vector",), mapping="approximate",
        note="The admitted set is exact (the threshold gates the semantic score alone); the order is not where the "
             "store supports keyword search: mem0 then re-scores additively with a sigmoid-normalised BM25 and "
             "entity boosts. Earlier releases (0.1.x) had limit=100 and threshold=None: no cutoff."),
    Reference(
        name="txtai", library="txtai Embeddings.search", version="neuml/txtai, read " + LOOKED_UP,
        source="https://github.com/neuml/txtai/blob/master/src/python/txtai/embeddings/search/base.py "
               "(limit = limit if limit else 3; dense(): score > 0)",
        default="embeddings.search(query) → limit 3", basis="default",
        thresholds="dense scores must be > 0 (inner product of normalised vectors = cosine)",
        policy=_cosine_floor(0.0), limit=3, modes=("vector",), mapping="approximate",
        note="cosine > 0 (strict) becomes ≥ 0; a hybrid (sparse + dense) index fuses by convex combination or RRF, "
             "not modelled."),
)


def reference(name: str) -> Reference:
    """The reference called ``name``."""
    for ref in REFERENCES:
        if ref.name == name:
            return ref
    raise KeyError(f"no reference policy {name!r}; known: {', '.join(r.name for r in REFERENCES)}")


def references_frame(references: tuple[Reference, ...] = REFERENCES) -> pd.DataFrame:
    """The peers table: one row per reference with its source, value, what it
    thresholds, the mapped policy (``repr``) and the mapping's notes."""
    return pd.DataFrame([dict(name=r.name, library=r.library, version=r.version, default=r.default, basis=r.basis,
                              thresholds=r.thresholds, limit=r.limit, modes=" ".join(r.modes), mapping=r.mapping,
                              policy=repr(r.policy), source=r.source, note=r.note) for r in references])
