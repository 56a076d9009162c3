"""Search inside one read transaction: confirm the selected heads, run each channel's
query, keep only candidates the authoritative head manifest confirms (active, exact
version, canonical bytes hashing to the manifest's hash), and re-check the heads after
the queries. Also the vector-projection completeness rule and its per-head cache."""

from __future__ import annotations

from collections import Counter
from itertools import chain
from typing import Any, Iterable

from .. import analyzer
from ..embedding import check_vector
from ..errors import (
    ArtifactNotFoundError,
    CapabilityNotSupportedError,
    NotHeadError,
)
from ..model import (
    ArtifactRef,
    ChannelCandidate,
)



from .plans import Retrieval, RetrievalRequest
from . import centroid
from .specificity import held_share, term_weights
from .caches import ByteLRU
from .rules import cosine_from_l2

SEARCH_HEAD_RETRIES = 3
# Full-text rows read for a pool. FTS5's bm25 and OceanBase's MATCH score differ, so
# their top ``pool`` rows differ once more rows match than the pool holds; the pool is
# chosen from a deeper read by a rule both databases compute alike (fts_pool). Measured
# on the bundled corpora (691 queries, Analyzer v2, pool 32): the databases' admitted
# sets differ for 5 queries reading 1× the pool, 2 at 2×, none at 3× or 4×. The depth
# is the same for every pool up to FTS_MIN_DEPTH / FTS_OVERFETCH (64: limits up to 16),
# so a smaller pool is exactly the first rows of a larger one in pool order — what lets
# the harness replay every limit from one retrieval (admission.within_pool).
FTS_OVERFETCH = 4
FTS_MIN_DEPTH = 256
# Candidates' scripts, keyed by their stored text (~200 bytes each at the bundled sizes).
SCRIPT_CACHE_BYTES = 4 * 2**20


def fts_fetch_size(pool: int) -> int:
    """How many full-text rows a search reads for a pool of ``pool``."""
    return max(FTS_MIN_DEPTH, pool * FTS_OVERFETCH)


def fts_pool(rows: list[tuple[Any, ...]], terms: tuple[str, ...], pool: int,
             df: Counter | None = None) -> list[tuple[tuple[Any, ...], int, tuple[str, ...]]]:
    """The full-text pool both databases agree on, from rows in the engine's order
    (``…, searchable_text`` at index 4): the ``pool`` rows matching the most distinct
    query terms, then the shortest (fewest stored tokens), then by (memory, entry).
    Admission counts matched terms, so this keeps every row it could admit while it
    fits. Returns (row, pool_rank, matched terms in query order) in the engine's
    relevance order (the channel's ranks): the one place that decides which query terms
    a stored text holds. ``df``, if given, gains each query term's count of rows holding
    it, over every row read (``specificity``'s document frequencies)."""
    # searchable_text is tokens joined by single spaces (analyzer.searchable_text): one
    # split per row and a C-level set intersection count the distinct terms it holds
    # (27 % faster on 256 rows than a substring scan per term, measured at 1k entries).
    wanted = frozenset(terms)
    held: list[frozenset[str]] = []
    keys: list[tuple[int, int, str, str, int]] = []
    for i, row in enumerate(rows):
        tokens = row[4].split(" ")
        held.append(found := wanted.intersection(tokens))
        keys.append((-len(found), len(tokens), row[0], row[1], i))  # i: equal keys keep the engine's order
    if df is not None:
        df.update(chain.from_iterable(held))  # one C-level count, not one update per row
    keys.sort()
    place = {key[4]: r for r, key in enumerate(keys[:pool])}
    return [(rows[i], place[i], tuple(t for t in terms if t in held[i])) for i in sorted(place)]


