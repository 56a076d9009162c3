"""What admission in probability units (issue 46) adds to a search, at 1k entries.

    .venv/bin/python benchmarks/calibration_bench.py [--size 1000] [--backends sqlite]
        [--queries 40] [--rounds 7] [--repeat 7]

A Memory of ``--size`` entries is loaded as in ``perf_bench.py`` (seeded vectors that
declare the MiniLM profile, so the shipped MiniLM calibration applies; the cells come
from the texts' scripts, so the lookups are the real ones). Two ways to search it,
hybrid, limit 8:

- ``raw``: no calibration (``svc.calibration = None``) and the profile's default
  policy — today's raw thresholds, no probability read anywhere;
- ``probability``: the shipped calibration and ``min_probability=0.5`` — every retrieved
  candidate annotated with its probability and cell, admission by it.

For each, every round searches the queries back to back; a figure is the median over
``--rounds`` rounds (their order alternating) of the round's mean per search, in ms:
wall (``perf_counter``) and CPU of the whole process (``process_time``: the backend's
worker thread included; far less disturbed than wall time when other processes share
the cores). ``added`` is probability − raw. Then the two pure parts that differ, timed
alone on each query's cached retrieval (fastest of ``--repeat``, median over queries):
``annotate`` (the probability and cell of every candidate) and ``fuse`` with
``min_probability`` minus ``fuse`` with the raw floors.

The goal (issue 46): ≤ 0.2 ms added per query at 1k entries. The load average
(``uptime``) is printed with the figures. Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_dirs  # noqa: E402
import perf_bench as pb  # noqa: E402  (the bench's corpus and seeded vectors)

from powercontext.memory import admission  # noqa: E402
from powercontext.memory.calibration import annotate, calibration_for  # noqa: E402

GOAL_MS = 0.2


def load_line() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        one, five, fifteen = os.getloadavg()
        return f"load average: {one:.2f}, {five:.2f}, {fifteen:.2f}"


async def one_round(svc, rev, queries, policy) -> tuple[float, float]:
    """(wall ms, process CPU ms) per search, the queries searched back to back."""
    wall, cpu = time.perf_counter(), time.process_time()
    for q in queries:
        await svc.search(q, memories=(rev,), mode="hybrid", limit=8, policy=policy)
    n = len(queries)
    return (time.perf_counter() - wall) * 1000 / n, (time.process_time() - cpu) * 1000 / n


def fastest_us(fn, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return min(runs) * 1e6


async def bench(target, texts, queries, rounds: int, repeat: int) -> dict[str, float]:
    svc, rev, _ = await pb.load(target, texts, pb.SeededVectors())
    try:
        calibration = calibration_for(svc.backend.embedding_profile)
        if calibration is None:
            raise SystemExit("no shipped calibration for the bench's profile: nothing to measure")
        raw_policy = dataclasses.replace(svc.policy, min_probability=None)
        probability_policy = dataclasses.replace(svc.policy, min_probability=0.5)
        variants = {"raw": (None, raw_policy), "probability": (calibration, probability_policy)}

        async def run(name):
            svc.calibration, policy = variants[name]
            return await one_round(svc, rev, queries, policy)

        for name in variants:  # warm: statements prepared, caches filled
            await run(name)
        measured: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        for r in range(rounds):
            for name in (("raw", "probability") if r % 2 == 0 else ("probability", "raw")):
                measured[name].append(await run(name))
        out = {}
        for name, runs in measured.items():
            out[f"{name} wall"] = statistics.median(w for w, _ in runs)
            out[f"{name} cpu"] = statistics.median(c for _, c in runs)
        out["added wall"] = out["probability wall"] - out["raw wall"]
        out["added cpu"] = out["probability cpu"] - out["raw cpu"]

        # the pure parts, on each query's cached retrieval
        svc.calibration = None
        annotate_us, fuse_us = [], []
        for q in queries:
            retrieval, _, _ = await svc.retrieve(q, (rev,), 8, "hybrid", raw_policy)
            plain = retrieval.channels
            scored = annotate(plain, calibration)
            annotate_us.append(fastest_us(lambda: annotate(plain, calibration), repeat))
            fuse_us.append(fastest_us(lambda: admission.fuse(scored, probability_policy, 8), repeat)
                           - fastest_us(lambda: admission.fuse(plain, raw_policy, 8), repeat))
        out["annotate us"] = statistics.median(annotate_us)
        out["fuse delta us"] = statistics.median(fuse_us)
        out["candidates"] = sum(len(c) for c in plain.values())
        return out
    finally:
        await svc.close()


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--backends", default="sqlite", help="sqlite,oceanbase (the cost is Python's: sqlite by default)")
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=7, help="N: each figure is the median of N rounds")
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    base, all_queries = pb.corpus_texts()
    texts = pb.synthesize(base, args.size)
    queries = all_queries[: args.queries]
    print(pb.machine())
    print(f"before: {load_line()}")
    results = {}
    with bench_dirs.workspace("pc-calibration-", with_oceanbase="oceanbase" in args.backends) as (work, url):
        for backend in args.backends.split(","):
            with pb.bench_target(backend, url, work, "calibration") as target:
                results[backend] = await bench(target, texts, queries, args.rounds, args.repeat)
    print(f"after:  {load_line()}")
    print(f"\nhybrid search, {args.size:,} entries, {len(queries)} queries, limit 8; median of {args.rounds} rounds, "
          "ms per search")
    print(f"{'backend':<10} {'':>12} {'raw':>8} {'probability':>12} {'added':>8}")
    for backend, r in results.items():
        for kind in ("wall", "cpu"):
            print(f"{backend:<10} {kind:>12} {r[f'raw {kind}']:8.3f} {r[f'probability {kind}']:12.3f} "
                  f"{r[f'added {kind}']:8.3f}")
        print(f"{backend:<10} {'parts':>12} annotate {r['annotate us']:.1f} µs + admission by probability "
              f"{r['fuse delta us']:+.1f} µs per query ({r['candidates']} candidates)")
    worst = max(r["added cpu"] for r in results.values())
    parts = max(r["annotate us"] + r["fuse delta us"] for r in results.values()) / 1000
    print(f"\ngoal: ≤ {GOAL_MS} ms added per query at 1k entries — the parts that differ {parts:.3f} ms "
          f"({'met' if parts <= GOAL_MS else 'NOT met'}); whole searches, CPU {worst:+.3f} ms "
          f"({'met' if worst <= GOAL_MS else 'NOT met'}; whole-search figures carry the machine's noise: "
          "compare the load average)")


if __name__ == "__main__":
    asyncio.run(main())
