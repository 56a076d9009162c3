"""Pooling: the candidates a judge will see for each question (``judging.pool``).

The searched Memories are snapshotted at their current Revision; each distinct question
(NFC + whitespace folding; the log's count kept) gets the union of the top-``depth``
candidates of full-text, vector and hybrid retrieval with admission OFF
(``admission.NO_ADMISSION``, fused by the library's own ``admission.fuse``), plus what the
search log admitted for it. Pool lines are appended question by question, so an
interrupted pool resumes where it stopped.

The first embedding profile asked for is the database's own; each further one
(``--embeddings minilm,e5``) pools from a scratch copy of the snapshot embedded with
that model (``profiles.py``), and each pool line's ``sources`` say which profile and
channel found it.
"""

from __future__ import annotations

import hashlib
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import powercontext as pc
from powercontext.bundled import BUNDLED, bundled_name, bundled_profile
from powercontext.errors import PowerContextError
from powercontext.loop import default_runner
from powercontext.memory import admission
from powercontext.model import ArtifactRef
from powercontext.opening import _sqlite_path
from powercontext.redaction import redact

from .folder import FORMAT, JudgingError, PoolFolder, append_lines, jsonl, write_atomic
from .order import candidate_signals
from .profiles import FURTHER_MODES, merge_lines, scratch_pools

__all__ = ["MODES", "fold", "pool", "pool_async", "pool_question", "read_questions"]

MODES = ("fts", "vector", "hybrid")
MAX_DEPTH = 100


def fold(question: str) -> str:
    """The form two questions are the same in: NFC, whitespace runs folded to one space."""
    return " ".join(unicodedata.normalize("NFC", question).split())


def query_id(text: str) -> str:
    return "q-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_questions(path: str | Path) -> list[str]:
    """One question per line, UTF-8, no empty lines (an empty line is refused, naming it)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise JudgingError(f"questions file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise JudgingError(f"questions file {path}: not UTF-8 (byte {exc.start})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        raise JudgingError(f"questions file {path}: no question")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            raise JudgingError(f"questions file {path}:{number}: empty line")
    return lines


def _check(depth: Any, embeddings: Any, from_log: bool, questions: Any) -> tuple[str, ...]:
    if type(depth) is not int or not 1 <= depth <= MAX_DEPTH:
        raise JudgingError(f"depth must be an integer in 1..{MAX_DEPTH}, got {depth!r:.40}")
    if bool(from_log) == (questions is not None):
        raise JudgingError("pool: give either from_log=True (--from-log) or a questions file (--questions), not both or neither")
    names = (embeddings,) if isinstance(embeddings, str) else tuple(embeddings or ())
    for name in names:
        if bundled_name(name) is None:
            raise JudgingError(f"pool: unknown embedding {name!r:.40}; bundled: {', '.join(BUNDLED)}")
    if len({bundled_name(n) for n in names}) != len(names):
        raise JudgingError(f"pool: a profile is named twice in {', '.join(names)}")
    return names


def _target(db_or_url: Any) -> str:
    target = str(db_or_url)
    try:
        path = _sqlite_path(target)
    except PowerContextError as exc:
        raise JudgingError(f"pool: {exc}") from None
    if path is not None and not Path(path).expanduser().is_file():  # pc.open would create an empty one
        raise JudgingError(f"pool: no database at {path}")
    return target


def _snapshot_rows(heads: Sequence[Any], entries: dict[str, Sequence[Any]]) -> tuple[list[dict], dict]:
    """memories.jsonl rows and (artifact_id, entry_id) → corpus id. A service entry id
    shared by two Memories is prefixed with its Memory's id to stay unique."""
    counts: dict[str, int] = {}
    for versions in entries.values():
        for v in versions:
            counts[v.entry_id] = counts.get(v.entry_id, 0) + 1
    rows, ids = [], {}
    for head in heads:
        for v in entries[head.artifact_id]:
            cid = v.entry_id if counts[v.entry_id] == 1 else f"{head.artifact_id}.{v.entry_id}"
            ids[(head.artifact_id, v.entry_id)] = cid
            row = {"id": cid, "memory": head.artifact_id, "text": v.text, "kind": v.kind, "state": "active"}
            if v.sources:
                row["sources"] = sorted({s.name for s in v.sources})
            row["meta"] = {"entry_id": v.entry_id, "entry_version_id": v.entry_version_id,
                           "revision": head.revision}
            rows.append(row)
    return rows, ids


