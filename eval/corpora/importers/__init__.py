"""Importers: public memory and retrieval benchmarks → corpora in our format.

    python -m powercontext.eval import locomo locomo10.json corpora/locomo
    python -m powercontext.eval import longmemeval longmemeval_s.json corpora/lme --granularity session
    python -m powercontext.eval import beir ~/beir/scifact corpora/scifact --splits dev,test
    python -m powercontext.eval import trec ~/robust04 corpora/robust04 --field description

One module per upstream format; each documents the upstream layout field by field and
how it maps (``locomo``, ``longmemeval``, ``beir``, ``trec``). Nothing is downloaded:
the source is a file or folder you obtained under the dataset's licence, and the
written folder carries a datasheet stub stating origin and licence. ``common`` holds
what they share (layout errors that name the file and the first missing field, the
builder that keeps datasets/FORMAT.md's rules, the datasheet stub).
"""

from __future__ import annotations

from .beir import import_beir
from .common import ImporterError, LayoutError
from .locomo import import_locomo
from .longmemeval import import_longmemeval
from .trec import import_trec

__all__ = ["FORMATS", "ImporterError", "LayoutError", "import_beir", "import_locomo", "import_longmemeval",
           "import_trec"]

FORMATS = {
    "locomo": import_locomo,
    "longmemeval": import_longmemeval,
    "beir": import_beir,
    "trec": import_trec,
}
