"""ManifestInspector: browse a Memory's manifest Revision by Revision.

A slider picks the Revision, a toggle filters by state, and every row that changed
against the previous Revision (added, revised, deactivated, reactivated) is highlighted
and labelled in the ``change`` column.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pandas as pd

from powercontext import ArtifactRef

from .. import tables
from ..display import esc, html_table
from ..reads import versions_of
from ..refs import resolve_memory
from ._base import ServiceWidget

__all__ = ["ManifestInspector"]


class ManifestInspector(ServiceWidget):
    """``ManifestInspector(svc, memory)``; ``memory`` is a MemoryRevision, ArtifactRef
    or REF string (``ID@REV`` starts the slider at REV).

    State: ``revision`` (IntSlider), ``state`` (ToggleButtons), ``table`` (HTML),
    ``frame`` (the DataFrame shown, with a ``change`` column), ``caption`` (the title
    line as text). Displayed without a live kernel it shows the caption and the table."""

    def __init__(self, svc: Any, memory: Any, runner=None, *, width: int = 80, hash_width: int = 12,
                 reopen: str | None = None) -> None:
        super().__init__(svc, runner, reopen=reopen)
        self.width, self.hash_width = width, hash_width
        start = self.run(resolve_memory(svc, memory))
        self.artifact_id = start.artifact_id
        head = self.run(svc.head(self.artifact_id))
        self._cache: dict[int, tuple[Any, dict]] = {}
        self.revision = widgets.IntSlider(value=start.revision, min=1, max=head.revision, description="Revision",
                                          continuous_update=False)
        self.state = widgets.ToggleButtons(options=["all", "active", "inactive"], value="all", description="State")
        self.reload_button = widgets.Button(description="Reload head", icon="refresh")
        self.title = widgets.HTML()
        self.table = widgets.HTML()
        self.frame = pd.DataFrame()
        self.caption = ""
        self.revision.observe(self.action(self._refresh), names="value")
        self.state.observe(self.action(self._refresh), names="value")
        self.reload_button.on_click(self.action(lambda _: self.reload()))
        self.children = [widgets.HBox([self.revision, self.reload_button]), self.state, self.title, self.table, self.status]
        self._refresh()

    def _load(self, number: int) -> tuple[Any, dict]:
        if number not in self._cache:
            revision = self.run(self.svc.revision(ArtifactRef(self.artifact_id, number)))
            self._cache[number] = (revision, self.run(versions_of(self.svc, revision)))
        return self._cache[number]

    def reload(self) -> None:
        """Pick up Revisions written since the widget was created."""
        head = self.call(self.svc.head(self.artifact_id))
        if head is None:
            return
        new = head.revision - self.revision.max
        self.revision.max = head.revision
        self.show_done(f"reloaded: the head is Revision {head.revision}"
                       + (f" ({new} new; move the slider to see {'it' if new == 1 else 'them'})" if new
                          else " (no new Revisions)"))

    def _refresh(self, _change: Any = None) -> None:
        revision, versions = self._load(self.revision.value)
        previous = self._load(revision.revision - 1)[0] if revision.revision > 1 else None
        changed = tables.manifest_changes(previous.manifest if previous else None, revision.manifest)
        frame = tables.manifest_frame(revision, versions, state=self.state.value, width=self.width, hash_width=self.hash_width)
        frame.insert(0, "change", [changed.get(e, "") for e in frame["entry_id"]])
        self.frame = frame
        m = revision.manifest
        facts = (f"{len(m.active)} active · {len(m.inactive)} inactive · "
                 f"{len(changed)} changed since Revision {revision.revision - 1 if previous else '—'}")
        self.caption = f"{revision.ref} · {facts}" + ("" if self.state.value == "all" else f" · showing {self.state.value}")
        self.title.value = f"<b>{esc(revision.ref)}</b> · {facts}"
        labels = {i: label for i, label in enumerate(frame["change"]) if label}
        shown = "entries" if self.state.value == "all" else f"{self.state.value} entries"
        self.table.value = html_table(frame, labels, empty=f"no {shown} in Revision {revision.revision}")
        self.show_done(f"Revision {revision.revision}: {len(frame)} {shown}")

    def headline(self) -> str:
        return f"ManifestInspector({self.caption})"

    def fallback_html(self) -> str:
        return f"<b>ManifestInspector</b> {esc(self.caption)}{self.table.value}{self.status.value}"
