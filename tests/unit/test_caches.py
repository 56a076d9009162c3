"""The byte-bounded LRU behind the revision and version caches (issue 15): it holds at
most ``max_bytes``, drops the least recently used first, and never keeps an item
larger than the whole budget."""

from powercontext.backends.caches import ByteLRU, budget_from_env


def test_evicts_least_recently_used_to_stay_within_bytes():
    cache = ByteLRU(100)
    for key in "abcd":
        cache.put(key, key.upper(), 30)
    assert cache.get("a") is None and cache.nbytes == 90  # a went first
    cache.get("b")  # b is now the most recent
    cache.put("e", "E", 30)
    assert cache.get("c") is None and cache.get("b") == "B" and cache.nbytes <= 100
    cache.put("huge", "X", 101)
    assert cache.get("huge") is None and cache.get("b") == "B"
    cache.put("b", "B2", 50)  # replacing an item re-counts its size
    assert cache.get("b") == "B2" and cache.nbytes <= 100
    cache.discard_if(lambda k: k == "b")
    assert cache.get("b") is None and len(cache) == 1


def test_get_many_answers_as_get_would_and_counts_as_a_use():
    """A search's batch lookup (one lock for ~64 keys): the held keys with their values,
    the oversize item included, a missing key left out; each key found becomes recent."""
    cache = ByteLRU(100, keep_oversize=True)
    for key in "abc":
        cache.put(key, key.upper(), 30)
    cache.put("big", "BIG", 500)
    assert cache.get_many(["a", "big", "zz", "c"]) == {"a": "A", "big": "BIG", "c": "C"}
    cache.put("d", "D", 30)  # b is now the least recently used, not a
    assert cache.get("b") is None and cache.get_many("acd") == {"a": "A", "c": "C", "d": "D"}
    assert cache.get_many([]) == {}


def test_budget_from_env(monkeypatch):
    monkeypatch.setenv("PC_TEST_BUDGET_MB", "2.5")
    assert budget_from_env("PC_TEST_BUDGET_MB", 64) == int(2.5 * 2**20)
    monkeypatch.setenv("PC_TEST_BUDGET_MB", "lots")
    assert budget_from_env("PC_TEST_BUDGET_MB", 64) == 64 * 2**20


def test_the_revision_cache_keeps_one_oversize_item_beside_its_budget():
    """A 100k-entry Memory's head Revision (~95 MB) is over the 64 MB default budget: not
    kept, every read of it re-verified the whole manifest. With keep_oversize the most
    recent such item has a slot of its own; the budget still bounds everything else."""
    cache = ByteLRU(100, keep_oversize=True)
    cache.put("a", "A", 40)
    cache.put("head", "H", 500)
    assert cache.get("head") == "H" and cache.get("a") == "A"
    assert cache.nbytes == 40 and cache.oversize_bytes == 500 and len(cache) == 2
    for key in "bcd":  # small items come and go within the budget; the big one stays
        cache.put(key, key.upper(), 40)
    assert cache.get("head") == "H" and cache.nbytes <= 100
    cache.put("head2", "H2", 300)  # only one oversize item: the newest
    assert cache.get("head") is None and cache.get("head2") == "H2" and cache.oversize_bytes == 300
    cache.put("head2", "small now", 10)  # re-put within the budget moves it
    assert cache.get("head2") == "small now" and cache.oversize_bytes == 0
    cache.put("head3", "H3", 300)
    cache.discard_if(lambda k: k == "head3")
    assert cache.get("head3") is None
    cache.put("head3", "H3", 300)
    cache.max_bytes = 0  # a zero budget disables the cache, oversize slot included
    assert cache.get("head3") is None and len(cache) == 0
    cache.put("head4", "H4", 300)
    assert cache.get("head4") is None
    plain = ByteLRU(100)  # the default (the version cache): an oversize item is not kept
    plain.put("big", "B", 101)
    assert plain.get("big") is None


def test_pinned_items_are_not_evicted_and_the_budget_still_holds():
    """An entries() pass pins the Revision it returns while it reads the older ones
    (base.py): they must not evict it, and the budget must hold all the same."""
    cache = ByteLRU(100)
    cache.put("head", "H", 40)
    with cache.pinned(["head"]):
        for key in "abc":  # each evicts the least recently used unpinned item, not the head
            cache.put(key, key.upper(), 40)
            assert cache.get("head") == "H" and cache.nbytes <= 100
        assert cache.get("a") is None and cache.get("b") is None and cache.get("c") == "C"
        cache.put("big", "B", 70)  # room only by evicting the head: not kept, nothing evicted
        assert cache.get("big") is None and cache.get("c") == "C" and cache.nbytes == 80
        with cache.pinned(["head", "c"]):  # pins nest (two passes over the same head)
            cache.put("d", "D", 30)
            assert cache.get("d") is None and cache.nbytes == 80
        cache.put("d", "D", 30)  # "c" is unpinned again: it goes, the head stays
        assert cache.get("c") is None and cache.get("head") == "H" and cache.nbytes == 70
        cache.max_bytes = 30  # lowering the budget evicts pinned items too
        assert cache.get("head") is None and cache.nbytes == 0
        cache.max_bytes = 100
    for key in "efg":  # out of the block the head is an ordinary item again
        cache.put(key, key.upper(), 40)
    cache.put("head", "H", 40)
    for key in "hij":
        cache.put(key, key.upper(), 40)
    assert cache.get("head") is None and cache.nbytes <= 100