def _check_head(ref: ArtifactRef, head: int | None, moved: bool = False) -> None:
    """The one rule a search applies to each selected Revision: its Memory exists and
    ``ref`` is its head. ``moved``: the head changed during this search (a retry)."""
    if head is None:
        raise ArtifactNotFoundError(f"no Memory {ref.artifact_id!r} in this database")
    if head != ref.revision and not moved:
        raise NotHeadError(f"{ref} is not the head (Revision {head}); search reads current heads only: "
                           "pass svc.head(...) or the latest Revision")
    if head != ref.revision:
        raise NotHeadError(f"{ref} is no longer the head (now Revision {head}); search the current head")


class AuthoritativeRetrieval:
    """Mixin of DatabaseMemoryBackend: retrieval and vector completeness."""

    def _init_retrieval(self) -> None:
        self.script_cache = ByteLRU(SCRIPT_CACHE_BYTES)
        self._means: dict[tuple[tuple[ArtifactRef, ...], int], tuple[float, ...] | None] = {}

    def _retrieve_sync(self, request: RetrievalRequest) -> Retrieval:
        last_error: Exception | None = None
        for attempt in range(SEARCH_HEAD_RETRIES):
            try:
                return self._retrieve_once(request, attempt)
            except _HeadMoved as exc:  # a concurrent commit between our reads
                last_error = exc
        raise NotHeadError(f"the selected Memory kept moving during the search: {last_error}")

    def _retrieve_once(self, request: RetrievalRequest, attempt: int = 0) -> Retrieval:
        """The head check here is the search's only one (the service does not read the
        head first: one transaction per search)."""
        with self._transaction(write=False) as tx:
            heads, schema = self._search_state(tx, [r.artifact_id for r in request.memories])
            for ref in request.memories:
                _check_head(ref, heads.get(ref.artifact_id), moved=attempt > 0)
            ids = [r.artifact_id for r in request.memories]
            self._check_analyzer_record(schema.get("analyzer"))  # stored tokens and query terms from one analyzer
            self._check_profile_record(schema.get("embedding_profile"))  # stored and query vectors from one model
            generation = int(schema.get("projection_generation") or 0)
            raw: dict[str, list[tuple[Any, ...]]] = {}
            pooled: list[tuple[tuple[Any, ...], int, tuple[str, ...]]] = []
            df: Counter | None = None
            query_dot_centroid = None
            vector = "vector" in request.channels
            if vector:
                if request.query_vector is None or self.embedding_profile is None:
                    raise CapabilityNotSupportedError("vector retrieval needs a vector projection and a query vector")
                check_vector(request.query_vector, self.embedding_profile)
                for ref in request.memories:  # reconfirmed in the query transaction
                    if not self._projection_present(tx, ref, generation):
                        # At READ COMMITTED the rows read may be a newer head's: a head
                        # that moved is the race (retried, then NotHeadError), not a
                        # projection to rebuild.
                        if self._read_head(tx, ref.artifact_id) != ref.revision:
                            self._forget_completeness(ref)
                            raise _HeadMoved(f"{ref} stopped being the head")
                        raise CapabilityNotSupportedError(
                            f"the vector projection of {ref} is incomplete; run rebuild_projections()"
                        )
            # The two channel queries back to back, the Python on their rows after: run
            # between them it made the second one slower (caches), ~0.3 ms at 1k entries.
            fts_rows, vector_rows = self._channel_rows(
                tx, ids, request.terms if "fts" in request.channels and request.terms else None,
                request.query_vector if vector else None, request.pool, (heads, schema))
            if fts_rows is not None:
                df = Counter()
                pooled = fts_pool(fts_rows, request.terms, request.pool, df)
                raw["fts"] = [row for row, _, _ in pooled]
            elif "fts" in request.channels:
                raw["fts"] = []
            if vector_rows is not None:
                raw["vector"] = vector_rows
                mean = self._centroid_of(tx, request.memories, generation)
                if mean is not None:
                    query_dot_centroid = centroid.dot(request.query_vector, mean)
            # The head must not have moved while the channel queries ran (READ
            # COMMITTED databases see each statement's own snapshot); the same statement
            # re-reads the head Revisions' rows, compared with the verified Revisions
            # cached for them. Those are the manifests the candidates are checked
            # against exactly, and a candidate's text comes from its version row hashed
            # against the manifest; chunks are not re-read per search (revision_store.py:
            # reads that return manifest content re-check theirs).
            after, revision_rows = self._heads_and_revisions(tx, request.memories)
            if after != heads:
                raise _HeadMoved(f"heads {heads} became {after}")
            manifests = {r.artifact_id: self._cached_revision_of_row(tx, r, revision_rows[r], "root")
                         for r in request.memories}
            # the support signal's term weights, once per search, from the document
            # frequencies only a search that read the full-text rows has
            specific = None if df is None else term_weights(
                request.terms, df, sum(m.active_count for m in manifests.values()))
            channels = {name: self._authoritative(tx, name, rows, manifests, request, query_dot_centroid,
                                                  pooled if name == "fts" else None, specific)
                        for name, rows in raw.items()}
        return Retrieval(memories=request.memories, terms=request.terms, channels=channels)

    def _channel_rows(self, tx, ids, terms, query_vector, pool, state=None):
        """(full-text rows or None, vector rows or None) of the selected Memories, read
        in this transaction one after the other. ``terms`` None: no full-text read;
        ``query_vector`` None: no vector read; ``state``: ``_search_state`` as this
        transaction read it (a backend reading on another connection compares). What the rows say is checked afterwards
        (the heads re-read, each candidate against the verified manifest), so a backend
        may read a channel on another connection (oceanbase/search.py)."""
        fts_rows = None if terms is None else self._fts_query(tx, ids, terms, fts_fetch_size(pool))
        vector_rows = None if query_vector is None else self._vector_query(tx, ids, query_vector, pool)
        return fts_rows, vector_rows

    def _authoritative(self, tx, channel, rows, manifests, request, query_dot_centroid=None,
                       pooled=None, specific=None) -> tuple[ChannelCandidate, ...]:
        """Keep only rows that the authoritative head manifest confirms: same entry,
        active, exact version, and a version row whose canonical bytes hash to the
        manifest's hash. Candidate text comes from the version row, not the index.
        ``pooled``: fts_pool's (row, pool_rank, matched terms) of the full-text rows;
        ``specific``: ``term_weights`` of the query for ``support`` (None: not measured)."""
        refs = {r.artifact_id: r for r in request.memories}
        versions = self._hashed_versions(tx, [row[2] for row in rows], reread=False)
        out: list[ChannelCandidate] = []
        fts = channel == "fts"
        text_at = 4 if fts else 5  # fts: (…, searchable_text); vector: (…, distance, searchable_text)
        query_script = request.query_script
        profile = self.embedding_profile
        query_covered = not fts and query_script is not None and profile.covers(query_script)
        wanted = frozenset(request.terms)
        scripts = self._scripts_of([row[text_at] for row in rows])
        for index, row in enumerate(rows):
            memory_id, entry_id, version_id, content_hash, signal = row[:5]
            manifest = manifests.get(memory_id)
            item = None if manifest is None else manifest.item(entry_id)
            if (item is None or item.state != "active" or item.entry_version_id != version_id
                    or item.entry_content_hash != content_hash):
                continue
            version, version_hash = versions.get(version_id, (None, None))
            if (version is None or version.entry_id != entry_id or version.memory_artifact_id != memory_id
                    or version_hash != content_hash):
                continue
            stored_text = row[text_at]
            script = scripts[stored_text]
            if fts:
                _, pool_rank, matched = pooled[index]
                out.append(ChannelCandidate(
                    channel, len(out) + 1, refs[memory_id], entry_id, version_id, content_hash, version.kind,
                    version.text, matched_terms=matched, query_term_count=len(request.terms), script=script,
                    query_script=query_script, pool_rank=pool_rank,
                    support=held_share(matched, specific),
                ))
            else:
                cosine = cosine_from_l2(float(signal))
                held = None if specific is None else wanted.intersection(stored_text.split(" "))
                out.append(ChannelCandidate(
                    channel, len(out) + 1, refs[memory_id], entry_id, version_id, content_hash, version.kind,
                    version.text, cosine=cosine,
                    centred=None if query_dot_centroid is None else cosine - query_dot_centroid,
                    script=script, query_script=query_script,
                    covered=None if query_script is None else query_covered and profile.covers(script),
                    support=None if held is None else held_share(held, specific),
                ))
        return tuple(out)

    def _scripts_of(self, searchable_texts: list[str]) -> dict[str, str]:
        """``analyzer.script_of_stored`` of each stored searchable_text — the entry's
        script as its stored analyzer tokens show it, no re-analysis of candidate texts
        on the search path — cached by that exact text (a function of it alone): a
        hybrid search asks it of ~64 candidates, which cost more than the vector query
        at 1k entries."""
        scripts = self.script_cache.get_many(searchable_texts)
        for text in searchable_texts:
            if text not in scripts:
                scripts[text] = analyzer.script_of_stored(text)
                self.script_cache.put(text, scripts[text], 2 * len(text) + 120)
        return scripts

    # ---------------------------------------------------------------- vectors

    def _vector_complete_sync(self, refs: tuple[ArtifactRef, ...]) -> bool:
        """Is every selected Memory's vector projection complete? Cached per head
        Revision (a new head is a new key; commits here also invalidate)."""
        if not self._capabilities_sync().vector:
            return False
        with self._completeness_lock:
            unsure = [r for r in refs if self._completeness.get(r) is not True]
        if unsure:
            # A ref not known complete is read again with its head: one that is not the
            # head is NotHeadError (what a full-text search says), never "incomplete",
            # whose advice (rebuild the projections) would be wrong.
            with self._transaction(write=False) as tx:
                for ref in unsure:
                    _check_head(ref, self._read_head(tx, ref.artifact_id))
                    if ref not in self._completeness:
                        complete = self._projection_complete(tx, ref.artifact_id)
                        with self._completeness_lock:
                            self._completeness[ref] = complete
        with self._completeness_lock:
            return all(self._completeness.get(r, False) for r in refs)

    def _forget_completeness(self, ref: ArtifactRef) -> None:
        with self._completeness_lock:
            self._completeness.pop(ref, None)

    def _centroid_of(self, tx: Any, refs: tuple[ArtifactRef, ...], generation: int) -> tuple[float, ...] | None:
        """c̄ of exactly the heads confirmed in this transaction. Their sums change only
        in transactions that move one of those heads or bump the projection generation
        (a rebuild, the c̄ backfill), so it is read once per (heads, generation). A
        value read while a head moved on is keyed by the old head, which no later
        search can use (a search refuses a Revision that is not the head), and this
        search retries."""
        key = (refs, generation)
        with self._completeness_lock:
            if key in self._means:
                return self._means[key]
        mean = self._centroid(tx, [r.artifact_id for r in refs])
        with self._completeness_lock:
            if len(self._means) > 1024:
                self._means.clear()
            self._means[key] = mean
        return mean

    def _projection_present(self, tx: Any, ref: ArtifactRef, generation: int) -> bool:
        """The in-transaction reconfirmation, cheap enough for every search: no head
        row lacks its vector (NULL / anti-join predicates in SQL). The embedding-hash
        predicate is evaluated by ``_projection_complete`` once per head Revision (and
        every vector was hash-checked inside the transaction that wrote it)."""
        if not self._vector_complete_cached(tx, ref):
            return False
        # Only a rebuild changes a projection without moving the head, and every rebuild
        # (in any process) bumps the projection generation in its own transaction: the
        # anti-join (O(entries): 8+ ms at 10k) runs once per head and generation.
        key = (ref, generation)
        with self._completeness_lock:
            if key in self._present:
                return True
        present = self._missing_vectors(tx, ref.artifact_id) == 0
        if present:
            with self._completeness_lock:
                if len(self._present) > 4096:
                    self._present.clear()
                self._present[key] = True
        return present

    def _vector_complete_cached(self, tx: Any, ref: ArtifactRef) -> bool:
        with self._completeness_lock:
            known = self._completeness.get(ref)
        if known is None:
            known = self._projection_complete(tx, ref.artifact_id)
            with self._completeness_lock:
                self._completeness[ref] = known
        return known

    def _projection_complete(self, tx: Any, artifact_id: str) -> bool:
        """Complete iff every head row has a vector whose embedding hash matches this
        profile and the row's content hash (RFC "Vector integrity"). A server that can
        hash may prove it without sending the rows (``_vectors_proven_by_server``);
        otherwise, or when it does not prove it, every row is read and checked here."""
        if self.embedding_profile is None or not self._vector_supported_sync():
            return False
        if self._vectors_proven_by_server(tx, artifact_id):
            return True
        return all(
            has_vector and embedding_hash == self.expected_embedding_hash(content_hash)
            for content_hash, embedding_hash, has_vector in self._vector_rows(tx, artifact_id)
        )

    def _vectors_proven_by_server(self, tx: Any, artifact_id: str) -> bool:
        """True only when the database itself found every head row complete by the rule
        of ``_projection_complete``, hashing as ``canonical.embedding_hash_template``
        does. False means "not proven there", never "incomplete"."""
        return False

    def _completeness_after_commit(self, base: ArtifactRef | None, head: ArtifactRef, rows_vectored: bool) -> None:
        """After this handle committed ``head`` on ``base``: if the base's vector
        projection was known complete (or there was no base) and the commit wrote a
        vector with every row it wrote (each carrying this profile's embedding hash of
        its version: _validate_vectors), the new head is complete too: every other row
        is the base's. The same holds for the base's "no row lacks a vector" per
        projection generation (a generation that has moved on since is never asked
        for again). Otherwise the next search checks in full, as for any head this
        handle did not write. The full check reads and hashes every head row (0.25–0.5 s
        at 10k entries on SQLite): without this the first search after every commit
        paid it."""
        with self._completeness_lock:
            known = True if base is None else self._completeness.get(base)
            generations = [g for r, g in self._present if r == base]
        self._record_completeness(head, generations, bool(rows_vectored and known))

    def _record_completeness(self, ref: ArtifactRef, generations: Iterable[int], complete: bool) -> None:
        """What this handle knows of ``ref`` after writing it (a commit, a rebuild):
        complete, and with no row lacking a vector at ``generations``, when ``complete``
        and the database has a vector projection; otherwise nothing, so the next search
        checks in full. Either way nothing earlier of the Memory is kept."""
        self._invalidate_completeness(ref.artifact_id)
        if not (complete and self.embedding_profile is not None and self._vector_supported_sync()):
            return
        with self._completeness_lock:
            self._completeness[ref] = True
            for generation in generations:
                self._present[(ref, generation)] = True

    def _invalidate_completeness(self, artifact_id: str) -> None:
        with self._completeness_lock:
            for ref in [r for r in self._completeness if r.artifact_id == artifact_id]:
                del self._completeness[ref]

    def _missing_vectors(self, tx: Any, artifact_id: str) -> int:
        """How many head rows of the Memory have no (matching) vector row."""
        raise CapabilityNotSupportedError(f"the {self.name} backend has no vector projection configured")

    def _vector_rows(self, tx: Any, artifact_id: str) -> list[tuple[str, str | None, bool]]:
        """(entry_content_hash, embedding_content_hash, has_vector) per head row."""
        raise CapabilityNotSupportedError(f"the {self.name} backend has no vector projection configured")

    def _vector_query(self, tx: Any, artifact_ids: list[str], vector: tuple[float, ...], k: int) -> list[tuple[Any, ...]]:
        """Top-k rows (memory_artifact_id, entry_id, entry_version_id, entry_content_hash,
        l2 distance, searchable_text), nearest first, ties by (memory, entry)."""
        raise CapabilityNotSupportedError(f"the {self.name} backend has no vector projection configured")


class _HeadMoved(Exception):
    pass

