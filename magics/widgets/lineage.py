"""LineageExplorer: pick an entry, see its version timeline with evidence and the
reason of every change across the Memory's Revisions."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pandas as pd

from .. import tables
from ..display import esc, html_table
from ..reads import versions_of
from ..refs import resolve_memory
from ._base import ServiceWidget

__all__ = ["LineageExplorer"]

OP_LABELS = {"add": "added", "revise": "revised", "deactivate": "deactivated", "reactivate": "reactivated"}


class LineageExplorer(ServiceWidget):
    """``LineageExplorer(svc, memory)``: entries of the Memory's head (every state).

    State: ``entry`` (Dropdown of entry ids), ``timeline`` (HTML), ``frame`` (the
    DataFrame shown: revision, op, version, state, reason, kind, text, evidence),
    ``caption`` (the timeline's caption). Displayed without a live kernel it shows the
    caption and the timeline table."""

    def __init__(self, svc: Any, memory: Any, runner=None, *, width: int = 80, reopen: str | None = None) -> None:
        super().__init__(svc, runner, reopen=reopen)
        self.width = width
        self.head = self.run(resolve_memory(svc, memory))
        versions = self.run(versions_of(svc, self.head))
        self.history = self.run(svc.changes(self.head, since_revision=0))
        options = [
            (f"{item.entry_id} · {item.state} · {tables.preview(versions[item.entry_id].text, 40)}", item.entry_id)
            for item in self.head.manifest.entries
        ]
        self.entry = widgets.Dropdown(options=options, value=options[0][1] if options else None,
                                      description="Entry", layout=widgets.Layout(width="95%"))
        self.timeline = widgets.HTML()
        self.frame = pd.DataFrame()
        self.caption = ""
        self.entry.observe(self.action(self._refresh), names="value")
        self.children = [widgets.HTML(f"<b>{esc(self.head.ref)}</b>"), self.entry, self.timeline, self.status]
        self._refresh()

    def _refresh(self, _change: Any = None) -> None:
        entry_id = self.entry.value
        if entry_id is None:
            self.frame, self.timeline.value = pd.DataFrame(), "<i>this Memory has no entries</i>"
            self.caption = f"{self.head.ref}: no entries"
            return
        chain = self.run(self.svc.lineage(self.head, entry_id))
        self.frame = tables.lineage_frame(entry_id, chain, self.history, width=self.width)
        labels = {i: OP_LABELS.get(op, "") for i, op in enumerate(self.frame["op"])}
        self.caption = f"{entry_id}: {len(chain)} versions, {len(self.frame)} changes"
        self.timeline.value = html_table(self.frame, labels, caption=self.caption, wrap=("reason", "text"))
        self.show_done(f"the timeline of {entry_id}")

    def headline(self) -> str:
        return f"LineageExplorer({self.head.ref} · {self.caption})"

    def fallback_html(self) -> str:
        return f"<b>LineageExplorer</b> {esc(self.head.ref)}{self.timeline.value}{self.status.value}"
