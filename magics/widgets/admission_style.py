"""The AdmissionInspector's stylesheet: its tables fit a 1400–1500 px JupyterLab window.

Issue 45: the candidate tables have 13 columns; with every header on one line and the
wrapping columns at their minimum width they were wider than the output area, so the
last column, ``text``, sat outside the sideways-scrolling box: cut off. The stylesheet
is a hidden HTML child of the live view, scoped to the inspector's own classes; the
static fallback's HTML is left as it is (the executed notebooks store it and nbval
compares it), where scrolling sideways remains the answer.

Columns are picked by position, computed from the column lists in ``tables``, so a
column added there moves its rule with it.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from .. import tables

__all__ = ["ROOT", "HITS", "CANDIDATES", "stylesheet"]

#: Classes: on the inspector's VBox, on its hits table, on its two candidate tables.
ROOT, HITS, CANDIDATES = "pcmem-admission", "pcmem-admission-hits", "pcmem-admission-candidates"


def _nth(scope: str, cell: str, columns: Sequence[str], names: Iterable[str]) -> str:
    return ", ".join(f".{ROOT} .{scope} {cell}:nth-child({columns.index(n) + 1})" for n in names)


def stylesheet(wrap: Sequence[str]) -> str:
    """The ``<style>`` element; ``wrap`` names the columns whose cells wrap (prose and ids)."""
    narrow = [c for c in tables.DECISION_COLUMNS if c not in wrap]
    ids = [c for c in ("memory", "entry_id") if c in wrap]
    text = (f"{_nth(HITS, 'td', tables.HIT_COLUMNS, ['text'])}, "
            f"{_nth(CANDIDATES, 'td', tables.DECISION_COLUMNS, ['text'])}")
    return "<style>" + "\n".join([
        # A flex item keeps its content's one-line width as its minimum and would run past
        # the output area; let the HTML widget's content shrink to the room there is.
        f".{ROOT} .jupyter-widget-html-content, .{ROOT} .widget-html-content {{min-width: 0; max-width: 100%}}",
        f".{ROOT} table.pcmem-table {{width: 100%; line-height: 1.35}}",
        # The narrow columns (flags, counts, scores) were as wide as their headers
        # (channel_rank, query_terms …); the headers stand on their side instead, whole.
        f"{_nth(CANDIDATES, 'th', tables.DECISION_COLUMNS, narrow)} "
        "{writing-mode: vertical-rl; transform: rotate(180deg); text-align: left; vertical-align: bottom}",
        # Ids wrap in less room than prose needs.
        f"{_nth(CANDIDATES, 'td', tables.DECISION_COLUMNS, ids)} {{min-width: 7em !important}}",
        # The entry's text keeps room to be read, breaks anywhere (Chinese has no spaces)
        # and takes each entry's own direction (Hebrew, Arabic: right to left).
        f"{text} {{min-width: 14em !important; unicode-bidi: plaintext; text-align: start}}",
    ]) + "</style>"
