"""Test doubles for the harness tests: a small valid corpus written to disk, and a
deterministic hashed bag-of-words embedding model (texts sharing words get a high
cosine), so vector and hybrid retrieval run on both databases in milliseconds."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from powercontext import analyzer
from powercontext.embedding import EmbeddingResult
from powercontext.model import EmbeddingProfile


class HashEmbedding:
    """A valid EmbeddingModel: unit vectors of hashed analyzer terms plus a constant and
    a small text-specific bump, so distinct texts never tie exactly (OceanBase's HNSW
    query orders equal distances arbitrarily; see the harness report)."""

    profile = EmbeddingProfile(profile_id="test-hash-64", model="test/hashed-bag-of-words", dimension=64)

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    @staticmethod
    def vector(text: str) -> tuple[float, ...]:
        v = [0.0] * 64
        v[0] = 0.6
        for term in analyzer.query_terms(text):
            digest = hashlib.sha256(term.encode("utf-8")).digest()
            v[1 + digest[0] % 63] += 1.0
        whole = hashlib.sha256(text.encode("utf-8")).digest()
        v[1 + whole[0] % 63] += 0.01 + whole[1] / 2560
        norm = math.sqrt(sum(x * x for x in v))
        return tuple(x / norm for x in v)

    async def embed(self, texts):
        self.calls += 1
        self.texts += len(texts)
        return EmbeddingResult(tuple(self.vector(t) for t in texts))


def _e(id, text, kind="fact", memory="repo", state="active", **extra):
    return {"id": id, "memory": memory, "kind": kind, "text": text, "state": state, **extra}


def _q(id, text, tags, split, memories=("repo",), lang="en"):
    return {"id": id, "text": text, "lang": lang, "memories": list(memories), "tags": tags, "split": split}


ENTRIES = [
    _e("tny-0001", "The API server listens on port 8080 in development.",
       history=["The API server listens on port 3000 in development."], sources=["src_env"]),
    _e("tny-0002", "The worker connects to Redis with a connect timeout of 5 seconds.", sources=["src_worker"]),
    _e("tny-0003", "Failed jobs are retried with exponential backoff starting at 2 seconds."),
    _e("tny-0004", "We use pnpm to install JavaScript dependencies.", kind="decision",
       history=["We use npm to install JavaScript dependencies.", "We use yarn to install JavaScript dependencies."]),
    _e("tny-0005", "Database migrations must be reviewed by a second engineer before merge.", kind="constraint"),
    _e("tny-0006", "Integration tests run with make integration and need Docker running."),
    _e("tny-0007", "The flaky upload test is quarantined until the storage mock is fixed.", kind="working_note",
       state="inactive"),
    _e("tny-0008", "部署脚本 deploy.sh 会先运行数据库迁移，再重启 API 服务。"),
    _e("tny-0009", "Logs are shipped to Loki and kept for 14 days."),
    _e("tny-0010", "The staging cluster is wiped every Sunday night.", state="inactive",
       history=["The staging cluster is wiped every Saturday night."]),
    _e("tny-0011", "I prefer short commit messages in the imperative mood.", kind="preference", memory="user"),
    _e("tny-0012", "Explain shell commands before running them.", kind="preference", memory="user"),
    _e("tny-0013", "Use British spelling in documentation.", kind="preference", memory="user", state="inactive"),
]
QUERIES = [
    _q("tny-q001", "which port does the API server use in development", ["lexical"], "dev"),
    _q("tny-q002", "API server port 3000", ["stale", "lexical"], "test"),
    _q("tny-q003", "how do I install JS packages", ["paraphrase"], "dev"),
    _q("tny-q004", "what is the redis connect timeout", ["lexical"], "test"),
    _q("tny-q005", "what is the retry timeout for redis", ["hard-negative"], "dev"),
    _q("tny-q006", "who must approve schema changes", ["paraphrase"], "test"),
    _q("tny-q007", "how are integration tests run and how do we deploy", ["multi"], "dev"),
    _q("tny-q008", "部署的时候会做什么", ["cjk"], "test", lang="zh"),
    _q("tny-q009", "what is the kubernetes namespace for billing", ["negative"], "dev"),
    _q("tny-q010", "is the upload test quarantined", ["forgotten"], "test"),
    _q("tny-q011", "how long are logs kept", ["lexical"], "dev"),
    _q("tny-q012", "how should I write commit messages", ["lexical"], "test", memories=("user",)),
    _q("tny-q013", "should commands be explained first", ["paraphrase"], "dev", memories=("repo", "user")),
    _q("tny-q014", "which spelling should docs use", ["forgotten"], "dev", memories=("user",)),
    _q("tny-q015", "what test command needs docker", ["lexical"], "test"),
    _q("tny-q016", "which database do we deploy on friday", ["negative"], "test"),
]
QRELS = [
    ("tny-q001", "tny-0001", 3), ("tny-q002", "tny-0001", 3), ("tny-q003", "tny-0004", 3),
    ("tny-q004", "tny-0002", 3), ("tny-q004", "tny-0003", 1), ("tny-q005", "tny-0002", 1),
    ("tny-q006", "tny-0005", 3), ("tny-q007", "tny-0006", 3), ("tny-q007", "tny-0008", 2),
    ("tny-q008", "tny-0008", 3), ("tny-q011", "tny-0009", 3), ("tny-q012", "tny-0011", 3),
    ("tny-q013", "tny-0012", 3), ("tny-q015", "tny-0006", 3),
]


def write_corpus(folder: Path, entries=ENTRIES, queries=QUERIES, qrels=QRELS) -> Path:
    """Write the tiny corpus (or a variant) as datasets/<name>/ files; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "memories.jsonl").write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), "utf-8")
    (folder / "queries.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), "utf-8")
    (folder / "qrels.trec").write_text("".join(f"{q} 0 {e} {g}\n" for q, e, g in qrels), "utf-8")
    (folder / "README.md").write_text("# tiny\nA test corpus.\n", "utf-8")
    return folder
