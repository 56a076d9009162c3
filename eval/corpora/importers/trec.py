"""A TREC-style test collection (qrels + topics + a JSONL or TSV collection) → one Memory.

TREC (https://trec.nist.gov) tracks ship three things; licences differ per
collection (the documents are often licensed separately from the topics and qrels), so
the datasheet stub asks you to fill it in.

Upstream layouts, field by field:

* **qrels** — whitespace-separated lines ``<topic id> <iteration> <docno> <relevance>``
  (the iteration column is unused and usually 0; relevance an integer, 0 = judged not
  relevant, some tracks use negative values for spam or junk).
* **topics**, one of three layouts (detected from the content):

  * classic SGML: ``<top>`` … ``</top>`` blocks holding ``<num> Number: 301``,
    ``<title>`` (older tracks prefix it with ``Topic:``), ``<desc> Description:``
    and ``<narr> Narrative:``, each running to the next tag (no closing tags);
  * XML (TREC-COVID, Web track): ``<topic number="1">`` elements with children
    ``<query>``, ``<question>`` or ``<description>``, and ``<narrative>``;
  * TSV (TREC Deep Learning, MS MARCO): ``<topic id>\\t<query text>`` per line.

  ``field`` picks the text: ``title`` (SGML ``<title>``, XML ``<query>``, the TSV
  text; default) or ``description`` (``<desc>``, ``<question>``/``<description>``).
* **collection**, one of:

  * JSONL (Pyserini's layout): one object per line with an id in ``id``, ``docid``,
    ``docno`` or ``_id`` and the text in ``contents``, ``text`` or ``body``, and an
    optional ``title``;
  * TSV: ``<docid>\\t<text>`` (MS MARCO passages), ``<docid>\\t<title>\\t<text>``, or
    ``<docid>\\t<url>\\t<title>\\t<body>`` (MS MARCO documents).

``src`` is a folder holding one file of each (found by name: ``qrels*``,
``topics*``/``queries*``, ``collection*``/``corpus*``/``docs*``), or give the three
paths explicitly.

Mapping: one Memory (``memory``, default ``collection``); every document with text →
an entry (title, blank line, text; over-long texts split into parts); every topic
with at least one judgement of relevance ≥ 1 → a query, those judgements → grades
(0 and negative ones are dropped; a topic with none is not imported: a TREC pool
judges only some documents, so "nothing relevant" is not known). No negatives, so
false admission is undefined on such a corpus. No split (the harness assigns one).
"""

from __future__ import annotations

import csv
import html
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from .common import CorpusBuilder, Datasheet, ImporterError, LayoutError, add_graded_queries, read_jsonl, reading

__all__ = ["FIELDS", "import_trec", "read_topics"]

FIELDS = ("title", "description")
ID_KEYS = ("id", "docid", "docno", "_id")
TEXT_KEYS = ("contents", "text", "body")
_SGML_TAG = re.compile(r"<(num|title|desc|narr)>", re.IGNORECASE)
_PREFIX = re.compile(r"^\s*(Number|Topic|Description|Narrative)\s*:\s*", re.IGNORECASE)


def _find(folder: Path, patterns: tuple[str, ...], what: str, option: str) -> Path:
    found = sorted({p for pattern in patterns for p in folder.glob(pattern) if p.is_file()})
    if len(found) != 1:
        listing = ", ".join(p.name for p in found) or "none"
        raise LayoutError(f"{folder}: expected one {what} file ({' or '.join(patterns)}), found {listing}; "
                          f"name it with {option}")
    return found[0]


def read_qrels(path: Path) -> list[tuple[str, str, int]]:
    if not path.is_file():
        raise LayoutError(f"{path}: file missing")
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            names = ("topic", "iteration", "docno", "relevance")
            what = f"missing field '{names[len(parts)]}'" if len(parts) < 4 else f"{len(parts)} columns"
            raise LayoutError(f"{path.name}:{n}: {what} (expected '<topic> <iteration> <docno> <relevance>')")
        try:
            grade = int(parts[3])
        except ValueError as exc:
            raise LayoutError(f"{path.name}:{n}: field 'relevance' must be an integer, got {parts[3]!r}") from exc
        rows.append((parts[0], parts[2], grade))
    return rows


def read_topics(path: Path, field: str = "title") -> dict[str, str]:
    """``{topic id: text}`` from SGML, XML or TSV topics (see the module docstring)."""
    if field not in FIELDS:
        raise ImporterError(f"field must be one of {', '.join(FIELDS)}, got {field!r}")
    if not path.is_file():
        raise LayoutError(f"{path}: file missing")
    text = path.read_text(encoding="utf-8", errors="replace")
    if re.search(r"<top>", text, re.IGNORECASE):
        return _sgml_topics(text, path.name, field)
    if re.search(r"<topic[\s>]", text):
        return _xml_topics(text, path.name, field)
    topics = {}
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = line.split("\t", 1)
        if len(parts) != 2 or not parts[1].strip():
            raise LayoutError(f"{path.name}:{n}: missing field 'query text' (expected '<topic id>\\t<text>', or "
                              "SGML <top> / XML <topic> topics)")
        topics[parts[0].strip()] = parts[1].strip()
    return topics


