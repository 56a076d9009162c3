"""The full-text pool rule (backends/retrieval.fts_pool): the rows kept do not depend on
the engine's order, so SQLite and OceanBase keep the same pool from the same matches."""

from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.backends.retrieval import fts_fetch_size, fts_pool

TERMS = ("build", "docs", "check", "uv")
WORDS = TERMS + ("the", "make", "site", "run")

rows_strategy = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=12),
    min_size=0, max_size=60,
).map(lambda docs: [("mem_a", f"ent_{i:03d}", f"ver_{i:03d}", "hash", " ".join(d)) for i, d in enumerate(docs)])


@settings(max_examples=200, deadline=None)
@given(rows=rows_strategy, order=st.randoms(use_true_random=False), pool=st.integers(1, 40))
def test_the_pool_is_the_same_whatever_order_the_engine_returned(rows, order, pool):
    shuffled = list(rows)
    order.shuffle(shuffled)
    ours, theirs = fts_pool(rows, TERMS, pool), fts_pool(shuffled, TERMS, pool)
    assert {(r[1], place) for r, place, _ in ours} == {(r[1], place) for r, place, _ in theirs}


@settings(max_examples=200, deadline=None)
@given(rows=rows_strategy, pool=st.integers(1, 40))
def test_the_pool_keeps_the_engine_order_and_the_rows_matching_most_terms(rows, pool):
    pooled = fts_pool(rows, TERMS, pool)
    kept = [r for r, _, _ in pooled]
    assert len(kept) == min(pool, len(rows))
    assert sorted(place for _, place, _ in pooled) == list(range(len(kept)))
    # a smaller pool is the first places of a larger one
    smaller = {r[1] for r, _, _ in fts_pool(rows, TERMS, max(1, pool // 2))}
    assert smaller == {r[1] for r, place, _ in pooled if place < max(1, pool // 2)}
    assert kept == [r for r in rows if r in kept]  # the engine's relevance order stays the rank
    matched = lambda row: len(set(TERMS) & set(row[4].split()))  # noqa: E731
    if kept and len(rows) > len(kept):
        assert min(map(matched, kept)) >= max(matched(r) for r in rows if r not in kept)


def test_a_search_reads_several_rows_per_pool_slot_and_the_same_depth_for_the_harness_pools():
    assert fts_fetch_size(32) >= 3 * 32  # 3× was the least that made the bundled pools agree
    # the harness retrieves pool_size(10) = 40 and replays pool 32: one depth for both
    assert fts_fetch_size(32) == fts_fetch_size(40)


@settings(max_examples=300, deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from(WORDS + ("buil", "check-in", "u_6570", "b_6570_636e")), min_size=1,
                              max_size=12), min_size=1, max_size=40),
       terms=st.lists(st.sampled_from(WORDS + ("buil", "u_6570")), min_size=1, max_size=6, unique=True),
       pool=st.integers(1, 40))
def test_the_pool_ranks_and_matches_as_the_token_sets_would(docs, terms, pool):
    """Oracle: distinct query terms in the stored token set, then the token count; the
    matched terms a candidate carries are those of its token set, in query order."""
    rows = [("mem_a", f"ent_{i:03d}", "v", "h", " ".join(d)) for i, d in enumerate(docs)]
    oracle = sorted(rows, key=lambda r: (-len(set(terms) & set(r[4].split())), len(r[4].split()), r[0], r[1]))
    expected = {r[1]: (place, tuple(t for t in terms if t in r[4].split())) for place, r in enumerate(oracle[:pool])}
    assert {r[1]: (place, matched) for r, place, matched in fts_pool(rows, tuple(terms), pool)} == expected
