"""Upstream files for the importers' fuzz (test_entry_points.test_importers_cli): the
real fixtures of each format, copies holding a lone surrogate (issue 43, item 12), and
files no importer can read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def importer_sources(folder: Path) -> dict[str, list[str]]:
    """Upstream files and folders per format: the real fixtures, the fixtures with a
    lone surrogate where each keeps its texts, and broken files."""

    fixtures = Path(__file__).resolve().parents[1] / "eval" / "fixtures"
    folder.mkdir()
    broken = {
        "not-utf8.json": b"\xff\xfe caf\xe9", "nested.json": b"[" * 50_000 + b"]" * 50_000, "empty.json": b"",
        "surrogate.json": json.dumps([{"question_id": "q\ud800", "question": "what \ud800?"}]).encode(),
        "list.json": b"[1, 2, 3]", "null.json": b"null",
    }
    for name, data in broken.items():
        (folder / name).write_bytes(data)
    beir = folder / "beir-nan"
    shutil.copytree(fixtures / "beir" / "minifact", beir)
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t4983\tnan\n")
    common = [str(folder / n) for n in broken] + [str(folder / "missing"), str(folder)]
    # The real fixtures with a lone surrogate (JSON's \ud800 escape) where each format
    # keeps its texts: a LoCoMo turn, its speaker, a question; a LongMemEval turn.
    locomo = json.loads((fixtures / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    conversation = locomo[0]["conversation"]
    turns = next(v for k, v in conversation.items() if k.startswith("session_") and isinstance(v, list))
    turns[0]["text"] += " \ud800"
    (folder / "locomo-turn.json").write_text(json.dumps(locomo), encoding="utf-8")
    turns[0]["text"] = turns[0]["text"][:-2]
    conversation["speaker_a"] += "\udfff"
    (folder / "locomo-speaker.json").write_text(json.dumps(locomo), encoding="utf-8")
    conversation["speaker_a"] = conversation["speaker_a"][:-1]
    locomo[0]["qa"][0]["question"] += "\ud800"
    (folder / "locomo-question.json").write_text(json.dumps(locomo), encoding="utf-8")
    longmemeval = json.loads((fixtures / "longmemeval" / "longmemeval_s.json").read_text(encoding="utf-8"))
    longmemeval[0]["haystack_sessions"][0][0]["content"] += "\ud800"
    (folder / "longmemeval-turn.json").write_text(json.dumps(longmemeval), encoding="utf-8")
    return {
        "locomo": [str(fixtures / "locomo" / "locomo10.json"), *(str(folder / f"locomo-{n}.json")
                                                               for n in ("turn", "speaker", "question")), *common],
        "longmemeval": [str(fixtures / "longmemeval" / "longmemeval_s.json"), str(folder / "longmemeval-turn.json"),
                        *common],
        "beir": [str(fixtures / "beir" / "minifact"), str(beir), *common],
        "trec": [str(fixtures / "trec" / "sgml"), str(fixtures / "trec" / "xml"), *common],
    }
