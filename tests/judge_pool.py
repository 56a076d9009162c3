"""A small pool folder written directly in the issue-44 format (pool.json, pool.jsonl,
memories.jsonl, queries.jsonl): what the judging tests judge, independent of the pooling
code. Texts in Latin, CJK and Arabic (right-to-left) so the widget shows all three."""

from __future__ import annotations

import json
from pathlib import Path

ENTRIES = [
    {"id": "e-build", "memory": "repoA", "kind": "fact", "text": "The crate builds with cargo build --release."},
    {"id": "e-test", "memory": "repoA", "kind": "preference", "text": "Run make test before every push."},
    {"id": "e-port", "memory": "repoA", "kind": "fact", "text": "The dev server listens on port 5173."},
    {"id": "e-cjk", "memory": "repoA", "kind": "decision", "text": "部署之前必须运行数据库迁移脚本。"},
    {"id": "e-rtl", "memory": "repoA", "kind": "constraint", "text": "لا تعدّل ملفات المجلد site يدويًا."},
    {"id": "e-other", "memory": "repoA", "kind": "fact", "text": "Logs rotate every night at 02:00 UTC."},
]
QUESTIONS = [
    {"id": "q-build", "text": "How is the crate built?", "memories": ["repoA"], "meta": {"log_count": 3}},
    {"id": "q-deploy", "text": "部署前要做什么？", "memories": ["repoA"], "meta": {"log_count": 1}},
    {"id": "q-weather", "text": "What is the weather tomorrow?", "memories": ["repoA"], "meta": {"log_count": 1}},
]
# (question, entry, sources, best_rank): pool.jsonl order is rank order, which the judge must not see
POOL = [
    ("q-build", "e-build", ["fts@minilm-l6-v2", "hybrid@minilm-l6-v2"], 1),
    ("q-build", "e-test", ["vector@minilm-l6-v2"], 2),
    ("q-build", "e-port", ["log"], 3),
    ("q-deploy", "e-cjk", ["fts@minilm-l6-v2"], 1),
    ("q-deploy", "e-rtl", ["vector@minilm-l6-v2"], 2),
    ("q-weather", "e-other", ["vector@minilm-l6-v2"], 1),
    ("q-weather", "e-port", ["vector@minilm-l6-v2"], 2),
]


def _jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def write_pool(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _jsonl(folder / "memories.jsonl", ENTRIES)
    _jsonl(folder / "queries.jsonl", QUESTIONS)
    _jsonl(folder / "pool.jsonl", [{"query_id": q, "entry_id": e, "sources": s, "best_rank": r} for q, e, s, r in POOL])
    (folder / "pool.json").write_text(json.dumps({
        "format": "powercontext.pool.v1", "database": "memory.db", "memories": [{"artifact_id": "mem_art_x", "revision_id": 1}],
        "depth": 3, "profiles": ["minilm-l6-v2"], "questions_from": "log", "created": "2026-12-06T20:00:00+00:00",
        "complete": True}), encoding="utf-8")
    return folder
