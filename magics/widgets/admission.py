"""AdmissionInspector: watch relevance admission decide, live.

The query is retrieved ONCE per (query, mode, pool size) with ``svc.retrieve`` — the
only step of search that touches the database — and every threshold change replays
``powercontext.memory.admission`` (explain + fuse) over the cached candidates. That is
the same seam the evaluation harness uses, so what the sliders show equals
``svc.search(query, policy=…)`` with those thresholds.

Its controls are generated from ``policy_fields`` (``policy_controls``): one per field
that decides the search in view, so every field a rejection reason cites has one.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import ipywidgets as widgets
import pandas as pd

from powercontext import AdmissionPolicy, MemorySearchResult
from powercontext.memory import admission, policy_fields
from powercontext.memory.policy_fields import PolicyField

from .. import tables
from ..display import esc, html_table, result_summary
from ..refs import parse_memory, resolve_memories
from ..policy_options import resolved_mode
from . import admission_style, policy_controls
from ._base import ServiceWidget, frame_text

__all__ = ["AdmissionInspector"]

MODES = ["fts", "vector", "hybrid", "auto"]
#: Columns cut to a width in the plain-text fallback (fixed-width text cannot wrap a cell).
CLIP = {"reason": 40, "text": 48}
#: Columns whose HTML cells wrap: the reason is the "why rejected", so it is shown whole;
#: the long ids break too, so that the tables fit a 1400 px window.
WRAP = ("reason", "cell", "text", "memory", "entry_id")
#: The candidate columns of the plain-text fallback (the HTML tables show them all).
TEXT_COLUMNS = ["channel", "channel_rank", "admitted", "reason", "probability", "hit_rank", "entry_id", "text"]


class AdmissionInspector(ServiceWidget):
    """``AdmissionInspector(svc, memories, query="")``: searches the Memories' current
    heads (all Memories if ``memories`` is empty).

    State: ``query`` (Text), ``mode`` (ToggleButtons), ``limit`` (slider), one control per
    tunable policy field in ``controls`` (also an attribute of its name: ``fts_min_terms``,
    ``hybrid_fts_min_terms``, ``vector_min_centred`` …), shown where the field decides
    the search in view (``shown``: their names); ``hits``, ``admitted``,
    ``rejected`` (DataFrames) and ``hits_table``, ``admitted_table``,
    ``rejected_table`` (HTML: the reason and text wrap, other cells stay on one line);
    ``result`` (the MemorySearchResult replayed); ``retrievals`` counts database round
    trips; ``status_line`` says what the last action did (or why it could not).
    Displayed without a live kernel it shows the summary and these tables."""

    def __init__(self, svc: Any, memories: Sequence[Any] = (), runner=None, *, query: str = "",
                 mode: str = "auto", limit: int = 8, width: int = 80, reopen: str | None = None,
                 fields: Sequence[PolicyField] | None = None) -> None:
        super().__init__(svc, runner, reopen=reopen)
        self.width = width
        self.memory_ids = [parse_memory(m).text for m in (memories or ())]
        base: AdmissionPolicy = svc.policy
        self.base_policy = base
        self.fields = tuple(policy_fields.FIELDS if fields is None else fields)
        self.used_mode = resolved_mode(mode, svc)  # until a retrieval says which mode ran
        self.retrievals = 0
        self._fresh = False  # the last _retrieve went to the database
        self._cache: dict[tuple, Any] = {}
        self.result: MemorySearchResult | None = None
        self.hits = self.admitted = self.rejected = pd.DataFrame()

        self.query = widgets.Text(value=query, placeholder="query…", description="Query", continuous_update=False)
        self.mode = widgets.ToggleButtons(options=MODES, value=mode, description="Mode")
        self.limit = widgets.IntSlider(value=limit, min=1, max=50, description="limit", continuous_update=False)
        self.controls: dict[str, widgets.Widget] = {
            f.name: policy_controls.make_control(f, getattr(base, f.name)) for f in self.fields if f.tunable}
        for name, control in self.controls.items():
            setattr(self, name, control)
        self.shown: list[str] = []
        self.control_box = widgets.Box(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap"))
        self.retrieve_button = widgets.Button(description="Retrieve again", icon="refresh",
                                              tooltip="forget the cached candidates (e.g. after a write)")
        self.retrieve_button.on_click(self.action(lambda _: self.retrieve_again()))
        self.summary_line = ""
        self.summary = widgets.HTML()
        self.hits_table, self.admitted_table, self.rejected_table = widgets.HTML(), widgets.HTML(), widgets.HTML()
        for control in (self.query, self.mode, self.limit):
            control.observe(self.action(self._refresh), names="value")
        for control in self.controls.values():
            control.observe(self.action(self._replay), names="value")
        # the tables fit the window (issue 45): admission_style's hidden stylesheet
        self.add_class(admission_style.ROOT)
        self.hits_table.add_class(admission_style.HITS)
        for table in (self.admitted_table, self.rejected_table):
            table.add_class(admission_style.CANDIDATES)
        self.children = [
            widgets.HTML(admission_style.stylesheet(WRAP), layout=widgets.Layout(display="none")),
            widgets.HBox([self.query, self.retrieve_button]), self.mode, self.limit, self.control_box,
            self.status, self.summary, self.hits_table, self.admitted_table, self.rejected_table,
        ]
        self._show_controls(self.used_mode)
        self._refresh()

    # ------------------------------------------------------------------ state

    def _show_controls(self, mode: str) -> None:
        """Show the controls of the fields that decide a ``mode`` search, hide the others.
        Judged under the switches' current values (``gate_signal``: which pool the gate
        reads), so switching one shows or hides the controls that depend on it."""
        self.used_mode = mode
        judged = policy_fields.switched(self.base_policy, {
            name: policy_controls.control_value(field, self.controls[name])
            for name, field in policy_fields.by_name(self.fields).items() if name in self.controls})
        self.shown = [f.name for f in policy_controls.applicable(judged, mode, self.fields)]
        for name, control in self.controls.items():
            display = None if name in self.shown else "none"
            if control.layout.display != display:  # an unchanged layout sends nothing to the browser
                control.layout.display = display

    @property
    def policy(self) -> AdmissionPolicy:
        """The base policy with the shown controls' values (hidden ones keep the base's)."""
        by_name = policy_fields.by_name(self.fields)
        return dataclasses.replace(self.base_policy, **{
            name: policy_controls.control_value(by_name[name], self.controls[name]) for name in self.shown})

    def _retrieve(self):
        """The cached retrieval for the current query/mode/pool, fetching it once."""
        pool = self.policy.pool_size(self.limit.value)
        key = (self.query.value.strip(), self.mode.value, pool)
        if key not in self._cache:
            async def fetch():
                heads = await resolve_memories(self.svc, self.memory_ids)
                return await self.svc.retrieve(key[0], heads, self.limit.value, key[1], self.policy)

            fetched = self.call(fetch())
            if fetched is None:
                return None
            self.retrievals += 1
            self._cache[key] = fetched
            self._fresh = True
        return self._cache[key]

    def retrieve_again(self) -> None:
        """Drop the cached candidates and retrieve the current query afresh."""
        self._cache.clear()
        self._refresh()

    def _refresh(self, _change: Any = None) -> None:
        if not self.query.value.strip():
            self._clear("type a query")
            self.show_done("")
            return
        self._replay()

    def _replay(self, _change: Any = None) -> None:
        """Admission + fusion over the cached candidates: no database round trip."""
        if not self.query.value.strip():
            return
        fetched = self._retrieve()
        if fetched is None:
            self._clear(None)
            return
        retrieval, used, fallback = fetched
        self._show_controls(used)  # the mode run, and a switch just moved, decide which controls apply
        policy = self.policy
        decisions = admission.explain(retrieval.channels, policy)
        hits = admission.fuse(retrieval.channels, policy, self.limit.value)
        self.result = MemorySearchResult(
            query=self.query.value.strip(), hits=hits, mode=used, requested_mode=self.mode.value,
            policy=policy, decisions=decisions, fallback_reason=fallback,
        )
        frame = tables.decisions_frame(decisions, hits, width=self.width)
        self.hits = tables.hits_frame(self.result, width=self.width)
        self.admitted = frame[frame["admitted"]].reset_index(drop=True)
        self.rejected = frame[~frame["admitted"]].reset_index(drop=True)
        self.summary_line = (
            f"{result_summary(self.result)} · {len(frame)} candidates · {len(self.admitted)} admitted · "
            f"{len(self.rejected)} rejected"
        )
        self.summary.value = esc(self.summary_line)
        self.hits_table.value = html_table(self.hits, caption="hits", one_line=True, wrap=WRAP,
                                           empty="no hits: nothing was admitted")
        self.admitted_table.value = html_table(self.admitted, {i: "admitted" for i in range(len(self.admitted))},
                                               caption="admitted candidates", one_line=True, wrap=WRAP,
                                               empty="no candidate was admitted")
        self.rejected_table.value = html_table(self.rejected, {i: "rejected" for i in range(len(self.rejected))},
                                               caption="rejected candidates", one_line=True, wrap=WRAP,
                                               empty="no candidate was rejected")
        n = len(frame)
        if self._fresh:
            self.show_done(f"retrieved {n} candidate{'' if n == 1 else 's'} from the database "
                           f"(round trip {self.retrievals}); admission replayed at {self._policy_text(policy, used)}")
        else:
            self.show_done(f"replayed admission over {n} cached candidate{'' if n == 1 else 's'} at "
                           f"{self._policy_text(policy, used)} (no database round trip)")
        self._fresh = False

    def _policy_text(self, policy: AdmissionPolicy, mode: str) -> str:
        return policy_controls.policy_text(policy, mode, self.fields)

    def _clear(self, note: str | None) -> None:
        self.result = None
        self.hits = self.admitted = self.rejected = pd.DataFrame()
        self.summary_line = note or self.error or ""
        self.summary.value = f"<i>{esc(note)}</i>" if note else ""
        self.hits_table.value = self.admitted_table.value = self.rejected_table.value = ""

    # ------------------------------------------------------------------ static display

    def headline(self) -> str:
        return f"AdmissionInspector({self.summary_line})"

    def fallback_text(self) -> str:
        def candidates(frame: pd.DataFrame) -> pd.DataFrame:
            if frame.empty:
                return frame
            shown = frame[TEXT_COLUMNS].copy()
            for column, width in CLIP.items():
                shown[column] = [tables.preview(v, width) for v in shown[column]]
            return shown

        return "\n".join([
            self.headline(), "hits:", frame_text(self.hits),
            "admitted candidates:", frame_text(candidates(self.admitted)),
            "rejected candidates:", frame_text(candidates(self.rejected)),
        ])

    def fallback_html(self) -> str:
        return (f"<b>AdmissionInspector</b> {self.summary.value}{self.status.value}"
                f"{self.hits_table.value}{self.admitted_table.value}{self.rejected_table.value}")