async def _questions(svc, heads, from_log, since, questions) -> list[dict]:
    """queries.jsonl rows: each distinct question once, its Memories and its log count;
    ``logged`` (not written) keeps the log's admitted hits per question."""
    names = [h.artifact_id for h in heads]
    found: dict[str, dict] = {}
    if from_log:
        records = await svc.search_log(since=since)
        if not records:
            raise JudgingError("pool --from-log: the search log is empty (it is off unless opened with search_log=True)")
        for rec in records:
            mems = [m.artifact_id for m in rec.memories if m.artifact_id in names]
            if not mems or not fold(rec.question):
                continue
            text = fold(rec.question)
            q = found.setdefault(text, {"id": query_id(text), "text": text, "memories": [], "meta": {"log_count": 0},
                                        "logged": []})
            q["meta"]["log_count"] += 1
            q["memories"] = sorted(set(q["memories"]) | set(mems))
            q["logged"].extend((h.memory_artifact_id, h.entry_id, h.rank) for h in rec.hits)
        if not found:
            raise JudgingError("pool --from-log: no logged search read the snapshotted Memories")
    else:
        for line in read_questions(questions):
            text = fold(line)
            found.setdefault(text, {"id": query_id(text), "text": text, "memories": sorted(names), "logged": []})
    return list(found.values())


async def pool_question(svc, q, refs, depth, profile, ids, modes: Sequence[str] | None = None) -> list[dict]:
    """One question's pool lines: per source, the top-``depth`` of admission-off search
    in each of ``modes`` (default: fts, vector and hybrid; fts alone without a profile)."""
    pooled: dict[str, dict] = {}

    def add(cid: str, source: str, rank: int, signals: dict | None = None) -> None:
        line = pooled.setdefault(cid, {"query_id": q["id"], "entry_id": cid, "sources": [], "best_rank": rank,
                                       "signals": {}})
        if source not in line["sources"]:
            line["sources"].append(source)
        line["best_rank"] = min(line["best_rank"], rank)
        for name, value in (signals or {}).items():
            line["signals"][f"{source}:{name}"] = value

    modes = tuple(modes or (MODES if profile else ("fts",)))
    stored: dict[tuple[str, str], dict] = {}  # the widest retrieval's per-channel signals (judging order)
    for mode in modes:
        retrieval, used, _ = await svc.retrieve(q["text"], refs, limit=depth, mode=mode, policy=admission.NO_ADMISSION)
        if used != mode:
            continue
        source = f"{mode}@{profile or 'none'}"
        signals = {}
        for channel in retrieval.channels.values():
            for c in channel:
                key = (c.memory_ref.artifact_id, c.entry_id)
                s = signals.setdefault(key, {})
                if c.channel == "fts":
                    s["matched_terms"] = len(c.matched_terms)
                elif c.cosine is not None:
                    s["cosine"] = round(c.cosine, 4)
                if mode == modes[-1]:  # hybrid (fts without a profile): both channels, every signal
                    stored.setdefault(key, {})[c.channel] = candidate_signals(c)
        for rank, hit in enumerate(admission.fuse(retrieval.channels, admission.NO_ADMISSION, depth), 1):
            key = (hit.memory_ref.artifact_id, hit.entry_id)
            if key in ids:
                add(ids[key], source, rank, signals.get(key))
    for artifact_id, entry_id, rank in q["logged"]:
        if (artifact_id, entry_id) in ids:  # a logged hit since forgotten is not in the snapshot
            add(ids[(artifact_id, entry_id)], "log", rank)
    lines = sorted(pooled.values(), key=lambda line: (line["best_rank"], line["entry_id"]))
    by_id = {cid: key for key, cid in ids.items()}
    for line in lines:
        line["pooled"] = len(lines)
        if by_id[line["entry_id"]] in stored:
            line["channels"] = {profile or "none": stored[by_id[line["entry_id"]]]}
    return lines


async def pool_async(db_or_url: Any, out: str | Path, memories: Sequence[str] | None = None, from_log: bool = False,
                     since: Any = None, questions: str | Path | None = None, depth: int = 20,
                     embeddings: Sequence[str] | str | None = ("minilm",)) -> Path:
    names = _check(depth, embeddings, from_log, questions)
    folder = PoolFolder(Path(out))
    if folder.root.exists() and not folder.root.is_dir():
        raise JudgingError(f"pool: {folder.root} is a file, not a folder")
    try:
        return await _pool(folder, db_or_url, names, memories, from_log, since, questions, depth)
    except OSError as exc:  # the folder cannot be written: one line, not a traceback
        raise JudgingError(f"pool: {exc.strerror or exc}: {exc.filename or folder.root}") from None


