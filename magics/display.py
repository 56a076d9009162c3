"""Rich and plain displays for MemoryRevision, MemorySearchResult and MemoryCitation.

``powercontext.model`` stays free of Jupyter code, so these are functions registered
with IPython's display formatters when the extension loads (``register_formatters``).
Every piece of user text is HTML-escaped; nothing shows vectors or analyzer tokens.
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Mapping

import pandas as pd

from powercontext import MemoryCitation, MemoryRevision, MemorySearchResult

from . import tables

__all__ = [
    "html_table", "result_summary", "explain_hint", "revision_html", "revision_text", "result_html", "result_text",
    "citation_html", "citation_text", "register_formatters", "HIGHLIGHT",
]

HASH = 12
#: Row background per change label (manifest diff / ManifestInspector).
HIGHLIGHT = {
    "added": "#e6ffed",
    "revised": "#fff5d6",
    "deactivated": "#ffe8e8",
    "reactivated": "#e8f0ff",
    "admitted": "#e6ffed",
    "rejected": "#f4f4f4",
}


def esc(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA:
        return ""
    return html.escape(str(value), quote=True)


#: A wrapped cell: long prose (a rejection reason, an entry's text) breaks over lines, even
#: inside a long token, so the table fits its container instead of running off the right.
WRAP_STYLE = "white-space:normal;overflow-wrap:anywhere;min-width:9em"


def html_table(frame: pd.DataFrame, row_labels: Mapping[int, str] | None = None, caption: str | None = None,
               *, clip: Mapping[str, int] | None = None, one_line: bool = False, wrap: Iterable[str] = (),
               empty: str = "no rows") -> str:
    """A small escaped HTML table. ``row_labels`` maps a row position to a label from
    HIGHLIGHT; the row gets that background and a ``data-label`` attribute.

    ``clip`` maps a column to a width: its cells show that many characters and carry
    the whole value in a ``title`` (hover) attribute. ``one_line`` keeps every row on
    one line (``white-space:nowrap``) except the ``wrap`` columns, whose cells wrap, and
    puts the table in a box that scrolls sideways rather than being cut off at the
    right. A frame without rows shows its header and one row saying ``empty``."""
    row_labels, clip, wrap = row_labels or {}, clip or {}, set(wrap)
    widths = [clip.get(str(c)) for c in frame.columns]
    nowrap = " style='white-space:nowrap'" if one_line else ""
    styles = [f" style='{WRAP_STYLE}'" if str(c) in wrap else nowrap for c in frame.columns]
    head = "".join(f"<th{nowrap}>{esc(c)}</th>" for c in frame.columns)
    body = []
    for i, row in enumerate(frame.itertuples(index=False)):
        label = row_labels.get(i)
        attrs = f' data-label="{esc(label)}" style="background:{HIGHLIGHT.get(label, "")}"' if label else ""
        cells = "".join(_cell(v, w, a) for v, w, a in zip(row, widths, styles, strict=True))
        body.append(f"<tr{attrs}>{cells}</tr>")
    if not body:
        body.append(f"<tr class='pcmem-empty'><td colspan='{max(len(frame.columns), 1)}'><i>{esc(empty)}</i></td></tr>")
    cap = f"<caption style='text-align:left'>{esc(caption)}</caption>" if caption else ""
    table = (
        f"<table class='pcmem-table'>{cap}<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    return f"<div class='pcmem-scroll' style='overflow-x:auto;max-width:100%'>{table}</div>" if one_line else table


def _cell(value: Any, width: int | None, attrs: str) -> str:
    text = esc(value)
    if width is None:
        return f"<td{attrs}>{text}</td>"
    shown = tables.preview(str(value) if text else "", width)
    return f'<td{attrs} title="{text}">{esc(shown)}</td>'


# ---------------------------------------------------------------------- Revision


def _revision_summary(rev: MemoryRevision) -> str:
    m = rev.manifest
    return f"{rev.ref} · {len(m.active)} active · {len(m.inactive)} inactive · hash {rev.content_hash[:HASH]}…"


def _changes_frame(rev: MemoryRevision) -> pd.DataFrame:
    rows = [
        {"op": c.op, "entry_id": c.entry_id, "from": c.from_entry_version_id or "",
         "to": c.to_entry_version_id or "", "reason": c.reason or ""}
        for c in rev.changes
    ]
    return pd.DataFrame(rows, columns=["op", "entry_id", "from", "to", "reason"])


def revision_html(rev: MemoryRevision) -> str:
    return (
        f"<div class='pcmem-revision'><b>MemoryRevision</b> {esc(_revision_summary(rev))}"
        f"{html_table(_changes_frame(rev), caption=f'{len(rev.changes)} changes in this Revision')}</div>"
    )


def revision_text(rev: MemoryRevision) -> str:
    lines = [f"MemoryRevision {_revision_summary(rev)}"]
    lines += [
        f"  {c.op:<10} {c.entry_id}" + (f"  reason={c.reason}" if c.reason else "")
        for c in rev.changes
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------- hits


def result_summary(res: MemorySearchResult) -> str:
    """``3 hits for 'query' · mode fts (requested auto) · why it fell back``."""
    mode = res.mode if res.mode == res.requested_mode else f"{res.mode} (requested {res.requested_mode})"
    n = len(res.hits)
    line = f"{n} hit{'' if n == 1 else 's'} for {res.query!r} · mode {mode}"
    if res.fallback_reason:
        line += f" · {res.fallback_reason}"
    return line


def explain_hint(res: MemorySearchResult, command: str) -> str:
    """What to run next when a search admitted nothing: the candidates retrieved are
    rejected silently unless asked, and "0 hits" alone reads like an empty Memory."""
    if res.hits or res.decisions:
        return ""
    return f"nothing admitted: `{command} --explain` lists every retrieved candidate and why it was rejected"


def result_html(res: MemorySearchResult) -> str:
    parts = [f"<div class='pcmem-hits'><b>MemorySearchResult</b> {esc(result_summary(res))}",
             html_table(tables.hits_frame(res))]
    if res.decisions:
        decisions = tables.decisions_frame(res.decisions, res.hits)
        labels = {i: "admitted" if ok else "rejected" for i, ok in enumerate(decisions["admitted"])}
        parts.append(html_table(decisions, labels, caption="every retrieved candidate"))
    return "".join(parts) + "</div>"


def result_text(res: MemorySearchResult) -> str:
    lines = [f"MemorySearchResult: {result_summary(res)}"]
    for rank, hit in enumerate(res.hits, start=1):
        channels = "+".join(hit.matched_by)
        lines.append(f"  {rank:>2}. {hit.score:.4f} {channels:<10} {hit.entry_id}  {tables.preview(hit.text, 60)}")
    for d in res.decisions:
        verdict = "admitted" if d.admitted else "rejected"
        lines.append(f"  [{d.candidate.channel} #{d.candidate.rank}] {verdict}: {d.reason} — {d.candidate.entry_id}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- citation


def _citation_summary(cite: MemoryCitation) -> str:
    digest = (cite.entry_content_hash or "")[:HASH]
    return f"{cite.memory_ref} · {cite.entry_id} · {cite.entry_version_id} · hash {digest}…"


def citation_html(cite: MemoryCitation) -> str:
    return f"<div class='pcmem-citation'><b>MemoryCitation</b> <code>{esc(_citation_summary(cite))}</code></div>"


def citation_text(cite: MemoryCitation) -> str:
    return f"MemoryCitation({_citation_summary(cite)})"


# ---------------------------------------------------------------------- registration

RENDERERS = (
    (MemoryRevision, revision_html, revision_text),
    (MemorySearchResult, result_html, result_text),
    (MemoryCitation, citation_html, citation_text),
)


def register_formatters(ip) -> None:
    """Register the HTML and plain-text displays with an IPython shell."""
    formatters = ip.display_formatter.formatters
    for cls, to_html, to_text in RENDERERS:
        formatters["text/html"].for_type(cls, to_html)
        formatters["text/plain"].for_type(cls, lambda obj, p, cycle, f=to_text: p.text(f(obj)))


def unregister_formatters(ip) -> None:
    formatters = ip.display_formatter.formatters
    for cls, _, _ in RENDERERS:
        for mime in ("text/html", "text/plain"):
            formatters[mime].pop(cls, None)
