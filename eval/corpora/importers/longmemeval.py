"""LongMemEval (``longmemeval_s.json``, ``_m``, ``_oracle``) → one Memory per question (its
chat-history haystack), entries per turn or per session.

Upstream: Wu et al., "LongMemEval: Benchmarking Chat Assistants on Long-Term
Interactive Memory" (ICLR 2025), https://github.com/xiaowu0162/LongMemEval. Licence:
MIT. 500 evaluation instances per file; ``_s`` haystacks hold ~40 sessions (~115k
tokens), ``_m`` ~500 sessions, ``_oracle`` only the evidence sessions.

Upstream layout, field by field (what this importer reads):

The file is a JSON list of instances, each an object with:

* ``question_id`` — string, unique; an id ending in ``_abs`` marks an ABSTENTION
  question (the history does not hold the answer; the model should say so).
* ``question_type`` — one of ``single-session-user``, ``single-session-assistant``,
  ``single-session-preference``, ``temporal-reasoning``, ``knowledge-update``,
  ``multi-session``.
* ``question`` — string; ``answer`` — the expected answer (string or number);
  ``question_date`` — string.
* ``haystack_session_ids`` — list of session ids (strings), parallel to
* ``haystack_dates`` — list of timestamps (strings), and to
* ``haystack_sessions`` — list of sessions, each a list of turns
  ``{"role": "user" | "assistant", "content": string}``; turns holding the evidence
  also carry ``"has_answer": true`` (turn-level recall labels).
* ``answer_session_ids`` — list of the evidence sessions' ids (session-level labels).

The same session id can recur in several instances' haystacks; each instance is its
own Memory here, so it is written once per instance.

Mapping:

* Memory ``<question_id>``; with ``granularity="turn"`` (default) one entry per turn,
  id ``<question_id>:<session_id>:<turn index>``, text ``<role>: <content>``; with
  ``granularity="session"`` one entry per session, id ``<question_id>:<session_id>``,
  its turns as ``<role>: <content>`` lines. Texts over the service's 8 KiB limit are
  split into parts (sessions usually are). Every entry cites the source
  ``<session_id>``; ``meta`` holds the session id, date and turn index.
* Answerable questions → queries tagged with their ``question_type``. Turn
  granularity: each ``has_answer`` turn is judged grade 3; an answer session with no
  marked turn has all its turns judged grade 1 (relevant session, evidence turn
  unknown). Session granularity: every entry of an answer session is judged grade 3
  if it contains a marked turn or the session has none marked, else grade 1 (a part of
  an answer session without the evidence). Answer session ids missing from the
  haystack are dropped (counted).
* Abstention questions (``_abs``) → negatives tagged ``abstention`` and the type, no
  judgement (empty ideal answer).
"""

from __future__ import annotations

from pathlib import Path

from .common import CorpusBuilder, Datasheet, ImporterError, LayoutError, need, read_json

__all__ = ["GRANULARITIES", "import_longmemeval"]

GRANULARITIES = ("turn", "session")


def _turns(session: list, file: Path, where: str) -> list[tuple[str, str, bool]]:
    out = []
    for t, turn in enumerate(session):
        at = f"{where}[{t}]"
        role = need(turn, "role", file, at, str)
        content = need(turn, "content", file, at, str)
        out.append((role, content, turn.get("has_answer") is True))
    return out


