"""benchmarks/peers_bench.py with real MiniLM vectors (issue 48, item 1), on a tiny N: the
table it prints gives the exact systems (sqlite-vec's vec0 scan, and this project with
an admit-everything policy, on SQLite and on OceanBase) recall 1.000 against numpy's exact top-10 on the same
vectors; and the vectors are the model's own, embedded once per cache folder."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import minilm_corpus  # noqa: E402
import perf_bench  # noqa: E402


def table_rows(output: str) -> dict[str, list[str]]:
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] in ("sqlite-vec", "powercontext", "powercontext-oceanbase"):
            rows[cells[0]] = cells
    return rows


def test_minilm_table_gives_the_exact_systems_full_recall(tmp_path, oceanbase_url):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "peers_bench.py"), "--vectors", "minilm", "--sizes", "40",
         "--systems", "sqlite-vec,powercontext,powercontext-oceanbase", "--queries", "8", "--warmup", "2",
         "--cache", str(tmp_path)],
        # the session's seekdb (bench_dirs then starts none)
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**os.environ, "POWERCONTEXT_OCEANBASE_URL": oceanbase_url})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "minilm vectors, N = 40" in proc.stdout
    assert "MiniLM embedded 50 texts" in proc.stdout  # 40 documents + 10 questions, none cached yet
    rows = table_rows(proc.stdout)
    assert set(rows) == {"sqlite-vec", "powercontext", "powercontext-oceanbase"}, proc.stdout
    for system, cells in rows.items():
        assert not cells[1].startswith("failed"), cells
        assert cells[4] == "1.000", (system, cells)  # recall@10 column


def test_vectors_are_the_models_own_and_embedded_once(tmp_path):
    base, _questions = perf_bench.corpus_texts()
    texts, parts = perf_bench.synthesize_pairs(base, 1003)
    grown = [texts[i] for i in range(len(texts)) if parts[i] is not None][:2]  # "A; also, b (note N)"
    sample = texts[:3] + grown
    corpus = minilm_corpus.MinilmCorpus(tmp_path, chunk=2)
    first = corpus.vectors(sample)
    assert corpus.embedded == 5 and len(list(tmp_path.glob("document-*.npy"))) == 3
    direct = np.asarray(corpus.model.encode(sample), dtype=np.float32)
    assert np.allclose(first, direct, atol=1e-5)  # the recombinations embedded, not derived from parts
    again = minilm_corpus.MinilmCorpus(tmp_path, chunk=2)
    assert np.array_equal(again.vectors(sample[:4]), first[:4]) and again.embedded == 0  # a prefix: from the cache
