"""LoCoMo-10 (``locomo10.json``) → one Memory per conversation, one entry per dialog turn.

Upstream: Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents" (ACL 2024), https://github.com/snap-research/locomo, file ``data/locomo10.json``
(shipped zipped). Licence: CC BY-NC 4.0. Ten conversations between two named speakers,
19–32 dated sessions and 369–689 turns each, 1,986 questions.

Upstream layout, field by field (what this importer reads; anything else is ignored):

``locomo10.json``: a JSON list, one object per conversation (a "sample"):

* ``sample_id`` — string such as ``"conv-26"`` (a number in some copies): the
  conversation's id.
* ``conversation`` — object:

  * ``speaker_a``, ``speaker_b`` — the two speakers' names (strings);
  * ``session_<N>`` — list of turns of session N (N = 1, 2, …; numbering may skip);
  * ``session_<N>_date_time`` — string, when session N took place
    (``"1:56 pm on 8 May, 2023"``).

  A turn is an object with ``speaker`` (name), ``dia_id`` (``"D<session>:<turn>"``,
  the id evidence refers to) and ``text``; image turns also carry ``img_url`` (list of
  URLs), ``blip_caption`` (an automatic caption) and ``query`` (the image search query).
* ``qa`` — list of question objects: ``question`` (string), ``answer`` (string or
  number; absent on most category-5 rows), ``evidence`` (list of ``dia_id`` strings;
  a few hold several ids in one string, ``"D8:6; D9:17"``), ``category`` (integer 1–5),
  ``adversarial_answer`` (category 5: the tempting wrong answer).

  The dataset stores categories only as integers; the commonly used reading (also of
  the official scorer, which treats 5 as "must decline") is 1 multi-hop, 2 temporal,
  3 open-domain, 4 single-hop, 5 adversarial.
* ``observation``, ``session_summary``, ``event_summary`` — derived annotations; not
  imported.

Mapping:

* Memory ``<sample_id>``; one entry per turn, id ``<sample_id>:<dia_id>``, text
  ``<speaker>: <text>`` (plus ``[photo: <blip_caption>]`` when the turn shares an
  image, because some questions are answerable only from it), source
  ``<sample_id>:session_<N>`` (so identical words in different sessions stay distinct
  entries), ``meta`` = dia_id, session number and date.
* Questions of categories 1–4 → queries tagged ``category-<c>``, every evidence turn
  judged grade 3. Evidence ids that name no turn are dropped (the datasheet counts
  them); a question left without any evidence is not imported.
* Category 5 (adversarial) → a negative: tagged ``category-5`` and ``adversarial``, no
  judgement (its ideal answer is empty).
* Cross-conversation negatives: ``cross`` questions per conversation (default 5) are
  taken from the NEXT conversation's answerable questions (evenly spaced, in file
  order) and asked of this one's Memory, tagged ``cross-conversation`` with no
  judgement. Their ideal answer is empty because LoCoMo questions name the asking
  conversation's speakers, who never appear in another conversation.
* Every query has ``lang`` ``en``; the question's answer and category go to ``meta``.
"""

from __future__ import annotations

import re
from pathlib import Path

from .common import CorpusBuilder, Datasheet, LayoutError, need, read_json

__all__ = ["import_locomo"]

_SESSION = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D\d+:\d+")


def _sessions(conversation: dict, file: Path, where: str) -> list[tuple[int, list, str | None]]:
    out = []
    for key, turns in conversation.items():
        m = _SESSION.fullmatch(key)
        if not m:
            continue
        if not isinstance(turns, list):
            raise LayoutError(f"{file.name}: {where}.conversation: field '{key}' must be a list, got {type(turns).__name__}")
        date = conversation.get(f"{key}_date_time")
        out.append((int(m.group(1)), turns, date if isinstance(date, str) else None))
    if not out:
        raise LayoutError(f"{file.name}: {where}.conversation: missing field 'session_1'")
    return sorted(out)