def import_longmemeval(src: str | Path, out: str | Path, granularity: str = "turn", force: bool = False) -> Path:
    """Import a LongMemEval JSON file into the corpus folder ``out`` (see the module docstring)."""
    if granularity not in GRANULARITIES:
        raise ImporterError(f"granularity must be one of {', '.join(GRANULARITIES)}, got {granularity!r}")
    file = Path(src)
    data = read_json(file)
    if not isinstance(data, list) or not data:
        raise LayoutError(f"{file.name}: expected a non-empty JSON list of instances, got {type(data).__name__}")
    build = CorpusBuilder()
    abstentions = missing_sessions = unjudged = unmarked = 0
    types: set[str] = set()
    for i, instance in enumerate(data):
        where = f"[{i}]"
        qid = need(instance, "question_id", file, where, str)
        qtype = need(instance, "question_type", file, where, str)
        question = need(instance, "question", file, where, (str, int))
        session_ids = need(instance, "haystack_session_ids", file, where, list)
        sessions = need(instance, "haystack_sessions", file, where, list)
        dates = instance.get("haystack_dates") if isinstance(instance.get("haystack_dates"), list) else []
        answers = need(instance, "answer_session_ids", file, where, list)
        if len(session_ids) != len(sessions):
            raise LayoutError(f"{file.name}: {where}: haystack_session_ids has {len(session_ids)} ids but "
                              f"haystack_sessions has {len(sessions)} sessions")
        memory = qid
        types.add(qtype)
        entries_of: dict[str, list[tuple[list[str], bool]]] = {}  # session id -> (entry ids, holds evidence)
        for s, (sid, session) in enumerate(zip(session_ids, sessions)):
            at = f"{where}.haystack_sessions[{s}]"
            if not isinstance(session, list):
                raise LayoutError(f"{file.name}: {at}: expected a list of turns, got {type(session).__name__}")
            sid = str(sid)
            date = dates[s] if s < len(dates) and isinstance(dates[s], str) else None
            turns = _turns(session, file, at)
            meta = {"session_id": sid, **({"date": date} if date else {})}
            if granularity == "turn":
                entries_of[sid] = [
                    (build.entry(f"{qid}:{sid}:{t}", memory, f"{role}: {content}", sources=[sid],
                                 meta={**meta, "turn": t}), marked)
                    for t, (role, content, marked) in enumerate(turns)]
            else:
                entries_of[sid] = _session_entries(build, qid, sid, memory, turns, meta)
        meta = {"question_type": qtype, "answer": instance.get("answer"), "question_date": instance.get("question_date")}
        if qid.endswith("_abs"):
            build.query(qid, str(question), [memory], tags=["abstention", qtype], lang="en", meta=meta)
            abstentions += 1
            continue
        key = build.query(qid, str(question), [memory], tags=[qtype], lang="en", meta=meta)
        for sid in map(str, answers):
            if sid not in entries_of:
                missing_sessions += 1
                continue
            parts = entries_of[sid]
            if any(marked for _, marked in parts):
                for ids, marked in parts:
                    if marked:
                        build.judge(key, ids, 3)
                    elif granularity == "session":  # a part of the answer session without the evidence
                        build.judge(key, ids, 1)
            else:
                unmarked += 1
                for ids, _ in parts:
                    build.judge(key, ids, 3 if granularity == "session" else 1)
        if not build.judged(key):
            build.drop_query(key)
            unjudged += 1
    sheet = Datasheet(
        title=f"LongMemEval ({Path(out).name})",
        origin="LongMemEval: Wu et al., Benchmarking Chat Assistants on Long-Term Interactive Memory, ICLR 2025 "
               "(https://github.com/xiaowu0162/LongMemEval)",
        licence="MIT",
        source=str(file),
        mapping=[
            f"{len(data)} instances → one Memory per question (its haystack), entries per {granularity}: "
            "`<role>: <content>`, source `<session_id>`",
            "answerable questions → queries tagged with their question_type ("
            + ", ".join(f"`{t}`" for t in sorted(types)) + ")",
            ("`has_answer` turns judged grade 3; all turns of an answer session without marked turns grade 1"
             if granularity == "turn" else
             "entries of answer sessions judged grade 3 where they hold a `has_answer` turn (or none is marked), "
             "else grade 1"),
            f"{abstentions} abstention questions (`_abs`) → negatives tagged `abstention` (empty ideal answer)",
            "no split: the harness assigns a seeded stratified one, or cross-validates when there are few queries",
        ],
        notes=[n for n in (
            f"{missing_sessions} answer session id(s) were not in their haystack and were dropped"
            if missing_sessions else "",
            f"{unmarked} answer session(s) had no `has_answer` turn" if unmarked else "",
            f"{unjudged} answerable question(s) had no judgeable entry and were not imported" if unjudged else "",
        ) if n],
    )
    return build.write(Path(out), sheet, force=force)


def _session_entries(build: CorpusBuilder, qid: str, sid: str, memory: str, turns, meta) -> list[tuple[list[str], bool]]:
    """A session as entries: its turns as lines, cut between turns when the text would
    pass the service's limit (``build.entry`` cuts a single over-long turn further)."""
    from powercontext.backends.rules import MAX_TEXT_BYTES

    chunks: list[list[tuple[str, bool]]] = [[]]
    size = 0
    for role, content, marked in turns:
        line = f"{role}: {content}"
        n = len(line.encode("utf-8")) + 1
        if chunks[-1] and size + n > MAX_TEXT_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append((line, marked))
        size += n
    out = []
    for c, chunk in enumerate(chunks):
        key = f"{qid}:{sid}" if len(chunks) == 1 else f"{qid}:{sid}.c{c + 1}"
        ids = build.entry(key, memory, "\n".join(line for line, _ in chunk), sources=[sid],
                          meta={**meta, **({"chunk": f"{c + 1}/{len(chunks)}"} if len(chunks) > 1 else {})})
        out.append((ids, any(marked for _, marked in chunk)))
    return out
