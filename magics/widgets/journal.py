"""JournalInspector: a Runtime scope's journal, windows and cursor at a glance.

Pick a scope; see every captured Source with its position against the cursor, the
window that processed it and the Revision that window produced (or why it failed),
and the window log with failures and their reasons. "Flush" processes the next window
through the Runtime and refreshes; "Refresh" rereads (a scheduled Runtime moves on in
the background).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pandas as pd

from powercontext.runtime.inspection import binding_rows, journal_rows, window_rows

from ..display import esc, html_table
from ..tables import preview
from ._base import ServiceWidget, frame_text

__all__ = ["JournalInspector"]

#: Row background per window outcome (the row's data-label is the outcome itself).
OUTCOME_COLORS = {"committed": "#e6ffed", "no_change": "#e8f0ff", "failed": "#ffe8e8", "unavailable": "#fff5d6"}
JOURNAL_COLUMNS = ["sequence", "source_id", "position", "window", "outcome", "revision", "reason", "content"]
WINDOW_COLUMNS = ["window", "outcome", "revision", "detail", "finished_at"]


def outcome_table(frame: pd.DataFrame, caption: str, empty: str = "no rows") -> str:
    """An escaped table whose rows carry their window outcome as data-label and colour."""
    labels = {i: o for i, o in enumerate(frame["outcome"]) if o}
    html = html_table(frame, labels, caption=caption, wrap=("reason", "content", "detail"), empty=empty)
    for outcome, color in OUTCOME_COLORS.items():
        html = html.replace(f'data-label="{outcome}" style="background:"', f'data-label="{outcome}" style="background:{color}"')
    return html


class JournalInspector(ServiceWidget):
    """``JournalInspector(runtime, scope=None)`` (``%pcmem runtime inspect``).

    State: ``scope`` (Dropdown of the Runtime's scopes), ``summary`` (HTML: Memory,
    head, cursor / high watermark), ``journal`` and ``windows`` (HTML tables),
    ``journal_frame`` and ``windows_frame`` (the DataFrames shown), ``flush_button``,
    ``refresh_button``, ``last_flush`` (the last MemoryFlushResult), ``status_line``
    (what the last Flush or Refresh did, or why it could not)."""

    def __init__(self, runtime: Any, scope: str | None = None, runner=None, *, width: int = 60,
                 reopen: str | None = None) -> None:
        super().__init__(runtime.memory_service, runner, reopen=reopen)
        self.runtime, self.width = runtime, width
        self.last_flush = None
        self.scope = widgets.Dropdown(description="Scope", layout=widgets.Layout(width="95%"))
        self.summary = widgets.HTML()
        self.journal = widgets.HTML()
        self.windows = widgets.HTML()
        self.journal_frame = pd.DataFrame(columns=JOURNAL_COLUMNS)
        self.windows_frame = pd.DataFrame(columns=WINDOW_COLUMNS)
        # width auto: the default button width cut the label to "Flush next win…"
        self.flush_button = widgets.Button(description="Flush next window", icon="play",
                                           layout=widgets.Layout(width="auto"))
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh", layout=widgets.Layout(width="auto"))
        self.flush_button.on_click(self.action(self._flush))
        self.refresh_button.on_click(self.action(lambda _b: self.refresh(announce=True)))
        self._load_scopes(scope)
        self.scope.observe(self.action(lambda _c: self.refresh()), names="value")
        self.children = [
            self.scope, widgets.HBox([self.flush_button, self.refresh_button]), self.summary,
            widgets.HTML("<b>Journal</b>"), self.journal, widgets.HTML("<b>Windows</b>"), self.windows, self.status,
        ]
        self.refresh()

    def headline(self) -> str:
        scope = self.scope.value
        facts = self._progress.get(scope, {}) if scope is not None else {}
        return (f"JournalInspector({scope!r}: {len(self.journal_frame)} Sources, cursor {facts.get('cursor', 0)} of "
                f"{facts.get('high_watermark', 0)}, {len(self.windows_frame)} windows)")

    def fallback_text(self) -> str:
        # finished_at differs on every run: the text (compared by nbval) leaves it out
        windows = self.windows_frame.drop(columns=["finished_at"])
        return "\n".join([self.headline(), "journal:", frame_text(self.journal_frame),
                          "windows:", frame_text(windows)])

    def fallback_html(self) -> str:
        windows = self.windows_frame.drop(columns=["finished_at"])
        return (f"<b>JournalInspector</b> {self.summary.value}"
                f"{outcome_table(self.journal_frame, caption=f'{len(self.journal_frame)} Sources')}"
                f"{outcome_table(windows, caption=f'{len(windows)} windows, newest first')}{self.status.value}")

    def _load_scopes(self, wanted: str | None) -> None:
        rows = self.call(binding_rows(self.runtime)) or []
        self._progress = {r["scope"]: r for r in rows}
        options = sorted(self._progress)
        if wanted and wanted not in options:
            options.append(wanted)
        self.scope.options = options
        self.scope.value = wanted if wanted else (options[0] if options else None)

    def refresh(self, announce: bool = False) -> None:
        """Reread the scope's journal, windows and cursor; ``announce`` puts what was read
        in the status line (the Refresh button)."""
        scope = self.scope.value
        if scope is None:
            self.summary.value = "<i>this Runtime has no scopes yet: capture a Source first</i>"
            self.journal.value = self.windows.value = ""
            if announce:
                self.show_done("refreshed: no scopes yet")
            return
        rows = self.call(journal_rows(self.runtime, scope))
        windows = self.call(window_rows(self.runtime, scope))
        progress = self.call(binding_rows(self.runtime))
        if rows is None or windows is None or progress is None:
            return
        self._progress = {r["scope"]: r for r in progress}
        facts = self._progress.get(scope, {"memory": "", "head": 0, "cursor": 0, "high_watermark": 0, "pending": 0})
        self.journal_frame = pd.DataFrame(rows, columns=JOURNAL_COLUMNS + ["captured_at"])[JOURNAL_COLUMNS]
        self.journal_frame["content"] = [preview(c, self.width) for c in self.journal_frame["content"]]
        self.windows_frame = pd.DataFrame(windows, columns=WINDOW_COLUMNS + ["window_id", "after", "through"])[WINDOW_COLUMNS]
        self.summary.value = (
            f"<b>{esc(scope)}</b> · Memory {esc(facts['memory'] or '(not bound yet)')} · head Revision {facts['head']}"
            f" · cursor {facts['cursor']} of {facts['high_watermark']} · {facts['pending']} pending"
        )
        cursor_at = facts["cursor"]
        self.journal.value = outcome_table(
            self.journal_frame, caption=f"{len(self.journal_frame)} Sources; the cursor is after #{cursor_at}",
            empty="no Sources captured in this scope yet")
        failures = int(self.windows_frame["outcome"].isin(["failed", "unavailable"]).sum())
        self.windows.value = outcome_table(
            self.windows_frame, caption=f"{len(self.windows_frame)} windows, newest first; {failures} failed or unavailable",
            empty="no window processed yet: Flush processes the next one")
        if announce:
            self.show_done(f"refreshed: {len(self.journal_frame)} Sources, cursor {facts['cursor']} of "
                           f"{facts['high_watermark']}, {facts['pending']} pending")

    def _flush(self, _button: Any = None) -> None:
        scope = self.scope.value
        if scope is None:
            self.show_error("nothing to flush: this Runtime has no scopes yet (capture a Source first)")
            return
        result = self.call(self.runtime.memory.for_scope(scope).flush())
        if result is None:
            return  # call() put the reason in the status line
        self.last_flush = result
        self.refresh()
        if self.error is not None:
            return  # the refresh could not read the journal: its reason stays
        if result.error:
            self.show_error(f"flush {result}")
        else:
            self.show_done(f"flush {result}")
