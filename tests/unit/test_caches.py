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


def test_budget_from_env(monkeypatch):
    monkeypatch.setenv("PC_TEST_BUDGET_MB", "2.5")
    assert budget_from_env("PC_TEST_BUDGET_MB", 64) == int(2.5 * 2**20)
    monkeypatch.setenv("PC_TEST_BUDGET_MB", "lots")
    assert budget_from_env("PC_TEST_BUDGET_MB", 64) == 64 * 2**20