def _sgml_topics(text: str, name: str, field: str) -> dict[str, str]:
    tag = {"title": "title", "description": "desc"}[field]
    topics = {}
    for b, block in enumerate(re.findall(r"<top>(.*?)</top>", text, re.IGNORECASE | re.DOTALL)):
        pieces = _SGML_TAG.split(block)  # ["", tag, body, tag, body, ...]
        values = {pieces[i].lower(): _PREFIX.sub("", pieces[i + 1]).strip() for i in range(1, len(pieces) - 1, 2)}
        for needed in ("num", tag):
            if not values.get(needed):
                raise LayoutError(f"{name}: <top> block {b + 1}: missing field '<{needed}>'")
        topics[values["num"].split()[0]] = " ".join(values[tag].split())
    return topics


def _xml_topics(text: str, name: str, field: str) -> dict[str, str]:
    try:
        root = ET.fromstring(text if text.lstrip().startswith("<topics") else f"<topics>{text}</topics>")
    except ET.ParseError as exc:
        raise LayoutError(f"{name}: invalid XML topics ({exc})") from exc
    children = {"title": ("query", "title"), "description": ("question", "description", "desc")}[field]
    topics = {}
    for t, topic in enumerate(root.iter("topic")):
        number = topic.get("number") or topic.get("id")
        if not number:
            raise LayoutError(f"{name}: <topic> {t + 1}: missing field 'number'")
        node = next((topic.find(c) for c in children if topic.find(c) is not None), None)
        if node is None or not (node.text or "").strip():
            raise LayoutError(f"{name}: <topic number=\"{number}\">: missing field '<{children[0]}>'")
        topics[number.strip()] = " ".join(html.unescape(node.text).split())
    return topics


def read_collection(path: Path):
    """``(doc id, title, text)`` per document of a JSONL or TSV collection."""
    if not path.is_file():
        raise LayoutError(f"{path}: file missing")
    if path.suffix == ".jsonl":
        for n, obj in read_jsonl(path):
            id_key = next((k for k in ID_KEYS if k in obj), None)
            text_key = next((k for k in TEXT_KEYS if k in obj), None)
            if id_key is None or text_key is None:
                field = ID_KEYS[0] if id_key is None else TEXT_KEYS[0]
                keys = ID_KEYS if id_key is None else TEXT_KEYS
                raise LayoutError(f"{path.name}:{n}: missing field '{field}' (one of {', '.join(keys)})")
            title = obj.get("title") if isinstance(obj.get("title"), str) else ""
            yield str(obj[id_key]), title, str(obj[text_key])
        return
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    with reading(path), path.open(encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE), start=1):
            if not row or not "".join(row).strip():
                continue
            if len(row) == 2:
                yield row[0], "", row[1]
            elif len(row) == 3:
                yield row[0], row[1], row[2]
            elif len(row) == 4:
                yield row[0], row[2], row[3]
            else:
                raise LayoutError(f"{path.name}:{n}: missing field 'text' (expected '<docid>\\t<text>', "
                                  "'<docid>\\t<title>\\t<text>' or '<docid>\\t<url>\\t<title>\\t<body>')")


def import_trec(src: str | Path | None, out: str | Path, qrels: str | Path | None = None,
                topics: str | Path | None = None, collection: str | Path | None = None, field: str = "title",
                memory: str = "collection", force: bool = False) -> Path:
    """Import a TREC-style collection into the corpus folder ``out`` (see the module docstring)."""
    folder = Path(src) if src is not None else None
    if folder is not None and not folder.is_dir():
        raise LayoutError(f"{folder}: not a folder (expected qrels, topics and collection files in it)")

    def locate(given, patterns, what, option) -> Path:
        if given is not None:
            return Path(given)
        if folder is None:
            raise ImporterError(f"give the {what} file ({option}) or a folder that holds it")
        return _find(folder, patterns, what, option)

    qrels_path = locate(qrels, ("qrels*",), "qrels", "--qrels")
    topics_path = locate(topics, ("topics*", "queries*"), "topics", "--topics")
    collection_path = locate(collection, ("collection*.jsonl", "collection*.tsv", "corpus*.jsonl", "corpus*.tsv",
                                          "docs*.jsonl", "docs*.tsv"), "collection", "--collection")
    judgements = read_qrels(qrels_path)
    texts = read_topics(topics_path, field)
    build = CorpusBuilder()
    docs = 0
    for doc_id, title, text in read_collection(collection_path):
        build.entry(doc_id, memory, f"{title.strip()}\n\n{text}" if title.strip() else text)
        docs += 1
    _, left_out = add_graded_queries(build, judgements, texts, memory)
    sheet = Datasheet(
        title=f"TREC collection ({Path(out).name})",
        origin=f"a TREC-style test collection: qrels `{qrels_path.name}`, topics `{topics_path.name}` "
               f"({field} field), collection `{collection_path.name}`",
        licence="the licences of this collection's documents, topics and qrels — fill in before sharing",
        source=str(folder or collection_path.parent),
        mapping=[
            f"{docs} documents → entries of one Memory `{memory}` (title, blank line, text)",
            f"topics with a judgement of relevance ≥ 1 → queries (their {field}); relevance ≥ 1 → grades",
            "no negatives (a TREC pool judges only some documents): false admission is undefined on this corpus",
            "no split: the harness assigns a seeded stratified one, or cross-validates when there are few queries",
        ],
        notes=left_out.notes("topic(s)", "relevance", "the collection", "the topics file"),
    )
    return build.write(Path(out), sheet, force=force)
