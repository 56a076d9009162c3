"""The HTML building blocks of report.html: a section, a table that scrolls sideways
inside the page and folds when long, p-values at the tests' resolution, a small
mapping as a two-column table, an embedded figure. ``report`` assembles the page
from them; they hold no knowledge of a sweep."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .plots import Png

__all__ = ["COLLAPSE_ROWS", "Section", "details", "fmt_p", "image", "key_values", "table"]


@dataclass(frozen=True)
class Section:
    """One ``<h2>`` section of report.html; the table of contents lists every one."""

    id: str
    title: str
    body: str


#: Tables longer than this fold into a <details> that says how many rows it holds.
COLLAPSE_ROWS = 20


def fmt_p(p: Any) -> str:
    """A p-value as text: ``<1e-4`` below the resolution the tests report, else 4 decimals."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "<1e-4" if p < 1e-4 else f"{p:.4f}"


def details(summary: str, body: str) -> str:
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def table(df: pd.DataFrame | None, digits: int = 3, *, p_columns: tuple[str, ...] = ("p_value",),
          collapse: int | None = COLLAPSE_ROWS, what: str = "rows") -> str:
    """An escaped table in a box that scrolls sideways instead of widening the page;
    longer than ``collapse`` rows, it is folded (``what`` names the rows)."""
    if df is None or df.empty:
        return "<p><em>none</em></p>"
    df = df.copy()
    for col in df.columns:
        if col in p_columns:
            df[col] = df[col].map(fmt_p)
        elif df[col].dtype.kind == "f":
            df[col] = df[col].map(lambda v: "" if pd.isna(v) else f"{v:.{digits}f}")
        elif df[col].map(lambda v: isinstance(v, (tuple, list))).any():
            df[col] = df[col].map(lambda v: " ".join(map(str, v)) if isinstance(v, (tuple, list)) else v)
    body = f"<div class='scroll'>{df.to_html(index=False, escape=True, border=0, classes='t', na_rep='')}</div>"
    if collapse is not None and len(df) > collapse:
        return details(f"{len(df)} {what} (click to show)", body)
    return body


def key_values(values: dict[str, Any]) -> str:
    """A two-column table for a small mapping (never a raw dict dump)."""
    frame = pd.DataFrame({"field": list(values), "value": [_plain(v) for v in values.values()]})
    return table(frame, collapse=None)


def _plain(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) >= 0.01 or v == 0 else f"{v:.2e}"
    return str(v)


def image(plot: Png, alt: str) -> str:
    return f"<img src='{plot.uri}' width='{plot.width}' alt='{html.escape(alt, quote=True)}'>"