async def _pool(folder: PoolFolder, db_or_url, names, memories, from_log, since, questions, depth) -> Path:
    resuming = folder.meta_path.exists()
    if not resuming and folder.root.exists() and any(not _ours(p) for p in folder.root.iterdir()):
        raise JudgingError(f"pool: {folder.root} is not empty and is not a pool folder")
    if questions is not None and not resuming:
        read_questions(questions)  # refused before any database is opened or file written
    target = _target(db_or_url)
    try:
        svc = await pc.open(target, embedding=names[0] if names else None)
    except PowerContextError as exc:
        raise JudgingError(f"pool: cannot open the database: {exc}") from None
    try:
        profile = svc.backend.embedding_profile.profile_id if names else None
        profiles = [profile, *(bundled_profile(n).profile_id for n in names[1:])] if profile else []
        if resuming:
            meta, refs = _resume(folder, depth, profiles)
            meta_heads = refs
            rows = list(folder.queries().values())
            for row in rows:
                row["logged"] = row.get("meta", {}).pop("logged", [])
        else:
            meta_heads = await _heads(svc, memories)
            entries = {h.artifact_id: await svc.entries(h) for h in meta_heads}
            meta_heads = [h for h in meta_heads if entries[h.artifact_id]]  # nothing to judge in an empty one
            mem_rows, _ = _snapshot_rows(meta_heads, entries)
            if not mem_rows:
                raise JudgingError("pool: the Memories hold no active entry")
            rows = await _questions(svc, meta_heads, from_log, since, questions)
            folder.root.mkdir(parents=True, exist_ok=True)
            write_atomic(folder.memories_path, jsonl(mem_rows))
            write_atomic(folder.queries_path, jsonl(_query_row(r) for r in rows))
            meta = {"format": FORMAT, "database": redact(target),
                    "memories": [{"artifact_id": h.artifact_id, "revision": h.revision} for h in meta_heads],
                    "depth": depth, "profiles": profiles,
                    "questions_from": "log" if from_log else "file",
                    "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "complete": False}
            folder.write_meta(meta)
        entries = {h.artifact_id: await svc.entries(h) for h in meta_heads}
        _, ids = _snapshot_rows(meta_heads, entries)
        by_name = {h.artifact_id: h for h in meta_heads}
        done, damaged = folder.complete_pool()
        if damaged:  # keep the whole questions, drop an interrupted one's lines
            write_atomic(folder.pool_path, jsonl(line for q in done.values() for line in q))
        todo = [row for row in rows if row["id"] not in done]
        further = list(folder.memories().values()) if todo and len(names) > 1 else []
        async with scratch_pools(names[1:] if further else (), further) as scratches:
            for row in todo:
                refs = tuple(by_name[m] for m in row["memories"])
                lines = [await pool_question(svc, row, refs, meta["depth"], profile, ids)]
                for s in scratches:  # the log's hits are the database's: pooled once, above
                    lines.append(await pool_question(s.svc, {**row, "logged": []}, s.refs(row["memories"]),
                                                     meta["depth"], s.profile, s.ids, modes=FURTHER_MODES))
                append_lines(folder.pool_path, merge_lines(*lines) if scratches else lines[0])
        folder.write_meta({**meta, "complete": True})
    finally:
        await svc.close()
    return folder.root


def _ours(path: Path) -> bool:
    """A file a pool killed before writing pool.json leaves (the snapshot, a temporary
    file): a rerun starts afresh over them."""
    return path.name in ("memories.jsonl", "queries.jsonl") or (path.name.startswith(".") and path.suffix == ".tmp")


def _query_row(row: dict) -> dict:
    """queries.jsonl's line; the log's admitted hits ride in meta so a resumed pool has them."""
    out = {k: row[k] for k in ("id", "text", "memories")}
    if "meta" in row:
        out["meta"] = {**row["meta"], "logged": [list(h) for h in row["logged"]]}
    return out


async def _heads(svc, memories) -> list[ArtifactRef]:
    if memories:
        heads = []
        for name in memories:
            try:
                heads.append((await svc.head(name)).ref)
            except PowerContextError as exc:
                raise JudgingError(f"pool: unknown Memory {name!r:.80} ({exc})") from None
        return heads
    heads = list(await svc.memories())
    if not heads:
        raise JudgingError("pool: the database holds no Memory")
    return heads


def _resume(folder: PoolFolder, depth: int, profiles: list[str]):
    meta = folder.meta()
    if meta.get("complete"):
        return meta, [ArtifactRef(m["artifact_id"], m["revision"]) for m in meta["memories"]]
    if meta.get("depth") != depth or meta.get("profiles") != profiles:
        raise JudgingError(f"pool: {folder.root} was started with depth {meta.get('depth')} and profiles "
                           f"{meta.get('profiles')}; resume it with the same options")
    return meta, [ArtifactRef(m["artifact_id"], m["revision"]) for m in meta["memories"]]


def pool(db_or_url: Any, out: str | Path, memories: Sequence[str] | None = None, from_log: bool = False,
         since: Any = None, questions: str | Path | None = None, depth: int = 20,
         embeddings: Sequence[str] | str | None = ("minilm",)) -> Path:
    """Pool a database's Memories for judging into ``out`` (see the module docstring);
    returns the folder. Rerun on an interrupted folder to resume it."""
    return default_runner().run(pool_async(db_or_url, out, memories=memories, from_log=from_log, since=since,
                                           questions=questions, depth=depth, embeddings=embeddings))