def import_locomo(src: str | Path, out: str | Path, cross: int = 5, force: bool = False) -> Path:
    """Import ``locomo10.json`` into the corpus folder ``out`` (see the module docstring)."""
    file = Path(src)
    if file.is_dir():
        file = file / "locomo10.json"
    data = read_json(file)
    if not isinstance(data, list) or not data:
        raise LayoutError(f"{file.name}: expected a non-empty JSON list of conversations, got {type(data).__name__}")
    build = CorpusBuilder()
    answerable: list[list[tuple[str, dict]]] = []  # per conversation: (question, qa) it can lend as a negative
    memories: list[str] = []
    dropped_evidence = unanswerable = 0
    turns_total = 0
    for i, sample in enumerate(data):
        where = f"[{i}]"
        sample_id = str(need(sample, "sample_id", file, where, (str, int)))
        conversation = need(sample, "conversation", file, where, dict)
        for speaker in ("speaker_a", "speaker_b"):
            need(conversation, speaker, file, f"{where}.conversation", str)
        qa = need(sample, "qa", file, where, list)
        memory = sample_id
        memories.append(memory)
        for number, turns, date in _sessions(conversation, file, where):
            for t, turn in enumerate(turns):
                at = f"{where}.conversation.session_{number}[{t}]"
                speaker = need(turn, "speaker", file, at, str)
                dia_id = need(turn, "dia_id", file, at, str)
                text = need(turn, "text", file, at, str)
                caption = turn.get("blip_caption")
                if isinstance(caption, str) and caption.strip():
                    text = f"{text} [photo: {caption.strip()}]"
                meta = {"dia_id": dia_id, "session": number, **({"date_time": date} if date else {})}
                build.entry(f"{sample_id}:{dia_id}", memory, f"{speaker}: {text}",
                            sources=[f"{sample_id}:session_{number}"], meta=meta)
                turns_total += 1
        lendable = []
        for n, row in enumerate(qa):
            at = f"{where}.qa[{n}]"
            question = need(row, "question", file, at, str)
            category = need(row, "category", file, at, int)
            meta = {"category": category}
            for key in ("answer", "adversarial_answer"):
                if key in row:
                    meta[key] = row[key]
            key = f"{sample_id}:q{n + 1:03d}"
            if not question.strip():
                unanswerable += 1
                continue
            if category == 5:
                build.query(key, question, [memory], tags=["category-5", "adversarial"], lang="en", meta=meta)
                continue
            evidence = need(row, "evidence", file, at, list)
            dia_ids = [d for e in evidence if isinstance(e, str) for d in _DIA_ID.findall(e)]
            judged = []
            for dia_id in dia_ids:
                ids = build.ids_of(f"{sample_id}:{dia_id}")
                if ids is None:
                    dropped_evidence += 1
                else:
                    judged += ids
            if not judged:
                unanswerable += 1
                continue
            qid = build.query(key, question, [memory], tags=[f"category-{category}"], lang="en", meta=meta)
            build.judge(qid, judged, 3)
            lendable.append((question, meta))
        answerable.append(lendable)
    crossed = 0
    if len(memories) > 1 and cross > 0:
        for i, memory in enumerate(memories):
            donor = (i + 1) % len(memories)
            pool = answerable[donor]
            step = max(1, len(pool) // cross)
            for k, (question, meta) in enumerate(pool[::step][:cross]):
                build.query(f"{memory}:x{k + 1:02d}", question, [memory], tags=["cross-conversation"], lang="en",
                            meta={**meta, "asked_of": memory, "from": memories[donor]})
                crossed += 1
    entries, queries = build.counts
    sheet = Datasheet(
        title=f"LoCoMo ({Path(out).name})",
        origin="LoCoMo-10: Maharana et al., Evaluating Very Long-Term Conversational Memory of LLM Agents, ACL 2024 "
               "(https://github.com/snap-research/locomo, data/locomo10.json)",
        licence="CC BY-NC 4.0 (non-commercial; attribution required)",
        source=str(file),
        mapping=[
            f"{len(memories)} conversations → one Memory each (named by `sample_id`); {turns_total} dialog turns → "
            "entries `<speaker>: <text>` (a shared photo's BLIP caption appended), source `<sample_id>:session_<N>`",
            "questions of categories 1–4 → queries tagged `category-<c>`, each evidence turn judged grade 3",
            "category 5 (adversarial) → negatives tagged `adversarial` (empty ideal answer)",
            f"{crossed} cross-conversation negatives: answerable questions of the next conversation asked of this "
            "one (tagged `cross-conversation`)",
            "no split: the harness assigns a seeded stratified one, or cross-validates when there are few queries",
        ],
        notes=[n for n in (
            f"{dropped_evidence} evidence id(s) named no turn and were dropped" if dropped_evidence else "",
            f"{unanswerable} question(s) had no usable evidence (or no text) and were not imported"
            if unanswerable else "",
        ) if n],
    )
    return build.write(Path(out), sheet, force=force)
