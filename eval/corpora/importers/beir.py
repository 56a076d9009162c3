"""A BEIR dataset folder → one Memory holding the whole collection.

Upstream: Thakur et al., "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of
Information Retrieval Models" (NeurIPS 2021 Datasets and Benchmarks),
https://github.com/beir-cellar/beir. Licences differ per dataset (each dataset's card
states its own); the datasheet stub asks you to fill it in.

Upstream layout, field by field (one folder per dataset, e.g. ``scifact/``):

* ``corpus.jsonl`` — one JSON object per line: ``_id`` (document id, string),
  ``title`` (string, may be empty or absent), ``text`` (the passage), optionally
  ``metadata`` (object; ignored).
* ``queries.jsonl`` — one JSON object per line: ``_id`` (query id), ``text`` (the
  query), optionally ``metadata`` (ignored). It holds the queries of every split.
* ``qrels/<split>.tsv`` — ``<split>`` is ``train``, ``dev`` or ``test``; tab-separated
  with a header row ``query-id  corpus-id  score`` followed by one judgement per row
  (``score`` an integer; 0 = judged not relevant).

Mapping:

* One Memory (named ``memory``, default ``corpus``); every document with text → an
  entry, id ``_id``, text ``title`` + blank line + ``text`` (just ``text`` without a
  title). Documents over the service's 8 KiB limit are split into parts.
* The queries that appear in the chosen qrels files (``splits``, default ``test``) →
  queries searching that Memory; rows with score ≥ 1 → judgements of that grade; rows
  with score 0 are dropped (a query left with none is not imported: BEIR judges only
  some documents, so "nothing relevant" is not known). With several qrels files the
  BEIR split names ``dev`` and ``test`` become our splits (``train`` is refused; a
  query in two files keeps the first).
* BEIR has no negatives: the false-admission rate of such a corpus is undefined, and
  the recommendation's bound cannot be checked on it (the report says so).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Sequence

from .common import CorpusBuilder, Datasheet, ImporterError, LayoutError, add_graded_queries, need, read_jsonl, reading

__all__ = ["import_beir"]

QRELS_HEADER = ("query-id", "corpus-id", "score")


def read_qrels_tsv(path: Path) -> list[tuple[str, str, int]]:
    """Rows of a BEIR qrels TSV (header checked)."""
    if not path.is_file():
        raise LayoutError(f"{path}: file missing")
    rows = []
    with reading(path), path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header[:3]) != QRELS_HEADER:
            raise LayoutError(f"qrels/{path.name}:1: expected the header row 'query-id\\tcorpus-id\\tscore', "
                              f"got {header!r}")
        for n, row in enumerate(reader, start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3:
                raise LayoutError(f"qrels/{path.name}:{n}: missing field 'score' (expected 3 tab-separated columns)")
            try:
                score = float(row[2])
            except ValueError as exc:
                raise LayoutError(f"qrels/{path.name}:{n}: field 'score' must be an integer, got {row[2]!r}") from exc
            if not math.isfinite(score) or score != int(score):
                raise LayoutError(f"qrels/{path.name}:{n}: field 'score' must be an integer, got {row[2]!r}")
            rows.append((row[0].strip(), row[1].strip(), int(score)))
    return rows


def import_beir(src: str | Path, out: str | Path, splits: Sequence[str] = ("test",), memory: str = "corpus",
                force: bool = False) -> Path:
    """Import a BEIR dataset folder into the corpus folder ``out`` (see the module docstring)."""
    folder = Path(src)
    if not folder.is_dir():
        raise LayoutError(f"{folder}: not a folder (expected corpus.jsonl, queries.jsonl and qrels/<split>.tsv)")
    splits = tuple(splits)
    if "train" in splits:
        raise ImporterError("qrels/train.tsv is training data: import dev and/or test")
    qrels = {split: read_qrels_tsv(folder / "qrels" / f"{split}.tsv") for split in splits}
    build = CorpusBuilder()
    docs = 0
    for n, obj in read_jsonl(folder / "corpus.jsonl"):
        where = f"line {n}"
        doc_id = str(need(obj, "_id", folder / "corpus.jsonl", where, (str, int)))
        text = need(obj, "text", folder / "corpus.jsonl", where, str)
        title = obj.get("title") if isinstance(obj.get("title"), str) else ""
        build.entry(doc_id, memory, f"{title.strip()}\n\n{text}" if title.strip() else text)
        docs += 1
    wanted = {qid for rows in qrels.values() for qid, _, _ in rows}
    texts: dict[str, str] = {}
    for n, obj in read_jsonl(folder / "queries.jsonl"):
        qid = str(need(obj, "_id", folder / "queries.jsonl", f"line {n}", (str, int)))
        if qid in wanted:
            texts[qid] = need(obj, "text", folder / "queries.jsonl", f"line {n}", str)
    split_of: dict[str, str] = {}
    rows = []
    for split, judged in qrels.items():
        for qid, doc_id, score in judged:
            if split_of.setdefault(qid, split) == split:  # a query judged in an earlier split file keeps that one
                rows.append((qid, doc_id, score))
    keys, left_out = add_graded_queries(build, rows, texts, memory, {q: {"beir_split": s} for q, s in split_of.items()})
    if len(splits) > 1:
        build.set_splits({keys[q]: split_of[q] for q in keys})
    sheet = Datasheet(
        title=f"BEIR {folder.name}",
        origin=f"BEIR dataset `{folder.name}`: Thakur et al., BEIR, NeurIPS 2021 Datasets and Benchmarks "
               "(https://github.com/beir-cellar/beir)",
        licence="the licence of this BEIR dataset (see its dataset card) — fill in before sharing",
        source=str(folder),
        mapping=[
            f"{docs} documents of corpus.jsonl → entries of one Memory `{memory}` (title, blank line, text)",
            f"queries judged in {' and '.join(f'qrels/{s}.tsv' for s in splits)} → queries; scores ≥ 1 → grades",
            ("BEIR's dev/test qrels files → our dev/test split" if len(splits) > 1 else
             "no split: the harness assigns a seeded stratified one, or cross-validates when there are few queries"),
            "no negatives (BEIR judges only relevant documents): false admission is undefined on this corpus",
        ],
        notes=left_out.notes("quer(ies)", "score", "corpus.jsonl", "queries.jsonl"),
    )
    return build.write(Path(out), sheet, force=force)
