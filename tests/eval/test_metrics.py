"""Metric arithmetic: the sweep's ranking metrics equal ranx's, the set and abstention
metrics follow their stated conventions (hand-computed values)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from powercontext.eval.scoring import metrics as M


def _gains(ranking, judged, width):
    return [judged.get(d, 0) for d in ranking] + [0] * (width - len(ranking))


def test_ranking_metrics_equal_ranx_on_random_runs():
    rng = random.Random(3)
    docs = [f"d{i}" for i in range(25)]
    qrels = {f"q{i}": {d: rng.randint(1, 3) for d in rng.sample(docs, rng.randint(1, 5))} for i in range(150)}
    run = {q: rng.sample(docs, rng.randint(0, 10)) for q in qrels}
    for limit in (10, 3):
        cut = {q: r[:limit] for q, r in run.items()}
        gains = np.array([_gains(cut[q], qrels[q], limit) for q in qrels])
        ours = M.row_metrics(gains, np.array([len(cut[q]) for q in qrels]), np.array([len(qrels[q]) for q in qrels]),
                             np.array([M.idcg(list(qrels[q].values())) for q in qrels]), limit)
        theirs = M.ranx_scores(qrels, cut, M.RANX_METRICS)
        for metric in M.RANX_METRICS:
            expected = np.array([theirs[metric][q] for q in qrels])
            np.testing.assert_allclose(ours[metric], expected, atol=1e-12, err_msg=f"{metric} at limit {limit}")


def test_ndcg_hand_computed():
    # hits graded [3, 0, 2]; ideal [3, 2]: DCG = 3 + 0 + 2/log2(4) = 4; IDCG = 3 + 2/log2(3)
    m = M.row_metrics(np.array([[3, 0, 2]]), np.array([3]), np.array([2]), np.array([M.idcg([3, 2])]), 3)
    assert m["ndcg@10"][0] == pytest.approx(4 / (3 + 2 / math.log2(3)))
    assert m["mrr@10"][0] == 1.0 and m["precision@5"][0] == pytest.approx(2 / 5)


def test_set_metrics_and_abstention_conventions():
    # rows: empty-answer query, nothing admitted | empty-answer query, 2 admitted |
    #       positive: 1 of 2 judged among 4 hits | positive, nothing admitted
    gains = np.array([[0, 0, 0, 0], [0, 0, 0, 0], [0, 2, 0, 0], [0, 0, 0, 0]])
    m = M.row_metrics(gains, np.array([0, 2, 4, 0]), np.array([0, 0, 2, 2]), np.array([0, 0, 5.0, 5.0]), 4)
    assert list(m["set_precision"]) == [1.0, 0.0, 0.25, 1.0]
    assert list(m["set_recall"]) == [1.0, 1.0, 0.5, 0.0]
    assert m["set_f1"][0] == 1.0 and m["set_f1"][1] == 0.0 and m["set_f1"][3] == 0.0
    assert m["set_f1"][2] == pytest.approx(2 * 0.25 * 0.5 / 0.75)
    assert list(m["false_admission"]) == [0.0, 1.0, 1.0, 0.0]  # only read on empty-answer queries
    assert list(m["empty_answer"]) == [1.0, 0.0, 0.0, 1.0]  # only read on positive queries
    assert list(m["hits"]) == [0, 2, 4, 0]


def test_limit_caps_the_hits_counted():
    m = M.row_metrics(np.array([[3, 3, 3, 3]]), np.array([4]), np.array([4]), np.array([M.idcg([3] * 4)]), 2)
    assert m["hits"][0] == 2 and m["set_precision"][0] == 1.0 and m["set_recall"][0] == 0.5


def test_nauc_is_one_for_the_oracle_negative_when_reversed_and_nan_when_flat():
    util = np.array([0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.0, 0.9, 0.3, 0.5])
    assert M.nauc(util, util) == pytest.approx(1.0)
    assert M.nauc(-util, util) < 0
    assert math.isnan(M.nauc(util, np.ones(10)))
    partial = M.nauc(util + np.linspace(0, 0.6, 10), util)
    assert 0 < partial < 1


def test_bootstrap_ci_brackets_the_mean_and_randomization_test_detects_shifts():
    rng = np.random.default_rng(1)
    x = rng.normal(0.5, 0.1, 400)
    lo, hi = M.bootstrap_ci(x)
    assert lo < x.mean() < hi and hi - lo < 0.03
    assert M.paired_randomization_test(x, x) == 1.0
    assert M.paired_randomization_test(x + 0.05, x, n=2000) < 0.01
    assert M.paired_randomization_test(x + rng.normal(0, 0.1, 400), x, n=2000) > 0.01


def test_every_metric_has_a_definition_and_a_population():
    assert len(set(M.METRIC_NAMES)) == len(M.METRICS)
    for m in M.METRICS:
        assert m.population in ("positive", "empty", "all") and len(m.definition) > 20
    m = M.row_metrics(np.zeros((1, 10)), np.array([0]), np.array([1]), np.array([1.0]), 10)
    assert set(m) == set(M.METRIC_NAMES)


SCORE_AND_REPORT = """
import sys
from numba.core.registry import CPUDispatcher
from numba.typed import typeddict, typedlist
from ranx.data_structures import common
from powercontext.eval.scoring import metrics as M
M.compile_ranx()  # what make setup runs: scores and compares through ranx
if __name__ == "__main__":  # the second process: a corpus whose ids have a length no run here had
    width = int(sys.argv[1])
    qrels = {f"q{i}": {f"{i:0{width}d}": 1, f"{i + 100:0{width}d}": 2} for i in range(6)}
    M.ranx_scores(qrels, {q: [f"{7:0{width}d}", *judged] for q, judged in qrels.items()})
for module in (typeddict, typedlist, common):
    for name, function in vars(module).items():
        if isinstance(function, CPUDispatcher) and function.signatures:
            print(module.__name__, name, sum(function.stats.cache_hits.values()), sum(function.stats.cache_misses.values()))
"""


def test_a_second_process_loads_ranxs_containers_compiled_instead_of_compiling_them_again():
    """ranx fills numba's typed Dict/List from Python; numba compiled their methods anew
    in every process (15-40 s per sweep, notebook kernel or test worker). The first
    process now writes them to numba's disk cache and the next one only loads them.

    And ranx's own functions were compiled once per length of the longest document id
    (its id arrays' dtype): a corpus with ids of a new length paid ~40 s of JIT after
    setup had compiled everything else. The second process scores ids of a length drawn
    at random, which no process of this venv has scored, and still compiles nothing.

    The first process is this test worker: it scores the same way here (writing the cache
    if this venv has none yet), so only the second needs a process of its own — a second
    subprocess cost ~15 s, nearly all of it importing ranx, and proved nothing more."""
    import random
    import subprocess
    import sys

    exec(compile(SCORE_AND_REPORT, "SCORE_AND_REPORT", "exec"), {})  # the first process: this one
    width = random.SystemRandom().randint(12, 400)
    second = subprocess.run([sys.executable, "-c", SCORE_AND_REPORT, str(width)], capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    rows = [line.split() for line in second.stdout.splitlines()]
    assert {name for _, name, _, _ in rows} >= {"_make_dict", "_make_list", "to_typed_list", "create_and_sort"}, \
        second.stdout
    compiled_again = [(module, name) for module, name, hits, misses in rows if int(misses) or not int(hits)]
    assert not compiled_again, f"compiled again in the second process (ids of {width} characters): {compiled_again}"
