"""Generated counts for corpus datasheets.

    python -m powercontext.eval.corpora.datasheet datasets/<corpus> [--check]

rewrites the section between ``<!-- counts:begin -->`` and ``<!-- counts:end -->`` of
``datasets/<corpus>/README.md``; with ``--check`` it changes nothing and exits 1 if
the section is out of date. Counts are generated, never typed, because a datasheet
whose numbers drift from its data misleads exactly the reader who trusts it.
``totals()`` sums the counts over every bundled corpus for reports. The counting
itself, and ``shortfalls()`` against the per-corpus targets of datasets/FORMAT.md (part
of the ``--style bundled`` check), live in ``counts``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from .counts import BEGIN, END, Counts, counts, render, shortfalls, with_counts  # noqa: F401  (public names here too)
from .datasets import DatasetError, discover, validate

__all__ = ["BEGIN", "END", "Counts", "counts", "main", "render", "shortfalls", "totals", "update_readme"]


def totals(root: str | Path = "datasets", paths: Iterable[str | Path] | None = None) -> Counts:
    """Counts summed over the corpora in ``paths`` (default: every corpus under ``root``)."""
    result = Counts()
    for path in discover(root) if paths is None else paths:
        result = result + counts(validate(path))
    return result


def update_readme(corpus_path: str | Path, *, check: bool = False) -> bool:
    """Regenerate the counts section of ``<corpus>/README.md``. Returns True if the
    section was out of date (and, unless ``check``, has now been rewritten)."""
    corpus = validate(corpus_path)
    readme = Path(corpus_path) / "README.md"
    text = readme.read_text(encoding="utf-8")
    try:
        new = with_counts(text, corpus)
    except ValueError as exc:
        raise ValueError(f"{readme}: {exc}") from None
    if new == text:
        return False
    if not check:
        readme.write_text(new, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m powercontext.eval.corpora.datasheet",
        description="Regenerate the counts section of corpus datasheets (README.md).",
    )
    parser.add_argument(
        "corpora", nargs="+", type=Path, help="corpus folders, e.g. datasets/atlas-etl"
    )
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if a README is out of date"
    )
    args = parser.parse_args(argv)
    status = 0
    for path in args.corpora:
        try:
            stale = update_readme(path, check=args.check)
        except (DatasetError, ValueError, OSError) as exc:
            print(exc, file=sys.stderr)
            status = 2
            continue
        if stale and args.check:
            print(f"{path}/README.md: counts out of date; "
                  f"run python -m powercontext.eval.corpora.datasheet {path}")
            status = max(status, 1)
        else:
            print(f"{path}/README.md: {'updated' if stale else 'up to date'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
